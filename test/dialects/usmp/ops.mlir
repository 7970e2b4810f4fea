// RUN: USMP_ROUNDTRIP
// RUN: USMP_GENERIC_ROUNDTRIP
// RUN: usmp-opt %s --split-input-file --print-op-generic | filecheck %s --check-prefix=GENERIC
// A stock xdsl-opt knows the dialects through the xdsl.universe entry point.
// RUN: xdsl-opt %s --split-input-file | xdsl-opt --split-input-file | filecheck %s

pool.workspace @sram {size_hint_bytes = 65536 : i64, targets = ["c"]}
pool.workspace @dram {targets = ["c", "accel"], internal}
pool.constant @flash {targets = ["c"]}

func.func @allocate() {
  %a = usmp.allocate : memref<1x16x16x8xi8>
  %b = usmp.allocate {alignment = 64 : i64, pools = [@sram, @dram]} : memref<256xf32>
  %c = usmp.allocate {pools = [@dram]} : memref<f64>
  %d = usmp.allocate {usmp.note = "discardable"} : memref<3x5xi1>
  %e = usmp.allocate : memref<2xindex>
  func.return
}

// CHECK:      pool.workspace @sram {size_hint_bytes = 65536 : i64, targets = ["c"]}
// CHECK-NEXT: pool.workspace @dram {targets = ["c", "accel"], internal}
// CHECK-NEXT: pool.constant @flash {targets = ["c"]}
// CHECK-LABEL: func.func @allocate() {
// CHECK-NEXT:   %a = usmp.allocate : memref<1x16x16x8xi8>
// CHECK-NEXT:   %b = usmp.allocate {alignment = 64 : i64, pools = [@sram, @dram]} : memref<256xf32>
// CHECK-NEXT:   %c = usmp.allocate {pools = [@dram]} : memref<f64>
// CHECK-NEXT:   %d = usmp.allocate {usmp.note = "discardable"} : memref<3x5xi1>
// CHECK-NEXT:   %e = usmp.allocate : memref<2xindex>

// GENERIC:      "pool.workspace"() <{sym_name = "sram", size_hint_bytes = 65536 : i64, targets = ["c"]}> : () -> ()
// GENERIC:      %a = "usmp.allocate"() : () -> memref<1x16x16x8xi8>
// GENERIC-NEXT: %b = "usmp.allocate"() <{alignment = 64 : i64, pools = [@sram, @dram]}> : () -> memref<256xf32>
// GENERIC-NEXT: %c = "usmp.allocate"() <{pools = [@dram]}> : () -> memref<f64>
// GENERIC-NEXT: %d = "usmp.allocate"() {usmp.note = "discardable"} : () -> memref<3x5xi1>
// GENERIC-NEXT: %e = "usmp.allocate"() : () -> memref<2xindex>

// -----

pool.constant @flash

func.func @allocate_const() {
  %w = usmp.allocate_const dense<[1, 2, 3]> : memref<3xi32>
  %v = usmp.allocate_const {alignment = 32 : i64} dense<"0x0000803F00000040"> : memref<2xf32>
  %s = usmp.allocate_const dense<7> : memref<2x2xi8>
  %m = usmp.allocate_const {pools = [@flash], usmp.note = "weights"} dense<[[1, 2], [3, 4]]> : memref<2x2xi16>
  %h = usmp.allocate_const dense<"0x000102030405060708090A0B0C0D0E0F101112131415161718191A1B1C1D1E1F202122232425262728292A2B2C2D2E2F303132333435363738393A3B3C3D3E3F404142434445464748494A4B4C4D4E4F505152535455565758595A5B5C5D5E5F606162636465666768696A6B6C6D6E6F707172737475767778797A7B7C7D7E7F"> : memref<128xi8>
  %f = usmp.allocate_const dense<[1.5, -2.0]> : memref<2xf64>
  func.return
}

// CHECK-LABEL: func.func @allocate_const() {
// CHECK-NEXT:   %w = usmp.allocate_const dense<[1, 2, 3]> : memref<3xi32>
// CHECK-NEXT:   %v = usmp.allocate_const {alignment = 32 : i64} dense<[1.000000e+00, 2.000000e+00]> : memref<2xf32>
// CHECK-NEXT:   %s = usmp.allocate_const dense<7> : memref<2x2xi8>
// CHECK-NEXT:   %m = usmp.allocate_const {usmp.note = "weights", pools = [@flash]} dense<{{\[\[}}1, 2], [3, 4]]> : memref<2x2xi16>
// CHECK-NEXT:   %h = usmp.allocate_const dense<"0x000102030405060708090A0B0C0D0E0F101112131415161718191A1B1C1D1E1F202122232425262728292A2B2C2D2E2F303132333435363738393A3B3C3D3E3F404142434445464748494A4B4C4D4E4F505152535455565758595A5B5C5D5E5F606162636465666768696A6B6C6D6E6F707172737475767778797A7B7C7D7E7F"> : memref<128xi8>
// CHECK-NEXT:   %f = usmp.allocate_const dense<[1.500000e+00, -2.000000e+00]> : memref<2xf64>

// GENERIC-LABEL: sym_name = "allocate_const"
// GENERIC:      %w = "usmp.allocate_const"() <{value = dense<[1, 2, 3]> : memref<3xi32>}> : () -> memref<3xi32>
// GENERIC-NEXT: %v = "usmp.allocate_const"() <{alignment = 32 : i64, value = dense<[1.000000e+00, 2.000000e+00]> : memref<2xf32>}> : () -> memref<2xf32>
// GENERIC-NEXT: %s = "usmp.allocate_const"() <{value = dense<7> : memref<2x2xi8>}> : () -> memref<2x2xi8>
// GENERIC-NEXT: %m = "usmp.allocate_const"() <{pools = [@flash], value = dense<{{\[\[}}1, 2], [3, 4]]> : memref<2x2xi16>}> {usmp.note = "weights"} : () -> memref<2x2xi16>
// GENERIC-NEXT: %h = "usmp.allocate_const"() <{value = dense<"0x000102030405060708090A0B0C0D0E0F101112131415161718191A1B1C1D1E1F202122232425262728292A2B2C2D2E2F303132333435363738393A3B3C3D3E3F404142434445464748494A4B4C4D4E4F505152535455565758595A5B5C5D5E5F606162636465666768696A6B6C6D6E6F707172737475767778797A7B7C7D7E7F"> : memref<128xi8>}> : () -> memref<128xi8>

// -----

// Planned allocations carry their pool and their offset in it.
pool.workspace @sram {size_bytes = 1088 : i64}
pool.workspace @dram
pool.constant @flash {size_bytes = 12 : i64}

func.func @planned() {
  %a = usmp.allocate {pool = @sram, offset = 64 : i64} : memref<256xf32>
  %b = usmp.allocate {alignment = 64 : i64, pools = [@sram, @dram], pool = @dram, offset = 128 : i64} : memref<16xi8>
  %c = usmp.allocate {pool = @sram} : memref<16xi8>
  %w = usmp.allocate_const {pool = @flash, offset = 0 : i64} dense<[1, 2, 3]> : memref<3xi32>
  func.return
}

// CHECK-LABEL: func.func @planned() {
// CHECK-NEXT:   %a = usmp.allocate {pool = @sram, offset = 64 : i64} : memref<256xf32>
// CHECK-NEXT:   %b = usmp.allocate {alignment = 64 : i64, pools = [@sram, @dram], pool = @dram, offset = 128 : i64} : memref<16xi8>
// CHECK-NEXT:   %c = usmp.allocate {pool = @sram} : memref<16xi8>
// CHECK-NEXT:   %w = usmp.allocate_const {pool = @flash, offset = 0 : i64} dense<[1, 2, 3]> : memref<3xi32>

// GENERIC-LABEL: sym_name = "planned"
// GENERIC:      %a = "usmp.allocate"() <{pool = @sram, offset = 64 : i64}> : () -> memref<256xf32>
// GENERIC-NEXT: %b = "usmp.allocate"() <{alignment = 64 : i64, pools = [@sram, @dram], pool = @dram, offset = 128 : i64}> : () -> memref<16xi8>
// GENERIC-NEXT: %c = "usmp.allocate"() <{pool = @sram}> : () -> memref<16xi8>
// GENERIC-NEXT: %w = "usmp.allocate_const"() <{pool = @flash, offset = 0 : i64, value = dense<[1, 2, 3]> : memref<3xi32>}> : () -> memref<3xi32>

// -----

// Pools are looked up in the nearest enclosing module.
builtin.module {
  pool.workspace @inner
  func.func @nested() {
    %a = usmp.allocate {pools = [@inner]} : memref<4xi8>
    func.return
  }
}

// CHECK:      builtin.module {
// CHECK-NEXT:   pool.workspace @inner
// CHECK-NEXT:   func.func @nested() {
// CHECK-NEXT:     %a = usmp.allocate {pools = [@inner]} : memref<4xi8>

// GENERIC: "pool.workspace"() <{sym_name = "inner"}> : () -> ()
// GENERIC: %a = "usmp.allocate"() <{pools = [@inner]}> : () -> memref<4xi8>
