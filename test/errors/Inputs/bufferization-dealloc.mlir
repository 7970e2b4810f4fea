// What mlir-opt's --ownership-based-buffer-deallocation leaves: not supported (one-line error).
func.func @f(%m: memref<4xf32>, %c: i1) {
  bufferization.dealloc (%m : memref<4xf32>) if (%c)
  func.return
}
