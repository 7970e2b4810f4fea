// RUN: usmp-opt %s -p usmp -t c | filecheck %s
// RUN: %if gcc %{ rm -rf %t && mkdir -p %t && usmp-opt %s -p usmp -t c-header -o %t/usmp_default.h && usmp-opt %s -p usmp -t c -o %t/model.c && gcc -std=c11 -Wall -Wextra -Werror -c %t/model.c -o %t/model.o %}
// Operator functions take only the pools they use (SPEC §7): a pool reached only through an
// unused buffer, or only passed on to callees that do not take it, is no C parameter (gcc
// -Wextra -Werror rejects unused parameters), and a pool nothing uses is not defined.

pool.workspace @sram {size_bytes = 64 : i64}
pool.workspace @dram {size_bytes = 64 : i64}
func.func @unused_const(%x: memref<4xi8>, %y: memref<4xi8>) {
  %w = usmp.allocate_const dense<[1, 2, 3, 4]> : memref<4xi8>
  "memref.copy"(%x, %y) : (memref<4xi8>, memref<4xi8>) -> ()
  func.return
}
func.func @unused_workspace(%x: memref<4xi8>, %y: memref<4xi8>) {
  %t = usmp.allocate {pools = [@sram]} : memref<4xi8>
  %u = usmp.allocate {pools = [@dram]} : memref<4xi8>
  "memref.copy"(%x, %t) : (memref<4xi8>, memref<4xi8>) -> ()
  "memref.copy"(%t, %y) : (memref<4xi8>, memref<4xi8>) -> ()
  func.return
}
func.func @through(%x: memref<4xi8>, %y: memref<4xi8>) {
  func.call @unused_const(%x, %y) : (memref<4xi8>, memref<4xi8>) -> ()
  func.call @unused_workspace(%x, %y) : (memref<4xi8>, memref<4xi8>) -> ()
  func.return
}
func.func @main(%in: memref<4xi8>, %out: memref<4xi8>) {
  %tmp = usmp.allocate {pools = [@sram]} : memref<4xi8>
  func.call @through(%in, %tmp) : (memref<4xi8>, memref<4xi8>) -> ()
  "memref.copy"(%tmp, %out) : (memref<4xi8>, memref<4xi8>) -> ()
  func.return
}

// The constant pool only holds the unused buffer 'w': it is not defined at all.
// CHECK-NOT:   global_constant_pool
// CHECK-LABEL: static void unused_const(const int8_t* x, int8_t* y);
// CHECK-NEXT:  static void unused_workspace(const int8_t* x, int8_t* y, uint8_t* sram);
// CHECK-NEXT:  static void through(const int8_t* x, int8_t* y, uint8_t* sram);
// CHECK-EMPTY:
// CHECK-NEXT:  static void unused_const(const int8_t* x, int8_t* y) {
// CHECK-NEXT:    // buffer w: pool global_constant, offset 0, 4 bytes (unused)
// CHECK-NEXT:    memmove(y, x, 4 * sizeof(int8_t));
// CHECK-NEXT:  }
// CHECK-EMPTY:
// CHECK-NEXT:  static void unused_workspace(const int8_t* x, int8_t* y, uint8_t* sram) {
// CHECK-NEXT:    // buffer t: pool sram, offset {{[0-9]+}}, 4 bytes
// CHECK-NEXT:    int8_t* t = (int8_t*)(sram + {{[0-9]+}});
// CHECK-NEXT:    // buffer u: pool dram, offset 0, 4 bytes (unused)
// CHECK-NEXT:    memmove(t, x, 4 * sizeof(int8_t));
// CHECK-NEXT:    memmove(y, t, 4 * sizeof(int8_t));
// CHECK-NEXT:  }
// CHECK-EMPTY:
// CHECK-NEXT:  static void through(const int8_t* x, int8_t* y, uint8_t* sram) {
// CHECK-NEXT:    unused_const(x, y);
// CHECK-NEXT:    unused_workspace(x, y, sram);
// CHECK-NEXT:  }
// The external pool @dram stays in the interface, but the run function does not read it.
// CHECK-LABEL: int32_t usmp_default_run(
// CHECK-NOT:     dram
// CHECK:         uint8_t* sram = (uint8_t*)workspace_pools->sram;
// CHECK-NOT:     dram
// CHECK:         through(in, tmp, sram);
// CHECK-NOT:     dram
// CHECK:         return 0;
