// RUN: usmp-opt %s --split-input-file -t c | filecheck %s
// Cheap loops (backend/c/loops.py): an accumulator element the loop loads and stores stays in
// a local, an invariant load is made once, small nests are unrolled; only where no other
// access in the loop may touch the element (from where every memref points in its pool).

pool.workspace @ws {internal, size_bytes = 64 : i64}
func.func @dot(%x: memref<16xi8>, %acc: memref<4xi32>, %scale: memref<1xi32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c4 = arith.constant 4 : index
  %c16 = arith.constant 16 : index
  scf.for %o = %c0 to %c4 step %c1 {
    scf.for %k = %c0 to %c16 step %c1 {
      %v = memref.load %x[%k] : memref<16xi8>
      %s = memref.load %scale[%c0] : memref<1xi32>
      %a = memref.load %acc[%o] : memref<4xi32>
      %e = arith.extsi %v : i8 to i32
      %m = arith.muli %e, %s : i32
      %n = arith.addi %a, %m : i32
      memref.store %n, %acc[%o] : memref<4xi32>
    }
  }
  func.return
}
func.func @main(%input: memref<16xi8>, %output: memref<4xi32>) {
  %ws = pool.base @ws : memref<64xi8>
  %c0 = arith.constant 0 : index
  %c16 = arith.constant 16 : index
  %c32 = arith.constant 32 : index
  %acc = memref.view %ws[%c0][] {usmp.buffer = "acc"} : memref<64xi8> to memref<4xi32>
  %scale = memref.view %ws[%c16][] {usmp.buffer = "scale"} : memref<64xi8> to memref<1xi32>
  func.call @dot(%input, %acc, %scale) : (memref<16xi8>, memref<4xi32>, memref<1xi32>) -> ()
  "memref.copy"(%acc, %output) : (memref<4xi32>, memref<4xi32>) -> ()
  func.return
}

// CHECK-LABEL: static void dot({{.*}}) {
// CHECK-NEXT:    int32_t s_invariant = scale[0];
// CHECK-NEXT:    for (int64_t o = 0; o < 4; o += 1) {
// CHECK-NEXT:      int32_t acc_acc = acc[o];
// CHECK-NEXT:  #pragma GCC unroll 16
// CHECK-NEXT:      for (int64_t k = 0; k < 16; k += 1) {
// CHECK-NEXT:        int8_t v = x[k];
// CHECK-NEXT:        int32_t a = acc_acc;
// CHECK:             acc_acc = n;
// CHECK-NEXT:      }
// CHECK-NOT:       acc[o] = n;
// CHECK-NEXT:      acc[o] = acc_acc;
// CHECK-NEXT:    }

// -----

// The same loop where the scale may be one of the accumulators (the views overlap in the
// pool): every access stays in memory.
pool.workspace @ws {internal, size_bytes = 64 : i64}
func.func @dot(%x: memref<16xi8>, %acc: memref<4xi32>, %scale: memref<1xi32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c4 = arith.constant 4 : index
  %c16 = arith.constant 16 : index
  scf.for %o = %c0 to %c4 step %c1 {
    scf.for %k = %c0 to %c16 step %c1 {
      %v = memref.load %x[%k] : memref<16xi8>
      %s = memref.load %scale[%c0] : memref<1xi32>
      %a = memref.load %acc[%o] : memref<4xi32>
      %e = arith.extsi %v : i8 to i32
      %m = arith.muli %e, %s : i32
      %n = arith.addi %a, %m : i32
      memref.store %n, %acc[%o] : memref<4xi32>
    }
  }
  func.return
}
func.func @main(%input: memref<16xi8>, %output: memref<4xi32>) {
  %ws = pool.base @ws : memref<64xi8>
  %c0 = arith.constant 0 : index
  %c4 = arith.constant 4 : index
  %acc = memref.view %ws[%c0][] {usmp.buffer = "acc"} : memref<64xi8> to memref<4xi32>
  %scale = memref.view %ws[%c4][] {usmp.buffer = "scale"} : memref<64xi8> to memref<1xi32>
  func.call @dot(%input, %acc, %scale) : (memref<16xi8>, memref<4xi32>, memref<1xi32>) -> ()
  "memref.copy"(%acc, %output) : (memref<4xi32>, memref<4xi32>) -> ()
  func.return
}

// CHECK-LABEL: static void dot({{.*}}) {
// CHECK-NEXT:    for (int64_t o = 0; o < 4; o += 1) {
// CHECK-NEXT:  #pragma GCC unroll 16
// CHECK-NEXT:      for (int64_t k = 0; k < 16; k += 1) {
// CHECK-NEXT:        int8_t v = x[k];
// CHECK-NEXT:        int32_t s = scale[0];
// CHECK-NEXT:        int32_t a = acc[o];
// CHECK:             acc[o] = n;
// CHECK-NEXT:      }
// CHECK-NEXT:    }

// -----

// An int8 dot product into a register accumulator, contiguous and a multiple of 4 long, also
// gets a Cortex-M DSP variant (two SMLADs per four elements; the firmware suite compares it
// with the x86 build, which compiles the portable loop).
pool.workspace @ws {internal, size_bytes = 64 : i64}
func.func @dot(%x: memref<16xi8>, %w: memref<16xi8>, %acc: memref<1xi32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c16 = arith.constant 16 : index
  scf.for %k = %c0 to %c16 step %c1 {
    %xv = memref.load %x[%k] : memref<16xi8>
    %wv = memref.load %w[%k] : memref<16xi8>
    %a = memref.load %acc[%c0] : memref<1xi32>
    %xe = arith.extsi %xv : i8 to i32
    %we = arith.extsi %wv : i8 to i32
    %m = arith.muli %xe, %we : i32
    %n = arith.addi %a, %m : i32
    memref.store %n, %acc[%c0] : memref<1xi32>
  }
  func.return
}
func.func @main(%input: memref<16xi8>, %weights: memref<16xi8>, %output: memref<1xi32>) {
  %ws = pool.base @ws : memref<64xi8>
  %c0 = arith.constant 0 : index
  %acc = memref.view %ws[%c0][] {usmp.buffer = "acc"} : memref<64xi8> to memref<1xi32>
  func.call @dot(%input, %weights, %acc) : (memref<16xi8>, memref<16xi8>, memref<1xi32>) -> ()
  "memref.copy"(%acc, %output) : (memref<1xi32>, memref<1xi32>) -> ()
  func.return
}

// CHECK:       #include <string.h>
// CHECK-NEXT:  #if defined(__ARM_FEATURE_DSP)
// CHECK-NEXT:  #include <arm_acle.h>
// CHECK-NEXT:  /* SXTB16 of a word rotated right by 8 bits (its bytes 1 and 3), one instruction. */
// CHECK-NEXT:  static inline int32_t usmp_sxtb16_ror8(int32_t word) {
// CHECK-NEXT:    int32_t pair;
// CHECK-NEXT:    __asm__("sxtb16 %0, %1, ror #8" : "=r"(pair) : "r"(word));
// CHECK-NEXT:    return pair;
// CHECK-NEXT:  }
// CHECK-NEXT:  #endif
// CHECK-LABEL: static void dot({{.*}}) {
// CHECK-NEXT:    int32_t acc_acc = acc[0];
// CHECK-NEXT:  #if defined(__ARM_FEATURE_DSP)
// CHECK-NEXT:  #pragma GCC unroll 4
// CHECK-NEXT:    for (int64_t k = 0; k < 16; k += 4) {
// CHECK-NEXT:      int32_t x4;
// CHECK-NEXT:      memcpy(&x4, x + k, 4);
// CHECK-NEXT:      int32_t w4;
// CHECK-NEXT:      memcpy(&w4, w + k, 4);
// CHECK-NEXT:      acc_acc = __smlad(__sxtb16(x4), __sxtb16(w4), acc_acc);
// CHECK-NEXT:      acc_acc = __smlad(usmp_sxtb16_ror8(x4), usmp_sxtb16_ror8(w4), acc_acc);
// CHECK-NEXT:    }
// CHECK-NEXT:  #else
// CHECK-NEXT:  #pragma GCC unroll 16
// CHECK-NEXT:    for (int64_t k = 0; k < 16; k += 1) {
// CHECK:         }
// CHECK-NEXT:  #endif
// CHECK-NEXT:    acc[0] = acc_acc;
