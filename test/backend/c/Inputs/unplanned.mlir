func.func @main(%x: memref<4xf32>, %y: memref<4xf32>) {
  %t = usmp.allocate : memref<4xf32>
  "memref.copy"(%x, %t) : (memref<4xf32>, memref<4xf32>) -> ()
  "memref.copy"(%t, %y) : (memref<4xf32>, memref<4xf32>) -> ()
  func.return
}
