// The `usmp` pipeline: (U4) usmp-create-io-allocates, usmp-assign-pools, usmp-plan,
// usmp-convert-to-pool-offsets.
// RUN: usmp-opt %s --split-input-file -p 'usmp{workspace-io=true}' | filecheck %s --check-prefix=U4
// RUN: usmp-opt %s --split-input-file -p 'usmp-import-memref,usmp' | filecheck %s --check-prefix=U1

// U4 on TVM's TwoInputTwoOutput module: the application writes both inputs before the run
// and reads both outputs after it, so the inputs may not share memory (TVM placed both at
// offset 0, tvm-usmp.md §7.3-2): the pool holds both 150528-byte inputs. output2 is only written
// after input1's last read, so it may reuse input1's bytes.
// U4: builtin.module attributes {usmp.io_allocations = [{name = "input1", kind = "input", pool = @sram, offset = {{[0-9]+}} : i64, type = memref<150528xi8>}, {name = "input2", kind = "input", pool = @sram, offset = {{[0-9]+}} : i64, type = memref<150528xi8>}, {name = "output1", kind = "output", pool = @sram, offset = {{[0-9]+}} : i64, type = memref<452xi16>}, {name = "output2", kind = "output", pool = @sram, offset = {{[0-9]+}} : i64, type = memref<452xi16>}]} {
// U4: pool.workspace @sram {size_bytes = 301960 : i64}
// U4-LABEL: func.func @cast_subtract(%in: memref<150528xi8>, %out: memref<452xi16>) {
// U4-LABEL: func.func @main() {
// U4-NEXT: %sram = pool.base @sram : memref<301960xi8>
// U4: %input1 = memref.view %sram[%input1_offset][] {usmp.buffer = "input1"} : memref<301960xi8> to memref<150528xi8>
// U4: func.call @cast_subtract(%input1, %output1) : (memref<150528xi8>, memref<452xi16>) -> ()
pool.workspace @sram
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

// Standard MLIR (memref.alloc / memref.alloca / constant memref.global) through
// usmp-import-memref, then the whole pipeline with the default pools (U1): in the chain
// x -> t1 -> t2 -> t3 -> y, t1 and t3 share memory (t3 keeps its 64-byte alignment); the
// weights (one constant per function, however often it is called) go to the constant pool.
// U1: pool.workspace @global_workspace {internal, size_bytes = 128 : i64, alignment = 64 : i64}
// U1: pool.constant @global_constant {internal, size_bytes = 64 : i64, data = dense<{{.*}}> : tensor<64xi8>}
// U1-LABEL: func.func @scale(%a: memref<16xf32>, %b: memref<16xf32>, %global_constant: memref<64xi8> {pool.pool = @global_constant}) {
// U1: %w = memref.view %global_constant[%w_offset][] {usmp.buffer = "w"} : memref<64xi8> to memref<16xf32>
// U1-LABEL: func.func @main(%x: memref<16xf32>, %y: memref<16xf32>) {
// U1-NEXT: %global_workspace = pool.base @global_workspace : memref<128xi8>
// U1-NEXT: %global_constant = pool.base @global_constant : memref<64xi8>
// U1: %t1_offset = arith.constant [[T1:0|64]] : index
// U1: %t1 = memref.view %global_workspace[%t1_offset][] {usmp.buffer = "t1"} : memref<128xi8> to memref<16xf32>
// U1: %t2 = memref.view %global_workspace[%t2_offset][] {usmp.buffer = "t2"} : memref<128xi8> to memref<16xf32>
// U1: %t3_offset = arith.constant [[T1]] : index
// U1: %t3 = memref.view %global_workspace[%t3_offset][] {usmp.buffer = "t3"} : memref<128xi8> to memref<16xf32>
// U1-NOT: memref.alloc
// U1-NOT: memref.dealloc
"memref.global"() <{sym_name = "weights", sym_visibility = "private", type = memref<16xf32>, initial_value = dense<2.0> : tensor<16xf32>, constant}> : () -> ()
func.func @scale(%a: memref<16xf32>, %b: memref<16xf32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c16 = arith.constant 16 : index
  %w = memref.get_global @weights : memref<16xf32>
  scf.for %i = %c0 to %c16 step %c1 {
    %v = memref.load %a[%i] : memref<16xf32>
    %s = memref.load %w[%i] : memref<16xf32>
    %p = arith.mulf %v, %s : f32
    memref.store %p, %b[%i] : memref<16xf32>
  }
  func.return
}
func.func @main(%x: memref<16xf32>, %y: memref<16xf32>) {
  %t1 = memref.alloc() : memref<16xf32>
  func.call @scale(%x, %t1) : (memref<16xf32>, memref<16xf32>) -> ()
  %t2 = memref.alloca() : memref<16xf32>
  func.call @scale(%t1, %t2) : (memref<16xf32>, memref<16xf32>) -> ()
  memref.dealloc %t1 : memref<16xf32>
  %t3 = memref.alloc() {alignment = 64 : i64} : memref<16xf32>
  func.call @scale(%t2, %t3) : (memref<16xf32>, memref<16xf32>) -> ()
  func.call @scale(%t3, %y) : (memref<16xf32>, memref<16xf32>) -> ()
  func.return
}

// -----

// The I/O entries are named after the entry arguments even when an operator's buffer took
// the name first (the I/O buffer itself is named `x_1` in reports).
// U4: builtin.module attributes {usmp.io_allocations = [{name = "x", kind = "input", pool = @global_workspace, offset = {{[0-9]+}} : i64, type = memref<8xi8>}]} {
// The input is dead once read, so the operator's scratch buffer reuses its bytes.
// U4: pool.workspace @global_workspace {internal, size_bytes = 8 : i64}
// U4: %x = memref.view %global_workspace[%x_1_offset][] {usmp.buffer = "x_1"} : memref<8xi8> to memref<8xi8>
func.func @op(%in: memref<8xi8>) {
  %c0 = arith.constant 0 : index
  %x = usmp.allocate : memref<8xi8>
  %v = memref.load %in[%c0] : memref<8xi8>
  memref.store %v, %x[%c0] : memref<8xi8>
  func.return
}
func.func @main(%x: memref<8xi8>) {
  func.call @op(%x) : (memref<8xi8>) -> ()
  func.return
}
