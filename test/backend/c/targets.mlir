// RUN: usmp-opt %s -p usmp -t c | filecheck %s
// RUN: %if gcc %{ rm -rf %t && mkdir -p %t && usmp-opt %s -p usmp -t c-header -o %t/usmp_default.h && usmp-opt %s -p usmp -t c -o %t/model.c && gcc -std=c11 -Wall -Wextra -Werror -c %t/model.c -o %t/model.o %}
// Functions for another target (`usmp.target`) and bodiless declarations are only declared:
// the application links them under their exact names. Their buffers are still planned.

func.func @accel_gemm(%a: memref<8xf32>, %o: memref<8xf32>) attributes {usmp.target = "accel"} {
  %scratch = usmp.allocate : memref<8xf32>
  "memref.copy"(%a, %scratch) : (memref<8xf32>, memref<8xf32>) -> ()
  "memref.copy"(%scratch, %o) : (memref<8xf32>, memref<8xf32>) -> ()
  func.return
}
func.func private @vendor_relu(memref<8xf32>, memref<8xf32>)
func.func @main(%x: memref<8xf32>, %y: memref<8xf32>) {
  %t = usmp.allocate : memref<8xf32>
  func.call @accel_gemm(%x, %t) : (memref<8xf32>, memref<8xf32>) -> ()
  func.call @vendor_relu(%t, %y) : (memref<8xf32>, memref<8xf32>) -> ()
  func.return
}

// CHECK:      /* @accel_gemm runs on target 'accel': the application provides it. */
// CHECK-NEXT: void accel_gemm(const float* a, float* o, uint8_t* global_workspace);
// CHECK-NEXT: /* @vendor_relu is declared only: the application provides it. */
// CHECK-NEXT: void vendor_relu(float*, float*);
// CHECK-NOT:  accel_gemm(const float* a, float* o, uint8_t* global_workspace) {
// CHECK-LABEL: int32_t usmp_default_run(
// CHECK:        accel_gemm(x, t, global_workspace);
// CHECK-NEXT:   vendor_relu(t, y);
