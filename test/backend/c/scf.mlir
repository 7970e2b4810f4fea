// RUN: usmp-opt %s -t c | filecheck %s
// RUN: %if gcc %{ rm -rf %t && mkdir -p %t && usmp-opt %s -t c-header -o %t/usmp_default.h && usmp-opt %s -t c -o %t/model.c && gcc -std=c11 -Wall -Wextra -Werror -c %t/model.c -o %t/model.o %}
// Structured control flow: loop-carried values are C variables, scf.yield assigns them.

func.func @fib(%n: index) -> i64 {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %zero = arith.constant 0 : i64
  %one = arith.constant 1 : i64
  %a, %b = scf.for %i = %c0 to %n step %c1 iter_args(%x = %zero, %y = %one) -> (i64, i64) {
    %s = arith.addi %x, %y : i64
    scf.yield %y, %s : i64, i64
  }
  func.return %a : i64
}

// CHECK-LABEL: static int64_t fib(int64_t n) {
// CHECK-NEXT:    int64_t a = 0;
// CHECK-NEXT:    int64_t b = 1;
// CHECK-NEXT:    for (int64_t i = 0; i < n; i += 1) {
// CHECK-NEXT:      int64_t s = (int64_t)((uint64_t)a + (uint64_t)b);
// CHECK-NEXT:      int64_t a_next = b;
// CHECK-NEXT:      int64_t b_next = s;
// CHECK-NEXT:      a = a_next;
// CHECK-NEXT:      b = b_next;
// CHECK-NEXT:    }
// CHECK-NEXT:    return a;
// CHECK-NEXT:  }

func.func @swap(%n: index) -> i32 {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %p = arith.constant 3 : i32
  %q = arith.constant 5 : i32
  %u, %v = scf.for %i = %c0 to %n step %c1 iter_args(%x = %p, %y = %q) -> (i32, i32) {
    scf.yield %y, %x : i32, i32
  }
  %d = arith.subi %u, %v : i32
  func.return %d : i32
}

// CHECK-LABEL: static int32_t swap(int64_t n) {
// CHECK:         for (int64_t i = 0; i < n; i += 1) {
// CHECK-NEXT:      int32_t u_next = v;
// CHECK-NEXT:      int32_t v_next = u;
// CHECK-NEXT:      u = u_next;
// CHECK-NEXT:      v = v_next;
// CHECK-NEXT:    }

func.func @branch(%c: i1, %x: f32) -> f32 {
  %r = scf.if %c -> (f32) {
    %d = arith.mulf %x, %x : f32
    scf.yield %d : f32
  } else {
    scf.yield %x : f32
  }
  func.return %r : f32
}

// CHECK-LABEL: static float branch(uint8_t c, float x) {
// CHECK-NEXT:    float r;
// CHECK-NEXT:    if (c) {
// CHECK-NEXT:      float d = x * x;
// CHECK-NEXT:      r = d;
// CHECK-NEXT:    } else {
// CHECK-NEXT:      r = x;
// CHECK-NEXT:    }
// CHECK-NEXT:    return r;

func.func @collatz(%start: i32) -> i32 {
  %one = arith.constant 1 : i32
  %zero = arith.constant 0 : i32
  %steps0 = arith.constant 0 : i32
  %res:2 = scf.while (%v = %start, %k = %steps0) : (i32, i32) -> (i32, i32) {
    %more = arith.cmpi sgt, %v, %one : i32
    scf.condition(%more) %v, %k : i32, i32
  } do {
  ^bb0(%w: i32, %s: i32):
    %half = arith.shrsi %w, %one : i32
    %s1 = arith.addi %s, %one : i32
    scf.yield %half, %s1 : i32, i32
  }
  func.return %res#1 : i32
}

// CHECK-LABEL: static int32_t collatz(int32_t start) {
// CHECK-NEXT:    int32_t v = start;
// CHECK-NEXT:    int32_t k = 0;
// CHECK-NEXT:    int32_t [[W:.*]];
// CHECK-NEXT:    int32_t [[S:.*]];
// CHECK-NEXT:    while (1) {
// CHECK-NEXT:      uint8_t more = v > 1;
// CHECK-NEXT:      [[W]] = v;
// CHECK-NEXT:      [[S]] = k;
// CHECK-NEXT:      if (!more) break;
// CHECK-NEXT:      int32_t half = (int32_t)([[W]] >> (uint32_t)1);
// CHECK-NEXT:      int32_t s1 = (int32_t)((uint32_t)[[S]] + (uint32_t)1);
// CHECK-NEXT:      v = half;
// CHECK-NEXT:      k = s1;
// CHECK-NEXT:    }
// CHECK-NEXT:    return [[S]];

func.func @sum2d(%m: memref<4x8xf32>) -> f32 {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c4 = arith.constant 4 : index
  %c8 = arith.constant 8 : index
  %zero = arith.constant 0.0 : f32
  %total = "scf.parallel"(%c0, %c0, %c4, %c8, %c1, %c1, %zero) <{operandSegmentSizes = array<i32: 2, 2, 2, 1>}> ({
  ^bb0(%i: index, %j: index):
    %v = memref.load %m[%i, %j] : memref<4x8xf32>
    "scf.reduce"(%v) ({
    ^bb1(%lhs: f32, %rhs: f32):
      %s = arith.addf %lhs, %rhs : f32
      "scf.reduce.return"(%s) : (f32) -> ()
    }) : (f32) -> ()
  }) : (index, index, index, index, index, index, f32) -> f32
  func.return %total : f32
}

// CHECK-LABEL: static float sum2d(const float* m) {
// CHECK-NEXT:    float total = 0.0f;
// CHECK-NEXT:    for (int64_t i = 0; i < 4; i += 1) {
// CHECK-NEXT:      for (int64_t j = 0; j < 8; j += 1) {
// CHECK-NEXT:        float v = m[i * 8 + j];
// CHECK-NEXT:        {
// CHECK-NEXT:          float s = total + v;
// CHECK-NEXT:          total = s;
// CHECK-NEXT:        }
// CHECK-NEXT:      }
// CHECK-NEXT:    }
// CHECK-NEXT:    return total;

func.func @rotate(%n: index) -> f64 {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %i0 = arith.constant 1 : i32
  %f0 = arith.constant 2.0 : f64
  %g0 = arith.constant 3.0 : f64
  %k, %f, %g = scf.for %i = %c0 to %n step %c1 iter_args(%a = %i0, %x = %f0, %y = %g0) -> (i32, f64, f64) {
    scf.yield %a, %y, %x : i32, f64, f64
  }
  %kf = arith.sitofp %k : i32 to f64
  %s = arith.addf %f, %kf : f64
  %t = arith.addf %s, %g : f64
  func.return %t : f64
}

// CHECK-LABEL: static double rotate(int64_t n) {
// CHECK:         for (int64_t i = 0; i < n; i += 1) {
// CHECK-NEXT:      double f_next = g;
// CHECK-NEXT:      double g_next = f;
// CHECK-NEXT:      f = f_next;
// CHECK-NEXT:      g = g_next;
// CHECK-NEXT:    }

func.func @main(%io: memref<4xi64>, %m: memref<4x8xf32>, %out: memref<1xf32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %n = arith.constant 10 : index
  %f = func.call @fib(%n) : (index) -> i64
  memref.store %f, %io[%c0] : memref<4xi64>
  %s = func.call @swap(%n) : (index) -> i32
  %se = arith.extsi %s : i32 to i64
  memref.store %se, %io[%c1] : memref<4xi64>
  %t = arith.constant 1 : i1
  %x = arith.constant 2.0 : f32
  %b = func.call @branch(%t, %x) : (i1, f32) -> f32
  memref.store %b, %out[%c0] : memref<1xf32>
  %start = arith.constant 27 : i32
  %k = func.call @collatz(%start) : (i32) -> i32
  %ke = arith.extsi %k : i32 to i64
  %c2 = arith.constant 2 : index
  memref.store %ke, %io[%c2] : memref<4xi64>
  %total = func.call @sum2d(%m) : (memref<4x8xf32>) -> f32
  memref.store %total, %out[%c0] : memref<1xf32>
  %rot = func.call @rotate(%n) : (index) -> f64
  %rotf = arith.truncf %rot : f64 to f32
  memref.store %rotf, %out[%c0] : memref<1xf32>
  func.return
}

// CHECK-LABEL: int32_t usmp_default_run(
// CHECK:         int64_t f = fib(10);
// CHECK:         float b = branch(1, 2.0f);
