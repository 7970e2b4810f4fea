pool.workspace @sram
func.func @main() {
  func.return
}
