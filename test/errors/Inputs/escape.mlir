func.func @make() -> memref<4xi8> {
  %a = usmp.allocate : memref<4xi8>
  func.return %a : memref<4xi8>
}
func.func @main() {
  %b = func.call @make() : () -> memref<4xi8>
  func.return
}
