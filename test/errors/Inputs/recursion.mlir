func.func @f() {
  %a = usmp.allocate : memref<4xi8>
  func.call @f() : () -> ()
  func.return
}
func.func @main() {
  func.call @f() : () -> ()
  func.return
}
