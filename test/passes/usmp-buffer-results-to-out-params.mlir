// usmp-buffer-results-to-out-params (usmp-import-memref runs it first): returned buffers become
// out-parameters the caller allocates, as upstream's buffer-results-to-out-params with
// hoist-static-allocs and modify-public-functions.
// RUN: usmp-opt %s --split-input-file -p usmp-buffer-results-to-out-params --verify-diagnostics | filecheck %s
// RUN: usmp-opt %s --split-input-file -p usmp-import-memref --verify-diagnostics | filecheck %s --check-prefix=IMPORT

// A returned allocation of the result's type is the out-parameter itself (its dealloc goes); a
// returned argument is copied into it. Each call allocates the result buffer right before the
// call, named after the call's result; the entry's returned buffer becomes an argument it
// writes (an output): here that is the call's buffer %y, so @layer writes the output directly.
// Other results stay results.
// CHECK-LABEL: func.func @layer(%x: memref<4xf32>, %result0: memref<4xf32>, %result1: memref<4xf32>) -> i32 {
// CHECK-NEXT:    %c = arith.constant 7 : i32
// CHECK-NEXT:    %zero = arith.constant 0.000000e+00 : f32
// CHECK-NEXT:    linalg.fill ins(%zero : f32) outs(%result0 : memref<4xf32>)
// CHECK-NEXT:    memref.copy %x, %result1 : memref<4xf32> to memref<4xf32>
// CHECK-NEXT:    func.return %c : i32
// CHECK-LABEL: func.func @main(%in: memref<4xf32>, %result: memref<4xf32>) {
// CHECK-NEXT:    %z = memref.alloc() : memref<4xf32>
// CHECK-NEXT:    %n = func.call @layer(%in, %result, %z) : (memref<4xf32>, memref<4xf32>, memref<4xf32>) -> i32
// CHECK-NEXT:    func.return
// IMPORT-LABEL: func.func @main(%in: memref<4xf32>, %result: memref<4xf32>) {
// IMPORT-NEXT:    %z = usmp.allocate : memref<4xf32>
// IMPORT-NEXT:    %n = func.call @layer(%in, %result, %z)
func.func @layer(%x: memref<4xf32>) -> (memref<4xf32>, i32, memref<4xf32>) {
  %c = arith.constant 7 : i32
  %zero = arith.constant 0.0 : f32
  %a = memref.alloc() {alignment = 64 : i64} : memref<4xf32>
  linalg.fill ins(%zero : f32) outs(%a : memref<4xf32>)
  func.return %a, %c, %x : memref<4xf32>, i32, memref<4xf32>
}
func.func @main(%in: memref<4xf32>) -> memref<4xf32> {
  %y, %n, %z = func.call @layer(%in) : (memref<4xf32>) -> (memref<4xf32>, i32, memref<4xf32>)
  func.return %y : memref<4xf32>
}

// -----

// A declaration returning a buffer cannot be rewritten.
// CHECK: @ext is a declaration that returns a buffer: the planner cannot see or move that allocation
// IMPORT: @ext is a declaration
func.func private @ext() -> memref<4xf32>
