// RUN: usmp-opt %s -p usmp-parallel-to-serial | filecheck %s
// RUN: usmp-opt %s -p 'usmp-parallel-to-serial{all=true}' | filecheck %s --check-prefix=ALL
// RUN: usmp-opt %s -p 'usmp-parallel-to-serial{all=true}' | filecheck %s --check-prefix=NONE

// NONE:     builtin.module
// NONE-NOT: scf.parallel

// A buffer allocated inside: the dimensions become nested loops (first dimension outermost),
// the body moves unchanged into the innermost loop.

// CHECK-LABEL: func.func @scratch(%out: memref<4x8xf32>)
// CHECK:         scf.for %i = %c0 to %c4 step %c1 {
// CHECK-NEXT:      scf.for %j = %c0 to %c8 step %c2 {
// CHECK-NEXT:        %t = usmp.allocate : memref<16xf32>
// CHECK-NEXT:        %v = memref.load %t[%j] : memref<16xf32>
// CHECK-NEXT:        memref.store %v, %out[%i, %j] : memref<4x8xf32>
// CHECK-NEXT:      }
// CHECK-NEXT:    }
// CHECK-NEXT:    func.return
func.func @scratch(%out: memref<4x8xf32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c2 = arith.constant 2 : index
  %c4 = arith.constant 4 : index
  %c8 = arith.constant 8 : index
  "scf.parallel"(%c0, %c0, %c4, %c8, %c1, %c2) <{operandSegmentSizes = array<i32: 2, 2, 2, 0>}> ({
  ^bb0(%i: index, %j: index):
    %t = usmp.allocate : memref<16xf32>
    %v = memref.load %t[%j] : memref<16xf32>
    memref.store %v, %out[%i, %j] : memref<4x8xf32>
    scf.reduce
  }) : (index, index, index, index, index, index) -> ()
  func.return
}

// No buffer inside: the loop stays parallel (unless all=true). A constant does not count.

// CHECK-LABEL: func.func @no_buffer(%out: memref<4xf32>)
// CHECK-NEXT:    %c0 = arith.constant 0 : index
// CHECK-NEXT:    %c1 = arith.constant 1 : index
// CHECK-NEXT:    %c4 = arith.constant 4 : index
// CHECK-NEXT:    "scf.parallel"(%c0, %c4, %c1)
// CHECK-NEXT:    ^bb0(%i: index):
// CHECK-NEXT:      %w = usmp.allocate_const dense<1.000000e+00> : memref<4xf32>
// CHECK-NEXT:      %v = memref.load %w[%i] : memref<4xf32>
// CHECK-NEXT:      memref.store %v, %out[%i] : memref<4xf32>
// CHECK-NEXT:      scf.reduce
// CHECK-NEXT:    })

// ALL-LABEL: func.func @no_buffer(%out: memref<4xf32>)
// ALL:         scf.for %i = %c0 to %c4 step %c1 {
// ALL-NEXT:      %w = usmp.allocate_const dense<1.000000e+00> : memref<4xf32>
// ALL-NEXT:      %v = memref.load %w[%i] : memref<4xf32>
// ALL-NEXT:      memref.store %v, %out[%i] : memref<4xf32>
// ALL-NEXT:    }
// ALL-NEXT:    func.return
func.func @no_buffer(%out: memref<4xf32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c4 = arith.constant 4 : index
  "scf.parallel"(%c0, %c4, %c1) <{operandSegmentSizes = array<i32: 1, 1, 1, 0>}> ({
  ^bb0(%i: index):
    %w = usmp.allocate_const dense<1.0> : memref<4xf32>
    %v = memref.load %w[%i] : memref<4xf32>
    memref.store %v, %out[%i] : memref<4xf32>
    scf.reduce
  }) : (index, index, index) -> ()
  func.return
}

// memref.alloc / memref.alloca count, at any depth; a parallel loop without a buffer nested in
// a converted one stays parallel.

// CHECK-LABEL: func.func @nested()
// CHECK:         scf.for %i = %c0 to %c4 step %c1 {
// CHECK-NEXT:      scf.if %cond {
// CHECK-NEXT:        %a = memref.alloca() : memref<4xf32>
// CHECK-NEXT:      }
// CHECK-NEXT:      "scf.parallel"(%c0, %c4, %c1)
// CHECK-NEXT:      ^bb0(%k: index):
// CHECK-NEXT:        scf.reduce
// CHECK-NEXT:      })
// CHECK-NEXT:      scf.for %j = %c0 to %c4 step %c1 {
// CHECK-NEXT:        %b = memref.alloc() : memref<4xf32>
// CHECK-NEXT:      }
// CHECK-NEXT:    }
func.func @nested() {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c4 = arith.constant 4 : index
  %cond = arith.constant true
  "scf.parallel"(%c0, %c4, %c1) <{operandSegmentSizes = array<i32: 1, 1, 1, 0>}> ({
  ^bb0(%i: index):
    scf.if %cond {
      %a = memref.alloca() : memref<4xf32>
    }
    "scf.parallel"(%c0, %c4, %c1) <{operandSegmentSizes = array<i32: 1, 1, 1, 0>}> ({
    ^bb1(%k: index):
      scf.reduce
    }) : (index, index, index) -> ()
    "scf.parallel"(%c0, %c4, %c1) <{operandSegmentSizes = array<i32: 1, 1, 1, 0>}> ({
    ^bb1(%j: index):
      %b = memref.alloc() : memref<4xf32>
      scf.reduce
    }) : (index, index, index) -> ()
    scf.reduce
  }) : (index, index, index) -> ()
  func.return
}

// Calling a function that allocates (here through another call) counts too; calling one that
// does not, does not.

// CHECK-LABEL: func.func @calls(%x: memref<4xf32>)
// CHECK:         scf.for %i = %c0 to %c4 step %c1 {
// CHECK-NEXT:      func.call @wrapper(%x) : (memref<4xf32>) -> ()
// CHECK-NEXT:    }
// CHECK-NEXT:    "scf.parallel"(%c0, %c4, %c1)
// CHECK-NEXT:    ^bb0(%j: index):
// CHECK-NEXT:      func.call @pure(%x) : (memref<4xf32>) -> ()
func.func @calls(%x: memref<4xf32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c4 = arith.constant 4 : index
  "scf.parallel"(%c0, %c4, %c1) <{operandSegmentSizes = array<i32: 1, 1, 1, 0>}> ({
  ^bb0(%i: index):
    func.call @wrapper(%x) : (memref<4xf32>) -> ()
    scf.reduce
  }) : (index, index, index) -> ()
  "scf.parallel"(%c0, %c4, %c1) <{operandSegmentSizes = array<i32: 1, 1, 1, 0>}> ({
  ^bb0(%j: index):
    func.call @pure(%x) : (memref<4xf32>) -> ()
    scf.reduce
  }) : (index, index, index) -> ()
  func.return
}
func.func @wrapper(%x: memref<4xf32>) {
  func.call @operator(%x) : (memref<4xf32>) -> ()
  func.return
}
func.func @operator(%x: memref<4xf32>) {
  %t = usmp.allocate : memref<4xf32>
  func.return
}
func.func @pure(%x: memref<4xf32>) {
  func.return
}

// Reductions: the accumulators are iter_args of every loop of the nest, starting from the init
// values; each scf.reduce region is inlined as the combiner (lhs = accumulator, rhs = value).

// CHECK-LABEL: func.func @reductions(%in: memref<4x8xf32>) -> f32
// CHECK:         %s, %s_1 = scf.for %i = %c0 to %c4 step %c1 iter_args(%s_2 = %zero, %s_3 = %one) -> (f32, f32) {
// CHECK-NEXT:      %s_4, %s_5 = scf.for %j = %c0 to %c8 step %c1 iter_args(%s_6 = %s_2, %s_7 = %s_3) -> (f32, f32) {
// CHECK-NEXT:        %t = memref.alloca() : memref<2xf32>
// CHECK-NEXT:        %v = memref.load %in[%i, %j] : memref<4x8xf32>
// CHECK-NEXT:        %r = arith.addf %s_6, %v : f32
// CHECK-NEXT:        %r2 = arith.mulf %s_7, %v : f32
// CHECK-NEXT:        scf.yield %r, %r2 : f32, f32
// CHECK-NEXT:      }
// CHECK-NEXT:      scf.yield %s_4, %s_5 : f32, f32
// CHECK-NEXT:    }
// CHECK-NEXT:    %res = arith.subf %s, %s_1 : f32
// CHECK-NEXT:    func.return %res : f32
func.func @reductions(%in: memref<4x8xf32>) -> f32 {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c4 = arith.constant 4 : index
  %c8 = arith.constant 8 : index
  %zero = arith.constant 0.0 : f32
  %one = arith.constant 1.0 : f32
  %s:2 = "scf.parallel"(%c0, %c0, %c4, %c8, %c1, %c1, %zero, %one) <{operandSegmentSizes = array<i32: 2, 2, 2, 2>}> ({
  ^bb0(%i: index, %j: index):
    %t = memref.alloca() : memref<2xf32>
    %v = memref.load %in[%i, %j] : memref<4x8xf32>
    "scf.reduce"(%v, %v) ({
    ^bb1(%lhs: f32, %rhs: f32):
      %r = arith.addf %lhs, %rhs : f32
      scf.reduce.return %r : f32
    }, {
    ^bb2(%lhs2: f32, %rhs2: f32):
      %r2 = arith.mulf %lhs2, %rhs2 : f32
      scf.reduce.return %r2 : f32
    }) : (f32, f32) -> ()
  }) : (index, index, index, index, index, index, f32, f32) -> (f32, f32)
  %res = arith.subf %s#0, %s#1 : f32
  func.return %res : f32
}

// A zero-dimensional scf.parallel runs its body once: the body is inlined in place.

// CHECK-LABEL: func.func @zero_dims(%x: memref<4xf32>) -> f32
// CHECK-NEXT:    %c0 = arith.constant 0 : index
// CHECK-NEXT:    %zero = arith.constant 0.000000e+00 : f32
// CHECK-NEXT:    %w = usmp.allocate : memref<4xf32>
// CHECK-NEXT:    %v = memref.load %w[%c0] : memref<4xf32>
// CHECK-NEXT:    %sum = arith.addf %zero, %v : f32
// CHECK-NEXT:    func.return %sum : f32
func.func @zero_dims(%x: memref<4xf32>) -> f32 {
  %c0 = arith.constant 0 : index
  %zero = arith.constant 0.0 : f32
  %r = "scf.parallel"(%zero) <{operandSegmentSizes = array<i32: 0, 0, 0, 1>}> ({
    %w = usmp.allocate : memref<4xf32>
    %v = memref.load %w[%c0] : memref<4xf32>
    "scf.reduce"(%v) ({
    ^bb1(%lhs: f32, %rhs: f32):
      %sum = arith.addf %lhs, %rhs : f32
      scf.reduce.return %sum : f32
    }) : (f32) -> ()
  }) : (f32) -> f32
  func.return %r : f32
}

// With all=true every loop is converted, the ones without buffers too.

// ALL-LABEL: func.func @calls(%x: memref<4xf32>)
// ALL:         scf.for %i = %c0 to %c4 step %c1 {
// ALL-NEXT:      func.call @wrapper(%x) : (memref<4xf32>) -> ()
// ALL-NEXT:    }
// ALL-NEXT:    scf.for %j = %c0 to %c4 step %c1 {
// ALL-NEXT:      func.call @pure(%x) : (memref<4xf32>) -> ()
// ALL-NEXT:    }
