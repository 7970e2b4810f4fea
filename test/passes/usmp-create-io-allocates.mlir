// usmp-create-io-allocates (U4): the entry function's memref arguments become usmp.allocate
// ops marked usmp.io / usmp.io_index (the argument's position) at the start of its body. An
// argument written anywhere (here: inside @cast_subtract, through the call) is an output.
// TVM's create_io_allocates test modules (tvm-usmp.md §5.5), with its buffer types.
// RUN: usmp-opt %s --split-input-file -p usmp-create-io-allocates | filecheck %s
// RUN: usmp-opt %s --split-input-file -p usmp-create-io-allocates,usmp-create-io-allocates | filecheck %s

// TwoInputTwoOutput.
// CHECK-LABEL: func.func @main() {
// CHECK-NEXT:    %input1 = usmp.allocate {usmp.io = "input", usmp.io_index = 0 : i64} : memref<150528xi8>
// CHECK-NEXT:    %input2 = usmp.allocate {usmp.io = "input", usmp.io_index = 1 : i64} : memref<150528xi8>
// CHECK-NEXT:    %output1 = usmp.allocate {usmp.io = "output", usmp.io_index = 2 : i64} : memref<452xi16>
// CHECK-NEXT:    %output2 = usmp.allocate {usmp.io = "output", usmp.io_index = 3 : i64} : memref<452xi16>
// CHECK-NEXT:    func.call @cast_subtract(%input1, %output1) : (memref<150528xi8>, memref<452xi16>) -> ()
// CHECK-NEXT:    func.call @cast_subtract(%input2, %output2) : (memref<150528xi8>, memref<452xi16>) -> ()
func.func @cast_subtract(%in: memref<150528xi8>, %out: memref<452xi16>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c452 = arith.constant 452 : index
  %zp = arith.constant 3 : i16
  scf.for %i = %c0 to %c452 step %c1 {
    %x = memref.load %in[%i] : memref<150528xi8>
    %e = arith.extui %x : i8 to i16
    %d = arith.subi %e, %zp : i16
    memref.store %d, %out[%i] : memref<452xi16>
  }
  func.return
}
func.func @main(%input1: memref<150528xi8>, %input2: memref<150528xi8>, %output1: memref<452xi16>, %output2: memref<452xi16>) {
  func.call @cast_subtract(%input1, %output1) : (memref<150528xi8>, memref<452xi16>) -> ()
  func.call @cast_subtract(%input2, %output2) : (memref<150528xi8>, memref<452xi16>) -> ()
  func.return
}

// -----

// Writes through an alias count; `{usmp.io = ...}` overrides the rule (an output the program
// never writes); non-memref arguments stay in the signature with their attributes.
// CHECK-LABEL: func.func @main(%scale: i32 {llvm.noundef}) {
// CHECK-NEXT:    %x = usmp.allocate {usmp.io = "input", usmp.io_index = 0 : i64} : memref<4xi8>
// CHECK-NEXT:    %y = usmp.allocate {usmp.io = "output", usmp.io_index = 2 : i64} : memref<16xi8>
// CHECK-NEXT:    %z = usmp.allocate {usmp.io = "output", usmp.io_index = 3 : i64} : memref<4xi8>
func.func @main(%x: memref<4xi8>, %scale: i32 {llvm.noundef}, %y: memref<16xi8>, %z: memref<4xi8> {usmp.io = "output"}) {
  %c0 = arith.constant 0 : index
  %v = memref.load %x[%c0] : memref<4xi8>
  %view = memref.view %y[%c0][] : memref<16xi8> to memref<4xf32>
  %f = arith.constant 1.0 : f32
  memref.store %f, %view[%c0] : memref<4xf32>
  func.return
}

// -----

// Writes by memref.copy and by linalg `outs` make outputs.
// CHECK-LABEL: func.func @main() {
// CHECK-NEXT:    %a = usmp.allocate {usmp.io = "input", usmp.io_index = 0 : i64} : memref<4xf32>
// CHECK-NEXT:    %b = usmp.allocate {usmp.io = "output", usmp.io_index = 1 : i64} : memref<4xf32>
// CHECK-NEXT:    %c = usmp.allocate {usmp.io = "output", usmp.io_index = 2 : i64} : memref<4xf32>
func.func @main(%a: memref<4xf32>, %b: memref<4xf32>, %c: memref<4xf32>) {
  "memref.copy"(%a, %b) : (memref<4xf32>, memref<4xf32>) -> ()
  linalg.copy ins(%a : memref<4xf32>) outs(%c : memref<4xf32>)
  func.return
}
