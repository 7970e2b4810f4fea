// RUN: usmp-opt %s -t c | filecheck %s
// RUN: %if gcc %{ rm -rf %t && mkdir -p %t && usmp-opt %s -t c-header -o %t/usmp_default.h && usmp-opt %s -t c -o %t/model.c && gcc -std=c11 -Wall -Wextra -Werror -c %t/model.c -o %t/model.o %}
// Nothing unused reaches the C (gcc -Wall -Werror rejects unused locals and statics): unused
// buffers keep only their comment, unused pools and globals are not defined.

pool.workspace @sram {size_bytes = 64 : i64}
pool.workspace @dram {internal, size_bytes = 64 : i64}
"memref.global"() <{sym_name = "unused_table", sym_visibility = "private", type = memref<2xi32>, initial_value = dense<[1, 2]> : tensor<2xi32>, constant}> : () -> ()
func.func @main(%x: memref<4xf32>, %y: memref<4xf32>) {
  %sram = pool.base @sram : memref<64xi8>
  %dram = pool.base @dram : memref<64xi8>
  %c0 = arith.constant 0 : index
  %a = memref.view %sram[%c0][] {usmp.buffer = "a"} : memref<64xi8> to memref<4xf32>
  %b = memref.view %dram[%c0][] {usmp.buffer = "b"} : memref<64xi8> to memref<4xf32>
  %g = memref.get_global @unused_table : memref<2xi32>
  "memref.copy"(%x, %y) : (memref<4xf32>, memref<4xf32>) -> ()
  func.return
}

// CHECK-NOT:   unused_table
// CHECK-NOT:   dram_pool
// CHECK-LABEL: int32_t usmp_default_run(
// CHECK-NEXT:    const float* x = (const float*)inputs->x;
// CHECK-NEXT:    float* y = (float*)outputs->y;
// CHECK-NEXT:    (void)workspace_pools;
// CHECK-NEXT:    // buffer a: pool sram, offset 0, 16 bytes (unused)
// CHECK-NEXT:    // buffer b: pool dram, offset 0, 16 bytes (unused)
// CHECK-NEXT:    memmove(y, x, 4 * sizeof(float));
// CHECK-NEXT:    return 0;
