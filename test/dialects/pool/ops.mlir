// RUN: USMP_ROUNDTRIP
// RUN: USMP_GENERIC_ROUNDTRIP
// RUN: usmp-opt %s --split-input-file --print-op-generic | filecheck %s --check-prefix=GENERIC

// Pool declarations with each property.
pool.workspace @sram {size_hint_bytes = 65536 : i64, targets = ["c"]}
pool.workspace @dram {targets = ["c", "accel"], internal}
pool.workspace @plain
pool.workspace @fast {alignment = 64 : i64, clock_frequency_hz = 1000000000 : i64, read_bandwidth_bytes_per_cycle = 16 : i64, write_bandwidth_bytes_per_cycle = 8 : i64, read_latency_cycles = 2 : i64, write_latency_cycles = 3 : i64, target_burst_bytes = {c = 8 : i64}}
pool.constant @flash {targets = ["c"]}
pool.constant @rom {internal, size_hint_bytes = 0 : i64}
pool.workspace @dtcm {internal, section = ".dtcm"}

// CHECK:      pool.workspace @sram {size_hint_bytes = 65536 : i64, targets = ["c"]}
// CHECK-NEXT: pool.workspace @dram {targets = ["c", "accel"], internal}
// CHECK-NEXT: pool.workspace @plain
// CHECK-NEXT: pool.workspace @fast {alignment = 64 : i64, clock_frequency_hz = 1000000000 : i64, read_bandwidth_bytes_per_cycle = 16 : i64, write_bandwidth_bytes_per_cycle = 8 : i64, read_latency_cycles = 2 : i64, write_latency_cycles = 3 : i64, target_burst_bytes = {c = 8 : i64}}
// CHECK-NEXT: pool.constant @flash {targets = ["c"]}
// CHECK-NEXT: pool.constant @rom {internal, size_hint_bytes = 0 : i64}
// CHECK-NEXT: pool.workspace @dtcm {internal, section = ".dtcm"}

// GENERIC:      "pool.workspace"() <{sym_name = "sram", size_hint_bytes = 65536 : i64, targets = ["c"]}> : () -> ()
// GENERIC-NEXT: "pool.workspace"() <{sym_name = "dram", targets = ["c", "accel"], internal}> : () -> ()
// GENERIC-NEXT: "pool.workspace"() <{sym_name = "plain"}> : () -> ()
// GENERIC-NEXT: "pool.workspace"() <{sym_name = "fast", alignment = 64 : i64, clock_frequency_hz = 1000000000 : i64, read_bandwidth_bytes_per_cycle = 16 : i64, write_bandwidth_bytes_per_cycle = 8 : i64, read_latency_cycles = 2 : i64, write_latency_cycles = 3 : i64, target_burst_bytes = {c = 8 : i64}}> : () -> ()
// GENERIC-NEXT: "pool.constant"() <{sym_name = "flash", targets = ["c"]}> : () -> ()
// GENERIC-NEXT: "pool.constant"() <{sym_name = "rom", internal, size_hint_bytes = 0 : i64}> : () -> ()
// GENERIC-NEXT: "pool.workspace"() <{sym_name = "dtcm", internal, section = ".dtcm"}> : () -> ()

// -----

// After planning: sizes, the packed bytes of a constant pool, and the ops that reach pool memory.
pool.workspace @sram {size_hint_bytes = 65536 : i64, size_bytes = 1024 : i64}
pool.constant @flash {size_bytes = 4 : i64, data = dense<[1, 2, 3, 4]> : tensor<4xi8>}
pool.constant @weights {size_bytes = 128 : i64, data = dense<"0x000102030405060708090A0B0C0D0E0F101112131415161718191A1B1C1D1E1F202122232425262728292A2B2C2D2E2F303132333435363738393A3B3C3D3E3F404142434445464748494A4B4C4D4E4F505152535455565758595A5B5C5D5E5F606162636465666768696A6B6C6D6E6F707172737475767778797A7B7C7D7E7F"> : tensor<128xi8>}

func.func @main() {
  %sram = pool.base @sram : memref<1024xi8>
  %flash = pool.base @flash : memref<4xi8>
  func.call @op(%sram) : (memref<1024xi8>) -> ()
  func.return
}
func.func @op(%sram: memref<1024xi8> {pool.pool = @sram}) {
  %off = arith.constant 64 : index
  %a = memref.view %sram[%off][] {usmp.buffer = "a"} : memref<1024xi8> to memref<16xf32>
  func.return
}

// CHECK:      pool.workspace @sram {size_hint_bytes = 65536 : i64, size_bytes = 1024 : i64}
// CHECK-NEXT: pool.constant @flash {size_bytes = 4 : i64, data = dense<[1, 2, 3, 4]> : tensor<4xi8>}
// CHECK-NEXT: pool.constant @weights {size_bytes = 128 : i64, data = dense<"0x000102030405060708090A0B0C0D0E0F101112131415161718191A1B1C1D1E1F202122232425262728292A2B2C2D2E2F303132333435363738393A3B3C3D3E3F404142434445464748494A4B4C4D4E4F505152535455565758595A5B5C5D5E5F606162636465666768696A6B6C6D6E6F707172737475767778797A7B7C7D7E7F"> : tensor<128xi8>}
// CHECK-LABEL: func.func @main() {
// CHECK-NEXT:   %sram = pool.base @sram : memref<1024xi8>
// CHECK-NEXT:   %flash = pool.base @flash : memref<4xi8>
// CHECK-LABEL: func.func @op(%sram: memref<1024xi8> {pool.pool = @sram}) {
// CHECK:        %a = memref.view %sram[%off][] {usmp.buffer = "a"} : memref<1024xi8> to memref<16xf32>

// GENERIC:      "pool.constant"() <{sym_name = "flash", size_bytes = 4 : i64, data = dense<[1, 2, 3, 4]> : tensor<4xi8>}> : () -> ()
// GENERIC:      %sram = "pool.base"() <{pool = @sram}> : () -> memref<1024xi8>
// GENERIC-NEXT: %flash = "pool.base"() <{pool = @flash}> : () -> memref<4xi8>
