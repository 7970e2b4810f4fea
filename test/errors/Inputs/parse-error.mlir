func.func @main() {
  %a = usmp.allocate : memref<4xi8
  func.return
}
