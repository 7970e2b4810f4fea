// What a bufferization leaves behind: a to_tensor/to_buffer round trip of one memref is that
// memref; tensors anywhere else mean the program is not fully bufferized (a diagnostic that
// says how to bufferize); what the deallocation pipeline leaves is refused too.
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

// -----

// What --buffer-deallocation-pipeline leaves after lowering its deallocs: address comparisons
// and conditional frees of views of the buffers, which planning makes wrong.
// CHECK: memref.extract_aligned_pointer_as_index compares buffer addresses, which planning changes: bufferize without mlir-opt's deallocation pipeline (--buffer-deallocation-pipeline, --ownership-based-buffer-deallocation): planned buffers are never freed
func.func @addresses(%m: memref<4xf32>) -> index {
  %p = memref.extract_aligned_pointer_as_index %m : memref<4xf32> -> index
  func.return %p : index
}

// -----

// CHECK: memref.dealloc of a view of a planned buffer: bufferize without mlir-opt's deallocation pipeline
func.func @frees_a_view(%c: i1) {
  %a = memref.alloc() : memref<2x3xf32>
  %base, %offset, %sizes:2, %strides:2 = memref.extract_strided_metadata %a : memref<2x3xf32> -> memref<f32>, index, index, index, index, index
  scf.if %c {
    memref.dealloc %base : memref<f32>
  }
  func.return
}
