// A valid program: one input, one output, one intermediate buffer.
func.func @main(%x: memref<4xi8>, %y: memref<4xi8>) {
  %c0 = arith.constant 0 : index
  %a = usmp.allocate : memref<64xi8>
  %v = memref.load %x[%c0] : memref<4xi8>
  memref.store %v, %a[%c0] : memref<64xi8>
  %w = memref.load %a[%c0] : memref<64xi8>
  memref.store %w, %y[%c0] : memref<4xi8>
  func.return
}
