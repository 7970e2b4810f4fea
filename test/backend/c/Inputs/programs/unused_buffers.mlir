func.func @scale(%x: memref<8xi32>, %k: memref<8xi32>, %y: memref<8xi32>) {
  %unused_table = usmp.allocate_const $unused : memref<8xi32>
  %unused_scratch = usmp.allocate : memref<8xi32>
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c8 = arith.constant 8 : index
  scf.for %i = %c0 to %c8 step %c1 {
    %v = memref.load %x[%i] : memref<8xi32>
    %w = memref.load %k[%i] : memref<8xi32>
    %p = arith.muli %v, %w : i32
    memref.store %p, %y[%i] : memref<8xi32>
  }
  func.return
}
func.func @pass_through(%x: memref<8xi32>, %k: memref<8xi32>, %y: memref<8xi32>) {
  %unused_too = usmp.allocate : memref<8xi32>
  func.call @scale(%x, %k, %y) : (memref<8xi32>, memref<8xi32>, memref<8xi32>) -> ()
  func.return
}
func.func @never_called(%x: memref<8xi32>) {
  %w = usmp.allocate : memref<8xi32>
  "memref.copy"(%x, %w) : (memref<8xi32>, memref<8xi32>) -> ()
  func.return
}
func.func @main(%x: memref<8xi32>, %y: memref<8xi32>) {
  %k = usmp.allocate_const $k : memref<8xi32>
  %t = usmp.allocate : memref<8xi32>
  func.call @pass_through(%x, %k, %t) : (memref<8xi32>, memref<8xi32>, memref<8xi32>) -> ()
  func.call @scale(%t, %k, %y) : (memref<8xi32>, memref<8xi32>, memref<8xi32>) -> ()
  func.return
}
