// RUN: USMP_VERIFY_DIAG | filecheck %s

// Every diagnostic of the pool dialect, one chunk each.

pool.workspace @sram {size_hint_bytes = "big"}
// CHECK: Operation does not verify: 'size_hint_bytes' must be an integer of type i64 (e.g. 64 : i64), got "big"

// -----

pool.constant @flash {alignment = 16 : i32}
// CHECK: Operation does not verify: 'alignment' must be an integer of type i64 (e.g. 64 : i64), got 16 : i32

// -----

pool.workspace @sram {targets = [1]}
// CHECK: Operation does not verify: 'targets' must be an array of target names (e.g. ["c"]), got [1 : i64]

// -----

pool.workspace @sram {targets = "c"}
// CHECK: Operation does not verify: 'targets' must be an array of target names (e.g. ["c"]), got "c"

// -----

pool.workspace @sram {internal = true}
// CHECK: Operation does not verify: 'internal' must be a unit attribute (just `internal`), got true

// -----

pool.workspace @sram {target_burst_bytes = [8]}
// CHECK: Operation does not verify: 'target_burst_bytes' must be a dictionary like {c = 8 : i64}, got [8 : i64]

// -----

pool.constant @flash {data = [1, 2]}
// CHECK: Operation does not verify: 'data' must be a dense literal (e.g. dense<"0x01"> : tensor<1xi8>), got [1 : i64, 2 : i64]

// -----

pool.workspace @sram {size_hint_bytes = -1 : i64}
// CHECK: Operation does not verify: pool @sram: size_hint_bytes must be >= 0, got -1

// -----

pool.workspace @sram {size_bytes = -8 : i64}
// CHECK: Operation does not verify: pool @sram: size_bytes must be >= 0, got -8

// -----

pool.workspace @sram {alignment = 0 : i64}
// CHECK: Operation does not verify: pool @sram: alignment must be >= 1, got 0

// -----

pool.workspace @sram {alignment = -16 : i64}
// CHECK: Operation does not verify: pool @sram: alignment must be >= 1, got -16

// -----

pool.workspace @sram {clock_frequency_hz = 0 : i64}
// CHECK: Operation does not verify: pool @sram: clock_frequency_hz must be >= 1, got 0

// -----

pool.workspace @sram {read_bandwidth_bytes_per_cycle = 0 : i64}
// CHECK: Operation does not verify: pool @sram: read_bandwidth_bytes_per_cycle must be >= 1, got 0

// -----

pool.workspace @sram {write_bandwidth_bytes_per_cycle = -4 : i64}
// CHECK: Operation does not verify: pool @sram: write_bandwidth_bytes_per_cycle must be >= 1, got -4

// -----

pool.workspace @sram {read_latency_cycles = -1 : i64}
// CHECK: Operation does not verify: pool @sram: read_latency_cycles must be >= 0, got -1

// -----

pool.constant @flash {write_latency_cycles = -2 : i64}
// CHECK: Operation does not verify: pool @flash: write_latency_cycles must be >= 0, got -2

// -----

pool.workspace @sram {alignment = 24 : i64}
// CHECK: Operation does not verify: pool @sram: alignment 24 is not a power of two

// -----

pool.workspace @sram {targets = []}
// CHECK: Operation does not verify: pool @sram: targets must not be empty

// -----

pool.workspace @sram {targets = ["c", ""]}
// CHECK: Operation does not verify: pool @sram: a target name must not be empty

// -----

pool.workspace @sram {targets = ["c", "accel", "c"]}
// CHECK: Operation does not verify: pool @sram: target 'c' is listed twice

// -----

pool.workspace @sram {targets = ["c"], target_burst_bytes = {accel = 8 : i64}}
// CHECK: Operation does not verify: pool @sram: target_burst_bytes names 'accel', which is not one of its targets ["c"]

// -----

pool.workspace @sram {target_burst_bytes = {c = 0 : i64}}
// CHECK: Operation does not verify: pool @sram: target_burst_bytes for 'c' must be a positive integer, got 0 : i64

// -----

pool.workspace @sram {target_burst_bytes = {c = "wide"}}
// CHECK: Operation does not verify: pool @sram: target_burst_bytes for 'c' must be a positive integer, got "wide"

// -----

pool.workspace @sram {size_hint_bytes = 1024 : i64, size_bytes = 2048 : i64}
// CHECK: Operation does not verify: pool @sram: size_bytes 2048 exceeds size_hint_bytes 1024

// -----

pool.workspace @sram
pool.constant @sram
// CHECK: Operation does not verify: pool @sram is declared twice

// -----

func.func @sram() {
  func.return
}
pool.workspace @sram
// CHECK: Operation does not verify: pool @sram: symbol @sram is already a 'func.func'

// -----

func.func @main() {
  pool.workspace @sram
  func.return
}
// CHECK: Operation does not verify: pool @sram must be declared at module level, not inside 'func.func'

// -----

pool.constant @flash {data = dense<[1, 2]> : tensor<2xi32>}
// CHECK: Operation does not verify: pool @flash: data must be a 1-D dense attribute of i8, got tensor<2xi32>

// -----

pool.constant @flash {data = dense<[[1, 2]]> : tensor<1x2xi8>}
// CHECK: Operation does not verify: pool @flash: data must be a 1-D dense attribute of i8, got tensor<1x2xi8>

// -----

pool.constant @flash {size_bytes = 3 : i64, data = dense<[1, 2]> : tensor<2xi8>}
// CHECK: Operation does not verify: pool @flash: data holds 2 bytes but size_bytes is 3

// -----

%base = pool.base @nope : memref<16xi8>
// CHECK: Operation does not verify: pool @nope does not name a pool

// -----

func.func @main() {
  %base = pool.base @main : memref<16xi8>
  func.return
}
// CHECK: Operation does not verify: pool @main is not a pool (it is a 'func.func')

// -----

pool.workspace @sram
%base = pool.base @sram::@inner : memref<16xi8>
// CHECK: Operation does not verify: pool @sram::@inner must be a flat symbol reference like @sram

// -----

%base = "pool.base"() <{pool = "sram"}> : () -> memref<16xi8>
// CHECK: Operation does not verify: 'pool' must be a pool symbol (e.g. @sram), got "sram"

// -----

pool.workspace @sram {size_bytes = 1024 : i64}
%base = pool.base @sram : memref<512xi8>
// CHECK: Operation does not verify: pool.base of @sram returns memref<512xi8>, but the pool's size_bytes is 1024

// -----

pool.workspace @sram
%base = pool.base @sram : memref<16xi32>
// CHECK: Operation does not verify: pool.base of @sram must return a statically sized 1-D memref of i8 with identity layout (e.g. memref<1024xi8>), got memref<16xi32>

// -----

pool.workspace @sram
%base = pool.base @sram : memref<4x4xi8>
// CHECK: Operation does not verify: pool.base of @sram must return a statically sized 1-D memref of i8 with identity layout (e.g. memref<1024xi8>), got memref<4x4xi8>

// -----

pool.workspace @sram
%base = pool.base @sram : memref<?xi8>
// CHECK: Operation does not verify: pool.base of @sram must return a statically sized 1-D memref of i8 with identity layout (e.g. memref<1024xi8>), got memref<?xi8>

// -----

pool.workspace @sram
%base = pool.base @sram : memref<16xi8, strided<[2]>>
// CHECK: Operation does not verify: pool.base of @sram must return a statically sized 1-D memref of i8 with identity layout (e.g. memref<1024xi8>), got memref<16xi8, strided<[2]>>

// -----

pool.workspace @sram
%base = pool.base @sram : tensor<16xi8>
// CHECK: Operation does not verify: pool.base of @sram must return a statically sized 1-D memref of i8 with identity layout (e.g. memref<1024xi8>), got tensor<16xi8>

// -----

pool.workspace @sram {internal, section = 7 : i64}
// CHECK: Operation does not verify: 'section' must be a string (e.g. ".dtcm"), got 7 : i64

// -----

pool.workspace @sram {internal, section = "my section"}
// CHECK: Operation does not verify: pool @sram: section 'my section' is not a linker section name (letters, digits, '_', '.', '$', not empty)

// -----

pool.constant @flash {section = ".flash_weights"}
// CHECK: Operation does not verify: pool @flash: section needs an internal pool (the application defines an external pool's memory and places it itself)
