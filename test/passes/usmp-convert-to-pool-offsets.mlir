// usmp-convert-to-pool-offsets rewrites a planned program (docs/DESIGN.md, "The planned
// program"). The output verifies and round-trips, in custom and generic form.
// RUN: usmp-opt %s --split-input-file -p usmp-convert-to-pool-offsets | filecheck %s
// RUN: usmp-opt %s --split-input-file -p usmp-convert-to-pool-offsets | usmp-opt --split-input-file | filecheck %s
// RUN: usmp-opt %s --split-input-file -p usmp-convert-to-pool-offsets --print-op-generic | usmp-opt --split-input-file | filecheck %s

// The entry gets one pool.base per pool it uses, directly or through callees; other functions
// that (transitively) use pools take them as trailing arguments in pool declaration order and
// calls pass them along (@mid allocates nothing but calls @leaf). @pure uses no pool and keeps
// its signature. Each planned allocation becomes a view at its offset, named for C.
// CHECK:      pool.workspace @sram {size_bytes = 96 : i64}
// CHECK-NEXT: pool.workspace @dram {size_bytes = 64 : i64}
// CHECK-LABEL: func.func @leaf(%x: memref<16xf32>, %sram: memref<96xi8> {pool.pool = @sram}, %dram: memref<64xi8> {pool.pool = @dram}) {
// CHECK-NEXT:   %s_offset = arith.constant 32 : index
// CHECK-NEXT:   %s = memref.view %sram[%s_offset][] {usmp.buffer = "s"} : memref<96xi8> to memref<4x4xi32>
// CHECK-NEXT:   %d_offset = arith.constant 0 : index
// CHECK-NEXT:   %d = memref.view %dram[%d_offset][] {usmp.buffer = "d"} : memref<64xi8> to memref<16xf32>
// CHECK-LABEL: func.func @mid(%x: memref<16xf32> {llvm.noalias}, %sram: memref<96xi8> {pool.pool = @sram}, %dram: memref<64xi8> {pool.pool = @dram}) {
// CHECK-NEXT:   func.call @leaf(%x, %sram, %dram) : (memref<16xf32>, memref<96xi8>, memref<64xi8>) -> ()
// CHECK-LABEL: func.func @pure(%x: memref<16xf32>) {
// CHECK-LABEL: func.func @main(%in: memref<16xf32>) {
// CHECK-NEXT:   %sram = pool.base @sram : memref<96xi8>
// CHECK-NEXT:   %dram = pool.base @dram : memref<64xi8>
// CHECK-NEXT:   %t_offset = arith.constant 0 : index
// CHECK-NEXT:   %t = memref.view %sram[%t_offset][] {usmp.buffer = "t"} : memref<96xi8> to memref<16xf32>
// CHECK-NEXT:   func.call @mid(%t, %sram, %dram) : (memref<16xf32>, memref<96xi8>, memref<64xi8>) -> ()
// CHECK-NEXT:   func.call @pure(%in) : (memref<16xf32>) -> ()
// CHECK-NEXT:   func.return
pool.workspace @sram {size_bytes = 96 : i64}
pool.workspace @dram {size_bytes = 64 : i64}
func.func @leaf(%x: memref<16xf32>) {
  %s = usmp.allocate {pool = @sram, offset = 32 : i64} : memref<4x4xi32>
  %d = usmp.allocate {pool = @dram, offset = 0 : i64} : memref<16xf32>
  %c0 = arith.constant 0 : index
  %v = memref.load %x[%c0] : memref<16xf32>
  memref.store %v, %d[%c0] : memref<16xf32>
  func.return
}
func.func @mid(%x: memref<16xf32> {llvm.noalias}) {
  func.call @leaf(%x) : (memref<16xf32>) -> ()
  func.return
}
func.func @pure(%x: memref<16xf32>) {
  func.return
}
func.func @main(%in: memref<16xf32>) {
  %t = usmp.allocate {pool = @sram, offset = 0 : i64} : memref<16xf32>
  func.call @mid(%t) : (memref<16xf32>) -> ()
  func.call @pure(%in) : (memref<16xf32>) -> ()
  func.return
}

// -----

// A constant pool gets its packed bytes: each constant's little-endian element bytes at its
// offset (i1 as 0/1), zeros in the gaps (bytes print as signed i8: 0x80 is -128).
// CHECK: pool.constant @flash {size_bytes = 24 : i64, data = dense<[1, 0, 0, 0, 2, 0, 0, 0, 0, 0, 0, 0, 0, 0, -128, 63, 0, 0, 0, 64, 1, 0, 1, 0]> : tensor<24xi8>}
// CHECK-LABEL: func.func @main() {
// CHECK-NEXT:   %flash = pool.base @flash : memref<24xi8>
// CHECK-NEXT:   %a_offset = arith.constant 0 : index
// CHECK-NEXT:   %a = memref.view %flash[%a_offset][] {usmp.buffer = "a"} : memref<24xi8> to memref<2xi32>
// CHECK:        %f = memref.view %flash[%f_offset][] {usmp.buffer = "f"} : memref<24xi8> to memref<2xf32>
// CHECK:        %b = memref.view %flash[%b_offset][] {usmp.buffer = "b"} : memref<24xi8> to memref<4xi1>
pool.constant @flash {size_bytes = 24 : i64}
func.func @main() {
  %a = usmp.allocate_const {pool = @flash, offset = 0 : i64} dense<[1, 2]> : memref<2xi32>
  %f = usmp.allocate_const {alignment = 4 : i64, pool = @flash, offset = 12 : i64} dense<[1.0, 2.0]> : memref<2xf32>
  %b = usmp.allocate_const {alignment = 4 : i64, pool = @flash, offset = 20 : i64} dense<[true, false, true, false]> : memref<4xi1>
  func.return
}

// -----

// U4: the module records where each I/O tensor lives, in entry-argument order.
// CHECK: builtin.module attributes {usmp.io_allocations = [{name = "x", kind = "input", pool = @sram, offset = 16 : i64, type = memref<4xi8>}, {name = "y", kind = "output", pool = @sram, offset = 0 : i64, type = memref<4xi8>}]} {
// CHECK: %y = memref.view %sram[%y_offset][] {usmp.buffer = "y"} : memref<32xi8> to memref<4xi8>
// CHECK: %x = memref.view %sram[%x_offset][] {usmp.buffer = "x"} : memref<32xi8> to memref<4xi8>
pool.workspace @sram {size_bytes = 32 : i64}
func.func @main() {
  %y = usmp.allocate {usmp.io = "output", usmp.io_index = 1 : i64, pool = @sram, offset = 0 : i64} : memref<4xi8>
  %x = usmp.allocate {usmp.io = "input", usmp.io_index = 0 : i64, pool = @sram, offset = 16 : i64} : memref<4xi8>
  func.return
}
