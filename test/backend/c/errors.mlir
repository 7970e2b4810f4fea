// RUN: usmp-opt %s --split-input-file --verify-diagnostics -t c | filecheck %s
// RUN: not usmp-opt %S/Inputs/unplanned.mlir -t c 2>&1 | filecheck %s --check-prefix=CLI
// RUN: not usmp-opt %S/Inputs/unplanned.mlir -t c-header 2>&1 | filecheck %s --check-prefix=CLI
// RUN: usmp-opt %S/Inputs/unplanned.mlir -p usmp -t c | filecheck %s --check-prefix=PLANNED
// The backend refuses what it cannot print with one line naming the op and the pass to run.

// CLI:     usmp-opt: error: {{.*}}unplanned.mlir: C backend: unplanned allocation 'usmp.allocate' in function @main; run the `usmp` pass first (usmp-opt -p usmp -t c)
// CLI-NOT: Traceback
// PLANNED: int32_t usmp_default_run(

func.func @main(%x: memref<4xf32>) {
  %a = memref.alloc() : memref<4xf32>
  "memref.copy"(%x, %a) : (memref<4xf32>, memref<4xf32>) -> ()
  func.return
}

// CHECK: C backend: unplanned allocation 'memref.alloc' in function @main; run the `usmp` pass first (usmp-opt -p usmp-import-memref,usmp -t c)

// -----

func.func @main(%x: memref<4xf32>, %y: memref<4xf32>) {
  linalg.copy ins(%x : memref<4xf32>) outs(%y : memref<4xf32>)
  func.return
}

// CHECK: C backend: cannot print 'linalg.copy' in function @main; lower it first with `convert-linalg-to-loops`

// -----

func.func @main(%x: memref<4xf32>, %y: memref<4xf32>) {
  %c0 = arith.constant 0 : index
  %c2 = arith.constant 2 : i32
  %v = memref.load %x[%c0] : memref<4xf32>
  %p = math.fpowi %v, %c2 : f32, i32
  memref.store %p, %y[%c0] : memref<4xf32>
  func.return
}

// CHECK: C backend: cannot print 'math.fpowi' in function @main

// -----

func.func @main(%x: memref<4xf16>) {
  func.return
}

// CHECK: C backend: unsupported type f16 (supported: i1, i8, i16, i32, i64, index, f32, f64) in argument #0 of function @main

// -----

func.func @forward(%x: memref<4xf32>) {
  func.return
}

// CHECK: C backend: no entry function @main in the module (target option entry=NAME)

// -----

pool.constant @flash {internal, size_bytes = 16 : i64, data = dense<0> : tensor<16xi8>}
func.func @main(%y: memref<4xf32>) {
  %flash = pool.base @flash : memref<16xi8>
  %c0 = arith.constant 0 : index
  %w = memref.view %flash[%c0][] {usmp.buffer = "w"} : memref<16xi8> to memref<4xf32>
  "memref.copy"(%y, %w) : (memref<4xf32>, memref<4xf32>) -> ()
  func.return
}

// CHECK: C backend: 'memref.copy' into read-only data in function @main

// -----

pool.constant @flash {internal, size_bytes = 16 : i64, data = dense<0> : tensor<16xi8>}
func.func private @vendor_op(memref<4xf32>)
func.func @main() {
  %flash = pool.base @flash : memref<16xi8>
  %c0 = arith.constant 0 : index
  %w = memref.view %flash[%c0][] {usmp.buffer = "w"} : memref<16xi8> to memref<4xf32>
  func.call @vendor_op(%w) : (memref<4xf32>) -> ()
  func.return
}

// CHECK: C backend: @vendor_op may write its argument #0, which is read-only data (a constant) in function @main; external functions are assumed to write their memref arguments
