// Programs the liveness analysis rejects, each with a diagnostic on the op at fault.
// RUN: usmp-opt %s --split-input-file --verify-diagnostics -p usmp-extract-buffer-info | filecheck %s

// CHECK: entry function @main does not exist (option entry=NAME; public functions: @not_main)
func.func @not_main() {
  func.return
}

// -----

// (func.call's verifier rejects it before the analysis, whose own check covers unverified IR)
// CHECK: '@missing' could not be found in symbol table
func.func @main() {
  %a = usmp.allocate : memref<4xi8>
  func.call @missing(%a) : (memref<4xi8>) -> ()
  func.return
}

// -----

// CHECK: recursive call to @f (main -> f -> g -> f): recursion cannot be planned
func.func @f() {
  func.call @g() : () -> ()
  func.return
}
func.func @g() {
  %a = usmp.allocate : memref<4xi8>
  func.call @f() : () -> ()
  func.return
}
func.func @main() {
  func.call @f() : () -> ()
  func.return
}

// -----

// CHECK: buffer 'a' escapes: it is returned
func.func @make() -> memref<4xi8> {
  %a = usmp.allocate : memref<4xi8>
  func.return %a : memref<4xi8>
}
func.func @main() {
  %b = func.call @make() : () -> memref<4xi8>
  func.return
}

// -----

// CHECK: buffer 'a' escapes: it is stored by 'memref.store'
func.func @main(%table: memref<1xmemref<4xi8>>) {
  %c0 = arith.constant 0 : index
  %a = usmp.allocate : memref<4xi8>
  memref.store %a, %table[%c0] : memref<1xmemref<4xi8>>
  func.return
}

// -----

// CHECK: 'memref.alloc' with the dynamic shape memref<?xi8> cannot be planned statically
func.func @main(%n: index) {
  %a = memref.alloc(%n) : memref<?xi8>
  func.return
}

// -----

// CHECK: buffer 'a' escapes: 'memref.extract_aligned_pointer_as_index' takes its address (plan before lowering to pointers)
func.func @main() {
  %a = usmp.allocate : memref<4xi8>
  %p = "memref.extract_aligned_pointer_as_index"(%a) : (memref<4xi8>) -> index
  func.return
}
