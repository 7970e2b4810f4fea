func.func @first() {
  func.return
}

// -----

func.func @second() {
  %a = usmp.allocate : memref<16xi8
  func.return
}
