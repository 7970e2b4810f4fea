func.func @main() {
  func.return
}
// -----
ÿþ not text
