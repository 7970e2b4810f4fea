// What a bufferization leaves behind: a to_tensor/to_buffer round trip of one memref is that
// memref; tensors anywhere else mean the program is not fully bufferized (a diagnostic that
// says how to bufferize).
// RUN: usmp-opt %s --split-input-file --verify-diagnostics -p usmp-import-memref | filecheck %s

// CHECK-LABEL: func.func @round_trip(%m: memref<4xf32>, %result: memref<4xf32>) {
// CHECK-NEXT:    memref.copy %m, %result : memref<4xf32> to memref<4xf32>
// CHECK-NEXT:    func.return
func.func @round_trip(%m: memref<4xf32>) -> memref<4xf32> {
  %t = bufferization.to_tensor %m : memref<4xf32> to tensor<4xf32>
  %b = bufferization.to_buffer %t : tensor<4xf32> to memref<4xf32>
  func.return %b : memref<4xf32>
}

// -----

// CHECK: tensor.empty works on tensors: bufferize the whole program first (mlir-opt --one-shot-bufferize="bufferize-function-boundaries function-boundary-type-conversion=identity-layout-map")
func.func @partial(%m: memref<4xf32>) {
  %t = tensor.empty() : tensor<4xf32>
  func.return
}

// -----

// CHECK: bufferization.to_tensor works on tensors: bufferize the whole program first
func.func @escaping(%m: memref<4xf32>) -> tensor<4xf32> {
  %t = bufferization.to_tensor %m : memref<4xf32> to tensor<4xf32>
  func.return %t : tensor<4xf32>
}
