func.func @main() {
  func.return
}

// -----

pool.workspace @sram {alignment = 3 : i64}
