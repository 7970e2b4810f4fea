// RUN: usmp-opt %s --split-input-file -t c | filecheck %s
// SPEC §11: a pool's `section` places its C array; pool arrays are aligned for the widest
// element viewed in them, typed views go through `void*` (clean under -Wcast-align=strict);
// <math.h> only when a math function (or NAN/INFINITY) is used.

pool.workspace @dtcm {internal, alignment = 1 : i64, section = ".dtcm", size_bytes = 16 : i64}
pool.constant @weights {internal, section = ".rodata.weights", size_bytes = 4 : i64, data = dense<[1, 0, 0, 0]> : tensor<4xi8>}
func.func @main(%x: memref<2xf64>, %y: memref<2xi32>) {
  %dtcm = pool.base @dtcm : memref<16xi8>
  %weights = pool.base @weights : memref<4xi8>
  %c0 = arith.constant 0 : index
  %t = memref.view %dtcm[%c0][] {usmp.buffer = "t"} : memref<16xi8> to memref<2xf64>
  %w = memref.view %weights[%c0][] {usmp.buffer = "w"} : memref<4xi8> to memref<1xi32>
  %a = memref.load %x[%c0] : memref<2xf64>
  memref.store %a, %t[%c0] : memref<2xf64>
  %b = memref.load %w[%c0] : memref<1xi32>
  memref.store %b, %y[%c0] : memref<2xi32>
  func.return
}

// CHECK-NOT:  #include <math.h>
// CHECK:      static _Alignas(8) uint8_t dtcm_pool[16] __attribute__((section(".dtcm")));
// CHECK:      static const _Alignas(16) uint8_t weights_pool[4] __attribute__((section(".rodata.weights"))) = {
// CHECK:      double* t = (double*)(void*)dtcm;
// CHECK:      const int32_t* w = (const int32_t*)(const void*)weights;

// -----

func.func @main(%x: memref<2xf32>, %y: memref<2xf32>) {
  %c0 = arith.constant 0 : index
  %a = memref.load %x[%c0] : memref<2xf32>
  %e = math.exp %a : f32
  memref.store %e, %y[%c0] : memref<2xf32>
  func.return
}

// CHECK:      #include <math.h>
// CHECK:      float e = expf(a);
