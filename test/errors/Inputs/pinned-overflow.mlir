pool.workspace @sram {size_hint_bytes = 100 : i64}
func.func @main() {
  %c0 = arith.constant 0 : index
  %a = usmp.allocate : memref<64xi8>
  %b = usmp.allocate : memref<64xi8>
  %v = memref.load %a[%c0] : memref<64xi8>
  memref.store %v, %b[%c0] : memref<64xi8>
  %w = memref.load %a[%c0] : memref<64xi8>
  func.return
}
