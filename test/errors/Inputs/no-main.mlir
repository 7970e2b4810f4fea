func.func @start() {
  %a = usmp.allocate : memref<4xi8>
  func.return
}
