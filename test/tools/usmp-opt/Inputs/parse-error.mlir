func.func @main() {
  %a = usmp.allocate : memref<16xi8
  func.return
}
