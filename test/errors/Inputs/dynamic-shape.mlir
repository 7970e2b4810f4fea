func.func @main(%n: index) {
  %a = memref.alloc(%n) : memref<?xi8>
  func.return
}
