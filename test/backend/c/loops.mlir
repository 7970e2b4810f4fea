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
// CHECK-NEXT:      int32_t w4;
// CHECK-NEXT:      memcpy(&w4, w + k, 4);
// CHECK-NEXT:      int32_t w4_even = __sxtb16(w4);
// CHECK-NEXT:      int32_t w4_odd = usmp_sxtb16_ror8(w4);
// CHECK-NEXT:      int32_t x4;
// CHECK-NEXT:      memcpy(&x4, x + k, 4);
// CHECK-NEXT:      int32_t x4_even = __sxtb16(x4);
// CHECK-NEXT:      int32_t x4_odd = usmp_sxtb16_ror8(x4);
// CHECK-NEXT:      acc_acc = __smlad(x4_even, w4_even, acc_acc);
// CHECK-NEXT:      acc_acc = __smlad(x4_odd, w4_odd, acc_acc);
// CHECK-NEXT:    }
// CHECK-NEXT:  #else
// CHECK-NEXT:  #pragma GCC unroll 16
// CHECK-NEXT:    for (int64_t k = 0; k < 16; k += 1) {
// CHECK:         }
// CHECK-NEXT:  #endif
// CHECK-NEXT:    acc[0] = acc_acc;

// -----

// A 2 x 2 block of int8 dot products in carried accumulators (two input rows x two weight
// rows, as an int8 convolution computes two positions x two output channels): each word is
// loaded and widened once, the weights first, then each input row with its two terms. An input
// plus a constant (a zero point, the third function) is widened with the constant added
// (SXTAB16); a length that is no multiple of 4 (the fourth) leaves its last elements to the
// portable body, whose loop header the DSP variant shares. Not a dot product when the body does
// anything else (the fifth function adds an offset that is no constant).
pool.workspace @ws {internal, size_bytes = 64 : i64}
func.func @block(%x: memref<2x8xi8>, %w: memref<2x8xi8>, %out: memref<4xi32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c2 = arith.constant 2 : index
  %c3 = arith.constant 3 : index
  %c8 = arith.constant 8 : index
  %zero = arith.constant 0 : i32
  %r:4 = scf.for %k = %c0 to %c8 step %c1
      iter_args(%a0 = %zero, %a1 = %zero, %a2 = %zero, %a3 = %zero) -> (i32, i32, i32, i32) {
    %x0 = memref.load %x[%c0, %k] : memref<2x8xi8>
    %x1 = memref.load %x[%c1, %k] : memref<2x8xi8>
    %w0 = memref.load %w[%c0, %k] : memref<2x8xi8>
    %w1 = memref.load %w[%c1, %k] : memref<2x8xi8>
    %x0e = arith.extsi %x0 : i8 to i32
    %x1e = arith.extsi %x1 : i8 to i32
    %w0e = arith.extsi %w0 : i8 to i32
    %w1e = arith.extsi %w1 : i8 to i32
    %m0 = arith.muli %x0e, %w0e : i32
    %m1 = arith.muli %x0e, %w1e : i32
    %m2 = arith.muli %x1e, %w0e : i32
    %m3 = arith.muli %x1e, %w1e : i32
    %n0 = arith.addi %a0, %m0 : i32
    %n1 = arith.addi %a1, %m1 : i32
    %n2 = arith.addi %a2, %m2 : i32
    %n3 = arith.addi %a3, %m3 : i32
    scf.yield %n0, %n1, %n2, %n3 : i32, i32, i32, i32
  }
  memref.store %r#0, %out[%c0] : memref<4xi32>
  memref.store %r#1, %out[%c1] : memref<4xi32>
  memref.store %r#2, %out[%c2] : memref<4xi32>
  memref.store %r#3, %out[%c3] : memref<4xi32>
  func.return
}
func.func @offset(%x: memref<8xi8>, %w: memref<8xi8>, %out: memref<1xi32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c8 = arith.constant 8 : index
  %c5 = arith.constant 5 : i32
  %zero = arith.constant 0 : i32
  %r = scf.for %k = %c0 to %c8 step %c1 iter_args(%a = %zero) -> (i32) {
    %xv = memref.load %x[%k] : memref<8xi8>
    %wv = memref.load %w[%k] : memref<8xi8>
    %xe = arith.extsi %xv : i8 to i32
    %we = arith.extsi %wv : i8 to i32
    %xo = arith.addi %xe, %c5 : i32
    %m = arith.muli %xo, %we : i32
    %n = arith.addi %a, %m : i32
    scf.yield %n : i32
  }
  memref.store %r, %out[%c0] : memref<1xi32>
  func.return
}
func.func @tail(%x: memref<6xi8>, %w: memref<6xi8>, %out: memref<1xi32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c6 = arith.constant 6 : index
  %zero = arith.constant 0 : i32
  %r = scf.for %k = %c0 to %c6 step %c1 iter_args(%a = %zero) -> (i32) {
    %xv = memref.load %x[%k] : memref<6xi8>
    %wv = memref.load %w[%k] : memref<6xi8>
    %xe = arith.extsi %xv : i8 to i32
    %we = arith.extsi %wv : i8 to i32
    %m = arith.muli %xe, %we : i32
    %n = arith.addi %a, %m : i32
    scf.yield %n : i32
  }
  memref.store %r, %out[%c0] : memref<1xi32>
  func.return
}
func.func @varying(%x: memref<8xi8>, %w: memref<8xi8>, %out: memref<1xi32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c8 = arith.constant 8 : index
  %zero = arith.constant 0 : i32
  %r = scf.for %k = %c0 to %c8 step %c1 iter_args(%a = %zero) -> (i32) {
    %xv = memref.load %x[%k] : memref<8xi8>
    %wv = memref.load %w[%k] : memref<8xi8>
    %xe = arith.extsi %xv : i8 to i32
    %we = arith.extsi %wv : i8 to i32
    %xo = arith.addi %xe, %a : i32
    %m = arith.muli %xo, %we : i32
    %n = arith.addi %a, %m : i32
    scf.yield %n : i32
  }
  memref.store %r, %out[%c0] : memref<1xi32>
  func.return
}
func.func @main(%input: memref<2x8xi8>, %weights: memref<2x8xi8>, %output: memref<4xi32>,
                %input1: memref<8xi8>, %weights1: memref<8xi8>, %output1: memref<1xi32>,
                %input2: memref<6xi8>, %weights2: memref<6xi8>, %output2: memref<1xi32>,
                %output3: memref<1xi32>) {
  func.call @block(%input, %weights, %output) : (memref<2x8xi8>, memref<2x8xi8>, memref<4xi32>) -> ()
  func.call @offset(%input1, %weights1, %output1) : (memref<8xi8>, memref<8xi8>, memref<1xi32>) -> ()
  func.call @tail(%input2, %weights2, %output2) : (memref<6xi8>, memref<6xi8>, memref<1xi32>) -> ()
  func.call @varying(%input1, %weights1, %output3) : (memref<8xi8>, memref<8xi8>, memref<1xi32>) -> ()
  func.return
}

// CHECK:       #if defined(__ARM_FEATURE_DSP)
// CHECK-NEXT:  #include <arm_acle.h>
// CHECK:       static inline int32_t usmp_sxtb16_ror8(int32_t word) {
// CHECK:       /* SXTAB16 of a word rotated right by 8 bits: its bytes 1 and 3 plus two halves. */
// CHECK-NEXT:  static inline int32_t usmp_sxtab16_ror8(int32_t halves, int32_t word) {
// CHECK-NEXT:    int32_t pair;
// CHECK-NEXT:    __asm__("sxtab16 %0, %1, %2, ror #8" : "=r"(pair) : "r"(halves), "r"(word));
// CHECK-NEXT:    return pair;
// CHECK-NEXT:  }
// CHECK-NEXT:  #endif

// CHECK-LABEL: static void block({{.*}}) {
// CHECK:       #if defined(__ARM_FEATURE_DSP)
// CHECK-NEXT:  #pragma GCC unroll 1
// CHECK-NEXT:    for (int64_t k = 0; k < 8; k += 4) {
// CHECK-NEXT:      int32_t w4;
// CHECK-NEXT:      memcpy(&w4, w + k, 4);
// CHECK-NEXT:      int32_t w4_even = __sxtb16(w4);
// CHECK-NEXT:      int32_t w4_odd = usmp_sxtb16_ror8(w4);
// CHECK-NEXT:      int32_t w4_1;
// CHECK-NEXT:      memcpy(&w4_1, w + k + 8, 4);
// CHECK-NEXT:      int32_t w4_1_even = __sxtb16(w4_1);
// CHECK-NEXT:      int32_t w4_1_odd = usmp_sxtb16_ror8(w4_1);
// CHECK-NEXT:      int32_t x4;
// CHECK-NEXT:      memcpy(&x4, x + k, 4);
// CHECK-NEXT:      int32_t x4_even = __sxtb16(x4);
// CHECK-NEXT:      int32_t x4_odd = usmp_sxtb16_ror8(x4);
// CHECK-NEXT:      [[A0:r[_0-9]*]] = __smlad(x4_even, w4_even, [[A0]]);
// CHECK-NEXT:      [[A1:r[_0-9]*]] = __smlad(x4_even, w4_1_even, [[A1]]);
// CHECK-NEXT:      [[A0]] = __smlad(x4_odd, w4_odd, [[A0]]);
// CHECK-NEXT:      [[A1]] = __smlad(x4_odd, w4_1_odd, [[A1]]);
// CHECK-NEXT:      int32_t x4_1;
// CHECK-NEXT:      memcpy(&x4_1, x + k + 8, 4);
// CHECK-NEXT:      int32_t x4_1_even = __sxtb16(x4_1);
// CHECK-NEXT:      int32_t x4_1_odd = usmp_sxtb16_ror8(x4_1);
// CHECK-NEXT:      [[A2:r[_0-9]*]] = __smlad(x4_1_even, w4_even, [[A2]]);
// CHECK-NEXT:      [[A3:r[_0-9]*]] = __smlad(x4_1_even, w4_1_even, [[A3]]);
// CHECK-NEXT:      [[A2]] = __smlad(x4_1_odd, w4_odd, [[A2]]);
// CHECK-NEXT:      [[A3]] = __smlad(x4_1_odd, w4_1_odd, [[A3]]);
// CHECK-NEXT:    }
// CHECK-NEXT:  #else
// CHECK-LABEL: static void offset({{.*}}) {
// CHECK:       #pragma GCC unroll 4
// CHECK-NEXT:    for (int64_t k = 0; k < 8; k += 4) {
// CHECK:           memcpy(&x4, x + k, 4);
// CHECK-NEXT:      int32_t x4_even = __sxtab16(327685, x4);
// CHECK-NEXT:      int32_t x4_odd = usmp_sxtab16_ror8(327685, x4);
// CHECK-NEXT:      [[A:[a-z_0-9]+]] = __smlad(x4_even, w4_even, [[A]]);
// CHECK-NEXT:      [[A]] = __smlad(x4_odd, w4_odd, [[A]]);
// CHECK-NEXT:    }
// CHECK-NEXT:  #else
// CHECK-LABEL: static void tail({{.*}}) {
// CHECK:       #if defined(__ARM_FEATURE_DSP)
// CHECK-NEXT:  #pragma GCC unroll 4
// CHECK-NEXT:    for (int64_t k = 0; k < 4; k += 4) {
// CHECK:           __smlad
// CHECK:         }
// CHECK-NEXT:  #pragma GCC unroll 2
// CHECK-NEXT:    for (int64_t k = 4; k < 6; k += 1) {
// CHECK-NEXT:  #else
// CHECK-NEXT:  #pragma GCC unroll 6
// CHECK-NEXT:    for (int64_t k = 0; k < 6; k += 1) {
// CHECK-NEXT:  #endif
// CHECK-NEXT:      int8_t xv = x[k];
// CHECK:         }
// CHECK-NEXT:    out[0] = r;
// CHECK-LABEL: static void varying({{.*}}) {
// CHECK-NOT:   __smlad
