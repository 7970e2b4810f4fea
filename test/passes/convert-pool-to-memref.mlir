// convert-pool-to-memref (SPEC §10): the planned program in upstream dialects only. Internal
// pools become private memref.globals (workspace: uninitialised; constant: its bytes) with the
// pool's alignment, external pools trailing i8 arguments of the entry in declaration order;
// views stay at their offsets; no pool./usmp. op or attribute is left.
// RUN: usmp-opt %s --split-input-file -p 'usmp,convert-pool-to-memref' | filecheck %s
// RUN: usmp-opt %s --split-input-file -p 'usmp,convert-pool-to-memref' | filecheck %s --check-prefix=NONE
// RUN: usmp-opt %s --split-input-file -p 'usmp,convert-pool-to-memref' --print-op-generic | usmp-opt --split-input-file | filecheck %s

// NONE-NOT: pool.
// NONE-NOT: usmp.

// Internal pools (U1's defaults): globals read with memref.get_global in the entry; callees
// keep taking the pool memory as arguments (without the pool.pool attribute); the entry's
// signature does not change.
// CHECK:       builtin.module {
// CHECK-NEXT:    memref.global "private" @global_workspace : memref<32xi8> = uninitialized {alignment = 16 : i64}
// CHECK-NEXT:    memref.global "private" constant @global_constant : memref<8xi8> = dense<[1, 0, 0, 0, 2, 0, 0, 0]> {alignment = 16 : i64}
// CHECK-LABEL:   func.func @scale(%x: memref<4xi32>, %y: memref<4xi32>, %global_workspace: memref<32xi8>) {
// CHECK-NEXT:      %tmp_offset = arith.constant 16 : index
// CHECK-NEXT:      %tmp = memref.view %global_workspace[%tmp_offset][] : memref<32xi8> to memref<4xi32>
// CHECK-LABEL:   func.func @main(%in: memref<4xi32>, %out: memref<4xi32>) {
// CHECK-NEXT:      %global_workspace = memref.get_global @global_workspace : memref<32xi8>
// CHECK-NEXT:      %global_constant = memref.get_global @global_constant : memref<8xi8>
// CHECK-NEXT:      %w_offset = arith.constant 0 : index
// CHECK-NEXT:      %w = memref.view %global_constant[%w_offset][] : memref<8xi8> to memref<2xi32>
// CHECK-NEXT:      %mid_offset = arith.constant 0 : index
// CHECK-NEXT:      %mid = memref.view %global_workspace[%mid_offset][] : memref<32xi8> to memref<4xi32>
// CHECK-NEXT:      func.call @scale(%in, %mid, %global_workspace) : (memref<4xi32>, memref<4xi32>, memref<32xi8>) -> ()
func.func @scale(%x: memref<4xi32>, %y: memref<4xi32>) {
  %tmp = usmp.allocate : memref<4xi32>
  "memref.copy"(%x, %tmp) : (memref<4xi32>, memref<4xi32>) -> ()
  "memref.copy"(%tmp, %y) : (memref<4xi32>, memref<4xi32>) -> ()
  func.return
}
func.func @main(%in: memref<4xi32>, %out: memref<4xi32> {usmp.io = "output"}) {
  %w = usmp.allocate_const dense<[1, 2]> : memref<2xi32>
  %mid = usmp.allocate : memref<4xi32>
  func.call @scale(%in, %mid) : (memref<4xi32>, memref<4xi32>) -> ()
  %c0 = arith.constant 0 : index
  %v = memref.load %w[%c0] : memref<2xi32>
  memref.store %v, %mid[%c0] : memref<4xi32>
  "memref.copy"(%mid, %out) : (memref<4xi32>, memref<4xi32>) -> ()
  func.return
}

// -----

// External pools become trailing entry arguments in declaration order (also @unused, which
// the program does not touch: the signature follows the declarations); an internal one with
// an alignment keeps it on its global; the external constant pool's bytes are @flash_data
// for the application to copy into it; target attributes go.
// CHECK:       builtin.module {
// CHECK-NEXT:    memref.global "private" @scratch : memref<16xi8> = uninitialized {alignment = 64 : i64}
// CHECK-NEXT:    memref.global constant @flash_data : memref<16xi8> = dense<[0, 0, -128, 63, 0, 0, -128, 63, 0, 0, -128, 63, 0, 0, -128, 63]> {alignment = 16 : i64}
// CHECK-LABEL:   func.func @main(%in: memref<4xf32>, %out: memref<4xf32>, %sram: memref<16xi8>, %unused: memref<0xi8>, %flash: memref<16xi8>) {
// CHECK-NEXT:      %scratch = memref.get_global @scratch : memref<16xi8>
// CHECK-NOT:       pool.base
pool.workspace @sram {size_hint_bytes = 1024 : i64}
pool.workspace @unused
pool.workspace @scratch {internal, alignment = 64 : i64}
pool.constant @flash
func.func @main(%in: memref<4xf32>, %out: memref<4xf32>) attributes {usmp.target = "c"} {
  %a = usmp.allocate {pools = [@sram]} : memref<4xf32>
  %b = usmp.allocate {pools = [@scratch]} : memref<4xf32>
  %k = usmp.allocate_const dense<1.0> : memref<4xf32>
  "memref.copy"(%in, %a) : (memref<4xf32>, memref<4xf32>) -> ()
  "memref.copy"(%a, %b) : (memref<4xf32>, memref<4xf32>) -> ()
  "memref.copy"(%k, %out) : (memref<4xf32>, memref<4xf32>) -> ()
  "memref.copy"(%b, %out) : (memref<4xf32>, memref<4xf32>) -> ()
  func.return
}

// -----

// Nothing to plan (every buffer is an argument): usmp leaves the pools unsized; the external
// pool is still an argument (0 bytes), the internal one gets no global.
// CHECK:       builtin.module {
// CHECK-NEXT:    func.func @main(%in: memref<4xf32>, %out: memref<4xf32>, %sram: memref<0xi8>) {
// CHECK-NEXT:      memref.copy %in, %out : memref<4xf32> to memref<4xf32>
// CHECK-NEXT:      func.return
// CHECK-NEXT:    }
// CHECK-NEXT:  }
pool.workspace @sram
pool.workspace @scratch {internal}
func.func @main(%in: memref<4xf32>, %out: memref<4xf32>) {
  "memref.copy"(%in, %out) : (memref<4xf32>, memref<4xf32>) -> ()
  func.return
}
