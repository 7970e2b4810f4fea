func.func @main(%x: memref<4xf32>) {
  %c0 = arith.constant 0 : index
  %v = memref.load %x[%c0] : memref<4xf32>
  %t = "test.op"(%v) : (f32) -> f32
  memref.store %t, %x[%c0] : memref<4xf32>
  func.return
}
