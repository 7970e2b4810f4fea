// RUN: usmp-opt %s -p usmp -t c | filecheck %s
// RUN: usmp-opt %s -p usmp -t c-header | filecheck %s --check-prefix=HEADER
// RUN: %if gcc %{ rm -rf %t && mkdir -p %t && usmp-opt %s -p usmp -t c-header -o %t/usmp_default.h && usmp-opt %s -p usmp -t c -o %t/model.c && gcc -std=c11 -Wall -Wextra -Werror -c %t/model.c -o %t/model.o %}
// Functions the entry never calls are not part of the model: usmp does not plan their
// allocations and the C backend neither prints them (they would be unused static functions,
// which gcc -Wall -Werror rejects) nor asks for usmp to be run on them.
// RUN: not usmp-opt %s -t c 2>&1 | filecheck %s --check-prefix=REACHABLE
// RUN: not usmp-opt %s -t c-header 2>&1 | filecheck %s --check-prefix=REACHABLE
// Allocations the entry reaches still need the usmp pass.

func.func @unused(%x: memref<4xi8>) {
  %w = usmp.allocate : memref<4xi8>
  "memref.copy"(%x, %w) : (memref<4xi8>, memref<4xi8>) -> ()
  func.call @unused_callee(%w) : (memref<4xi8>) -> ()
  func.return
}
func.func @unused_callee(%x: memref<4xi8>) {
  %c = usmp.allocate_const dense<[1, 2, 3, 4]> : memref<4xi8>
  "memref.copy"(%c, %x) : (memref<4xi8>, memref<4xi8>) -> ()
  func.return
}
func.func @op(%x: memref<4xi8>, %y: memref<4xi8>) {
  %t = usmp.allocate : memref<4xi8>
  "memref.copy"(%x, %t) : (memref<4xi8>, memref<4xi8>) -> ()
  "memref.copy"(%t, %y) : (memref<4xi8>, memref<4xi8>) -> ()
  func.return
}
func.func @main(%in: memref<4xi8>, %out: memref<4xi8>) {
  func.call @op(%in, %out) : (memref<4xi8>, memref<4xi8>) -> ()
  func.return
}

// CHECK-NOT:   unused
// CHECK:       static _Alignas({{[0-9]+}}) uint8_t global_workspace_pool[4];
// CHECK-NOT:   unused
// CHECK:       static void op(const int8_t* x, int8_t* y, uint8_t* global_workspace) {
// CHECK-NOT:   unused
// CHECK:       int32_t usmp_default_run(
// CHECK-NOT:   unused

// HEADER:      struct usmp_default_inputs {
// HEADER-NEXT:   void* in;
// HEADER:      struct usmp_default_outputs {
// HEADER-NEXT:   void* out;

// REACHABLE: C backend: unplanned allocation 'usmp.allocate' in function @op; run the `usmp` pass first (usmp-opt -p usmp -t c)
