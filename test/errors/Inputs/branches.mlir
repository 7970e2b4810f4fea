func.func @step(%a: memref<4xf32>) {
  cf.br ^next
^next:
  %c0 = arith.constant 0 : index
  %v = memref.load %a[%c0] : memref<4xf32>
  memref.store %v, %a[%c0] : memref<4xf32>
  func.return
}
func.func @main(%x: memref<4xf32>) {
  func.call @step(%x) : (memref<4xf32>) -> ()
  func.return
}
