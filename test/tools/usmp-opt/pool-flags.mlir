// The pool flags of SPEC §6 declare pools at the start of the module, before any pass runs.

// One external workspace pool with default targets: U2.
// RUN: usmp-opt %s --workspace-pools=sram | filecheck %s --check-prefix=ONE --match-full-lines
// ONE:      builtin.module {
// ONE-NEXT:   pool.workspace @sram {targets = ["c"]}
// ONE-NEXT:   func.func @main() {

// Every property of a workspace pool, several targets for one pool, repeated flags, and the
// preference order of --workspace-pools; dram is internal, sram external.
// RUN: usmp-opt %s --workspace-pools=sram,dram --workspace-pools-targets=sram:c,dram:c \
// RUN:   --workspace-pools-targets=dram:accel \
// RUN:   --workspace-pools-size-hint-bytes=sram:65536 --workspace-pools-size-hint-bytes=dram:1048576 \
// RUN:   --workspace-pools-clock-frequency-hz=sram:200000000 \
// RUN:   --workspace-pools-read-bandwidth-bytes-per-cycle=sram:8,dram:4 \
// RUN:   --workspace-pools-write-bandwidth-bytes-per-cycle=sram:16 \
// RUN:   --workspace-pools-read-latency-cycles=sram:0,dram:40 \
// RUN:   --workspace-pools-write-latency-cycles=dram:50 \
// RUN:   --workspace-pools-target-burst-bytes=sram:c:8,dram:accel:64 \
// RUN:   --workspace-pools-target-burst-bytes=dram:c:32 \
// RUN:   --internal-pools=dram \
// RUN: | filecheck %s --check-prefix=WS --match-full-lines
// WS:      builtin.module {
// WS-NEXT:   pool.workspace @sram {targets = ["c"], size_hint_bytes = 65536 : i64, clock_frequency_hz = 200000000 : i64, read_bandwidth_bytes_per_cycle = 8 : i64, write_bandwidth_bytes_per_cycle = 16 : i64, read_latency_cycles = 0 : i64, target_burst_bytes = {c = 8 : i64}}
// WS-NEXT:   pool.workspace @dram {targets = ["c", "accel"], size_hint_bytes = 1048576 : i64, read_bandwidth_bytes_per_cycle = 4 : i64, read_latency_cycles = 40 : i64, write_latency_cycles = 50 : i64, target_burst_bytes = {accel = 64 : i64, c = 32 : i64}, internal}
// WS-NEXT:   func.func @main() {

// The same set of properties for constant pools, next to a workspace pool (workspace pools
// come first); flash is external, rom internal.
// RUN: usmp-opt %s --constant-pools=flash --constant-pools=rom --workspace-pools=sram \
// RUN:   --constant-pools-targets=flash:c,flash:npu,rom:npu \
// RUN:   --constant-pools-size-hint-bytes=flash:4096 \
// RUN:   --constant-pools-clock-frequency-hz=flash:100000000 \
// RUN:   --constant-pools-read-bandwidth-bytes-per-cycle=flash:2 \
// RUN:   --constant-pools-write-bandwidth-bytes-per-cycle=rom:1 \
// RUN:   --constant-pools-read-latency-cycles=rom:3 \
// RUN:   --constant-pools-write-latency-cycles=flash:7 \
// RUN:   --constant-pools-target-burst-bytes=flash:npu:16 \
// RUN:   --internal-pools=rom \
// RUN: | filecheck %s --check-prefix=CONST --match-full-lines
// CONST:      builtin.module {
// CONST-NEXT:   pool.workspace @sram {targets = ["c"]}
// CONST-NEXT:   pool.constant @flash {targets = ["c", "npu"], size_hint_bytes = 4096 : i64, clock_frequency_hz = 100000000 : i64, read_bandwidth_bytes_per_cycle = 2 : i64, write_latency_cycles = 7 : i64, target_burst_bytes = {npu = 16 : i64}}
// CONST-NEXT:   pool.constant @rom {targets = ["npu"], write_bandwidth_bytes_per_cycle = 1 : i64, read_latency_cycles = 3 : i64, internal}
// CONST-NEXT:   func.func @main() {

// The pools are properties, not discardable attributes: the generic form shows them in <{...}>.
// RUN: usmp-opt %s --workspace-pools=sram --workspace-pools-size-hint-bytes=sram:1024 \
// RUN:   --workspace-pools-target-burst-bytes=sram:c:4 --internal-pools=sram --print-op-generic \
// RUN: | filecheck %s --check-prefix=GENERIC
// GENERIC: "pool.workspace"() <{sym_name = "sram", targets = ["c"], size_hint_bytes = 1024 : i64, target_burst_bytes = {c = 4 : i64}, internal}> : () -> ()

// The output parses back: the declared pools survive a round trip through usmp-opt.
// RUN: usmp-opt %s --workspace-pools=sram,dram --constant-pools=flash --internal-pools=flash \
// RUN: | usmp-opt | filecheck %s --check-prefix=ROUNDTRIP
// ROUNDTRIP:      pool.workspace @sram {targets = ["c"]}
// ROUNDTRIP-NEXT: pool.workspace @dram {targets = ["c"]}
// ROUNDTRIP-NEXT: pool.constant @flash {targets = ["c"], internal}

// Without pool flags the module is unchanged.
// RUN: usmp-opt %s | filecheck %s --check-prefix=NONE
// NONE-NOT: pool.
// NONE: func.func @main()
// NONE-NOT: pool.

func.func @main() {
  %a = usmp.allocate : memref<16xi8>
  func.return
}
