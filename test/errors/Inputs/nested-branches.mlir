func.func @main(%x: memref<4xf32>) {
  scf.execute_region {
    cf.br ^next
  ^next:
    %c0 = arith.constant 0 : index
    %v = memref.load %x[%c0] : memref<4xf32>
    memref.store %v, %x[%c0] : memref<4xf32>
    scf.yield
  }
  func.return
}
