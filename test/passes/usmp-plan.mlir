// usmp-plan runs the analysis and a planning algorithm: every buffer reachable from the entry
// gets `pool` and `offset`, every pool `size_bytes`.
// RUN: usmp-opt %s --split-input-file -p 'usmp-plan{algorithm=hill_climb}' | filecheck %s
// RUN: usmp-opt %s --split-input-file -p 'usmp-plan{algorithm=exact report="%t.json" svg="%t.svg"}' | filecheck %s
// RUN: filecheck %s --check-prefix=REPORT < %t.json
// RUN: filecheck %s --check-prefix=SVG < %t.svg

// %a and %c are never live together and share memory; %b conflicts with both. A buffer keeps
// its own alignment. Candidate
// pools come from usmp-assign-pools, which usmp-plan runs first (here: the only workspace pool).
// Pool alignment is raised to the largest alignment of the buffers in it (64 > 16).
// The last chunk's report overwrites the first ones: REPORT checks that one (below).
// CHECK: pool.workspace @sram {size_bytes = 320 : i64, alignment = 64 : i64}
// CHECK-LABEL: func.func @main
// CHECK: %a = usmp.allocate {pools = [@sram], pool = @sram, offset = [[A:0|256]] : i64} : memref<256xi8>
// CHECK: %b = usmp.allocate {alignment = 64 : i64, pools = [@sram], pool = @sram, offset = {{0|256}} : i64} : memref<64xi8>
// CHECK: %c = usmp.allocate {pools = [@sram], pool = @sram, offset = [[A]] : i64} : memref<256xi8>
pool.workspace @sram
func.func @main() {
  %c0 = arith.constant 0 : index
  %a = usmp.allocate : memref<256xi8>
  %b = usmp.allocate {alignment = 64 : i64} : memref<64xi8>
  %c = usmp.allocate : memref<256xi8>
  %v = memref.load %a[%c0] : memref<256xi8>
  memref.store %v, %b[%c0] : memref<64xi8>
  %w = memref.load %a[%c0] : memref<256xi8>
  memref.store %w, %c[%c0] : memref<256xi8>
  %u = memref.load %b[%c0] : memref<64xi8>
  func.return
}

// -----

// Candidate pools in order: a buffer goes to the first pool it fits in (@fast holds 64
// bytes) and spills to the next one only when it cannot fit there. Buffers in functions the
// entry does not reach are not planned.
// CHECK: pool.workspace @fast {size_hint_bytes = 64 : i64, size_bytes = 64 : i64}
// CHECK: pool.workspace @slow {size_bytes = 128 : i64}
// CHECK-LABEL: func.func @unreachable
// CHECK: %never = usmp.allocate {pools = [@fast, @slow]} : memref<8xi8>
// CHECK-LABEL: func.func @main
// CHECK-DAG: usmp.allocate {pools = [@fast, @slow], pool = @fast, offset = 0 : i64} : memref<64xi8>
// CHECK-DAG: usmp.allocate {pools = [@fast, @slow], pool = @slow, offset = {{0|64}} : i64} : memref<64xi8>
// CHECK-DAG: usmp.allocate {pools = [@fast, @slow], pool = @slow, offset = {{0|64}} : i64} : memref<64xi8>
pool.workspace @fast {size_hint_bytes = 64 : i64}
pool.workspace @slow
func.func @unreachable() {
  %never = usmp.allocate : memref<8xi8>
  func.return
}
func.func @main() {
  %c0 = arith.constant 0 : index
  %x = usmp.allocate : memref<64xi8>
  %y = usmp.allocate : memref<64xi8>
  %z = usmp.allocate : memref<64xi8>
  %v = memref.load %x[%c0] : memref<64xi8>
  memref.store %v, %y[%c0] : memref<64xi8>
  memref.store %v, %z[%c0] : memref<64xi8>
  %w = memref.load %y[%c0] : memref<64xi8>
  %u = memref.load %z[%c0] : memref<64xi8>
  %t = memref.load %x[%c0] : memref<64xi8>
  func.return
}

// -----

// Without declared pools the internal defaults are created (U1); constants go to the constant
// pool and all conflict with each other. The entry function is `entry=` (here the default,
// main); the JSON report follows SPEC §8.
// CHECK: pool.workspace @global_workspace {internal, size_bytes = 16 : i64}
// CHECK: pool.constant @global_constant {internal, size_bytes = 20 : i64}
// CHECK: %w1 = usmp.allocate_const {pools = [@global_constant], pool = @global_constant, offset = {{0|16}} : i64} dense<1> : memref<4xi8>
// CHECK: %w2 = usmp.allocate_const {pools = [@global_constant], pool = @global_constant, offset = {{0|16}} : i64} dense<2> : memref<16xi8>
// CHECK: %t = usmp.allocate {pools = [@global_workspace], pool = @global_workspace, offset = 0 : i64} : memref<16xi8>
// REPORT: {"algorithm": "exact", "entry": "main", "memory_pressure_bytes": 16, "plan_time_s": {{[0-9.e-]+}},
// REPORT-NEXT: "pools": [
// REPORT-NEXT: {"name": "global_workspace", "kind": "workspace", "internal": true, "size_hint_bytes": null, "size_bytes": 16, "lower_bound_bytes": 16},
// REPORT-NEXT: {"name": "global_constant", "kind": "constant", "internal": true, "size_hint_bytes": null, "size_bytes": 20, "lower_bound_bytes": 20}
// REPORT-NEXT: ],
// REPORT-NEXT: "buffers": [
// REPORT-NEXT: {"name": "w1", "function": "main", "kind": "constant", "size_bytes": 4, "alignment": 16, "pool": "global_constant", "offset": {{0|16}}, "live": {{\[\[0, [0-9]+\]\]}}, "conflicts": ["w2"], "tensor": "w1", "live_operators": []},
// REPORT-NEXT: {"name": "w2", "function": "main", "kind": "constant", "size_bytes": 16, "alignment": 16, "pool": "global_constant", "offset": {{0|16}}, "live": {{\[\[0, [0-9]+\]\]}}, "conflicts": ["w1"], "tensor": "w2", "live_operators": []},
// REPORT-NEXT: {"name": "t", "function": "main", "kind": "intermediate", "size_bytes": 16, "alignment": 16, "pool": "global_workspace", "offset": 0, "live": [[6, 8]], "conflicts": [], "tensor": "t", "live_operators": []}
// REPORT-NEXT: ],
// REPORT-NEXT: "operators": [
// REPORT-NEXT: ],
// REPORT-NEXT: "peak": {"operator": null, "live_bytes": 16, "tensors": []}
// REPORT-NEXT: }
// SVG: <svg xmlns="http://www.w3.org/2000/svg"
// SVG: pool global_workspace: 16 bytes (lower bound 16)
// SVG: <title>t: 16 B at offset 0, live [6, 8)</title>
// SVG: lower bound
// SVG: pool global_constant: 20 bytes (lower bound 20)
// SVG: <title>w1: 4 B at offset {{0|16}}, live [0,
// SVG: </svg>
func.func @main() {
  %c0 = arith.constant 0 : index
  %w1 = usmp.allocate_const dense<1> : memref<4xi8>
  %w2 = usmp.allocate_const dense<2> : memref<16xi8>
  %t = usmp.allocate : memref<16xi8>
  %v = memref.load %w1[%c0] : memref<4xi8>
  memref.store %v, %t[%c0] : memref<16xi8>
  %u = memref.load %t[%c0] : memref<16xi8>
  func.return
}
