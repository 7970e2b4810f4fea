pool.workspace @sram {alignment = 3 : i64}
func.func @main() {
  func.return
}
