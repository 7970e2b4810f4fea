func.func @main() {
  "mydialect.op"() : () -> ()
  func.return
}
