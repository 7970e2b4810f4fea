// RUN: usmp-opt %s -p usmp-import-memref --split-input-file --verify-diagnostics | filecheck %s
// (test/passes/test_frontend_passes.py checks that the output parses back unchanged.)

// Static allocations become usmp.allocate with the same name and alignment; their deallocs go,
// also through a memref.cast; a dealloc of anything else stays.

// CHECK-LABEL: func.func @allocs(%x: memref<16xi8>)
// CHECK-NEXT:    %a = usmp.allocate : memref<1x16xi8>
// CHECK-NEXT:    %b = usmp.allocate {alignment = 64 : i64} : memref<256xf32>
// CHECK-NEXT:    %c = memref.cast %a : memref<1x16xi8> to memref<?x16xi8>
// CHECK-NEXT:    %d = usmp.allocate : memref<2x3xindex, 1 : i64>
// CHECK-NEXT:    %0 = usmp.allocate : memref<i32>
// CHECK-NEXT:    %k = arith.constant 7 : i32
// CHECK-NEXT:    memref.store %k, %0[] : memref<i32>
// CHECK-NEXT:    memref.dealloc %x : memref<16xi8>
// CHECK-NEXT:    func.return
func.func @allocs(%x: memref<16xi8>) {
  %a = memref.alloc() : memref<1x16xi8>
  %b = memref.alloca() {alignment = 64 : i64} : memref<256xf32>
  %c = "memref.cast"(%a) : (memref<1x16xi8>) -> memref<?x16xi8>
  %d = memref.alloc() : memref<2x3xindex, 1 : i64>
  %0 = memref.alloca() : memref<i32>
  %k = arith.constant 7 : i32
  memref.store %k, %0[] : memref<i32>
  memref.dealloc %c : memref<?x16xi8>
  memref.dealloc %b : memref<256xf32>
  memref.dealloc %d : memref<2x3xindex, 1 : i64>
  memref.dealloc %x : memref<16xi8>
  func.return
}

// Nested regions are imported too.

// CHECK-LABEL: func.func @nested
// CHECK:         scf.for
// CHECK-NEXT:      %t = usmp.allocate : memref<8xf32>
// CHECK-NEXT:    }
func.func @nested(%n: index) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  scf.for %i = %c0 to %n step %c1 {
    %t = memref.alloc() : memref<8xf32>
    memref.dealloc %t : memref<8xf32>
  }
  func.return
}

// -----

// Constant globals: each memref.get_global becomes a usmp.allocate_const holding the data
// re-typed to the memref type (splats stay splats, the global's alignment is kept). Private
// globals left without references are erased; a public one, a mutable one and an
// uninitialised constant (`initial_value` unit) stay. (The output is upstream's custom syntax.)

// CHECK:       builtin.module {
// CHECK-NEXT:    memref.global constant @pub : memref<2xi8> = dense<[1, 2]>
// CHECK-NEXT:    memref.global "private" @state : memref<4xi8> = dense<0>
// CHECK-NEXT:    memref.global "private" constant @external : memref<4xi8> = uninitialized
// CHECK-NEXT:    memref.global "private" constant @kept : memref<2xi8> = dense<3>
// CHECK-NEXT:    "test.op"() {ref = [@kept]} : () -> ()
// CHECK-LABEL:   func.func @constants()
// CHECK-NEXT:      %w = usmp.allocate_const dense<[1, 2, 3]> : memref<3xi32>
// CHECK-NEXT:      %w2 = usmp.allocate_const dense<[1, 2, 3]> : memref<3xi32>
// CHECK-NEXT:      %s = usmp.allocate_const {alignment = 64 : i64} dense<1.000000e+00> : memref<2x2xf32>
// CHECK-NEXT:      %m = usmp.allocate_const dense<{{\[}}[1.500000e+00, 2.500000e+00]]> : memref<1x2xf16>
// CHECK-NEXT:      %h = usmp.allocate_const dense<"0x{{[0-9A-F]+}}"> : memref<128xi8>
// CHECK-NEXT:      %p = usmp.allocate_const dense<[1, 2]> : memref<2xi8>
// CHECK-NEXT:      %k = usmp.allocate_const dense<3> : memref<2xi8>
// CHECK-NEXT:      %st = memref.get_global @state : memref<4xi8>
// CHECK-NEXT:      %e = memref.get_global @external : memref<4xi8>
// CHECK-NEXT:      func.return
"memref.global"() <{sym_name = "w", sym_visibility = "private", type = memref<3xi32>, initial_value = dense<[1, 2, 3]> : tensor<3xi32>, constant}> : () -> ()
"memref.global"() <{sym_name = "s", sym_visibility = "private", type = memref<2x2xf32>, initial_value = dense<1.0> : tensor<2x2xf32>, constant, alignment = 64 : i64}> : () -> ()
"memref.global"() <{sym_name = "m", sym_visibility = "private", type = memref<1x2xf16>, initial_value = dense<[[1.5, 2.5]]> : tensor<1x2xf16>, constant}> : () -> ()
"memref.global"() <{sym_name = "h", sym_visibility = "private", type = memref<128xi8>, initial_value = dense<"0x000102030405060708090A0B0C0D0E0F101112131415161718191A1B1C1D1E1F202122232425262728292A2B2C2D2E2F303132333435363738393A3B3C3D3E3F404142434445464748494A4B4C4D4E4F505152535455565758595A5B5C5D5E5F606162636465666768696A6B6C6D6E6F707172737475767778797A7B7C7D7E7F"> : tensor<128xi8>, constant}> : () -> ()
"memref.global"() <{sym_name = "pub", sym_visibility = "public", type = memref<2xi8>, initial_value = dense<[1, 2]> : tensor<2xi8>, constant}> : () -> ()
"memref.global"() <{sym_name = "state", sym_visibility = "private", type = memref<4xi8>, initial_value = dense<0> : tensor<4xi8>}> : () -> ()
"memref.global"() <{sym_name = "external", sym_visibility = "private", type = memref<4xi8>, initial_value, constant}> : () -> ()
"memref.global"() <{sym_name = "kept", sym_visibility = "private", type = memref<2xi8>, initial_value = dense<3> : tensor<2xi8>, constant}> : () -> ()
"test.op"() {ref = [@kept]} : () -> ()
func.func @constants() {
  %w = memref.get_global @w : memref<3xi32>
  %w2 = memref.get_global @w : memref<3xi32>
  %s = memref.get_global @s : memref<2x2xf32>
  %m = memref.get_global @m : memref<1x2xf16>
  %h = memref.get_global @h : memref<128xi8>
  %p = memref.get_global @pub : memref<2xi8>
  %k = memref.get_global @kept : memref<2xi8>
  %st = memref.get_global @state : memref<4xi8>
  %e = memref.get_global @external : memref<4xi8>
  func.return
}

// -----

// CHECK:      {{^//}} {{-----$}}
// CHECK-NEXT: cannot import memref.alloc %a: {{.*}}memref<?xf32>{{.*}}dynamic shape; the planner needs static shapes and the identity layout
func.func @dynamic(%n: index) {
  %a = memref.alloc(%n) : memref<?xf32>
  func.return
}

// -----

// CHECK:      {{^//}} {{-----$}}
// CHECK-NEXT: cannot import memref.alloca %s: {{.*}}memref<4xf32, strided<[2]>>{{.*}}identity layout; the planner needs static shapes and the identity layout
func.func @strided() {
  %s = memref.alloca() : memref<4xf32, strided<[2]>>
  func.return
}

// -----

// CHECK:      {{^//}} {{-----$}}
// CHECK-NEXT: memref.get_global of @w returns memref<4xi32> but the global has type memref<3xi32>
"memref.global"() <{sym_name = "w", sym_visibility = "private", type = memref<3xi32>, initial_value = dense<[1, 2, 3]> : tensor<3xi32>, constant}> : () -> ()
func.func @mismatch() {
  %w = memref.get_global @w : memref<4xi32>
  func.return
}

// -----

// CHECK:      {{^//}} {{-----$}}
// CHECK-NEXT: cannot import memref.alloc %z: {{.*}}unsupported element type complex<f32>; the planner needs static shapes and the identity layout
func.func @complex() {
  %z = memref.alloc() : memref<4xcomplex<f32>>
  func.return
}

// -----

// CHECK:      {{^//}} {{-----$}}
// CHECK-NEXT: the initial value of constant global @short (tensor<2xi32>) does not fit its type memref<3xi32>
"memref.global"() <{sym_name = "short", sym_visibility = "private", type = memref<3xi32>, initial_value = dense<[1, 2]> : tensor<2xi32>, constant}> : () -> ()
func.func @short_data() {
  %w = memref.get_global @short : memref<3xi32>
  func.return
}

// -----

// A mutable global marked usmp.state: its one read becomes the state buffer, holding the
// global's initial value; a plain mutable global is left alone.
// CHECK-LABEL: func.func @state_main
// CHECK-NEXT:    %h = usmp.allocate_state {usmp.tensor = "hidden"} dense<[3, 4]> : memref<2xi16>
// CHECK-NEXT:    %g = memref.get_global @plain : memref<2xi16>
// CHECK-NOT:   memref.global "private" @h
memref.global "private" @h : memref<2xi16> = dense<[3, 4]> {usmp.state, usmp.tensor = "hidden"}
memref.global "private" @plain : memref<2xi16> = dense<0>
func.func @state_step(%s: memref<2xi16>, %g: memref<2xi16>) {
  func.return
}
func.func @state_main() {
  %h = memref.get_global @h : memref<2xi16>
  %g = memref.get_global @plain : memref<2xi16>
  func.call @state_step(%h, %g) : (memref<2xi16>, memref<2xi16>) -> ()
  func.return
}

// -----

memref.global "private" @twice : memref<2xf32> = dense<0.0> {usmp.state}
func.func @read_twice() {
  %a = memref.get_global @twice : memref<2xf32>
  // expected-error @+1 {{state global @twice is read by a second memref.get_global: pass the first one's memref to the functions that need the state}}
  %b = memref.get_global @twice : memref<2xf32>
  func.return
}
