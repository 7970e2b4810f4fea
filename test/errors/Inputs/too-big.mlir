pool.workspace @sram {size_hint_bytes = 16 : i64}
pool.workspace @dram {size_hint_bytes = 32 : i64}
func.func @main() {
  %c0 = arith.constant 0 : index
  %a = usmp.allocate : memref<64xi8>
  %v = memref.load %a[%c0] : memref<64xi8>
  func.return
}
