// State pools (SPEC §13): a buffer whose value persists from one run to the next is planned,
// live for the whole run, in a state pool of its own, never shared with workspace buffers.
// RUN: usmp-opt %s -p 'usmp-import-memref,usmp-plan{report="%t.json"}' | filecheck %s --check-prefix=PLAN
// RUN: filecheck %s --check-prefix=REPORT < %t.json
// RUN: usmp-opt %s -p 'usmp-import-memref,usmp' | filecheck %s --check-prefix=CONVERTED
// RUN: usmp-opt %s -p 'usmp-import-memref,usmp,convert-pool-to-memref' | filecheck %s --check-prefix=UPSTREAM
// RUN: usmp-opt %s -p 'usmp-import-memref,usmp' -t c-header | filecheck %s --check-prefix=HEADER
// RUN: usmp-opt %s -p 'usmp-import-memref,usmp' -t c | filecheck %s --check-prefix=SOURCE
// RUN: usmp-opt %s --state-pools=persist --state-pools-size-hint-bytes=persist:64 -p 'usmp-import-memref,usmp' -t c | filecheck %s --check-prefix=EXTERNAL
// RUN: usmp-opt %s --state-pools=persist --internal-pools=persist --state-pools-section=persist:.noinit -p 'usmp-import-memref,usmp' -t c | filecheck %s --check-prefix=SECTION
// RUN: not usmp-opt %s --state-pools=persist --state-pools-size-hint-bytes=persist:8 -p 'usmp-import-memref,usmp' 2>&1 | filecheck %s --check-prefix=TOO-SMALL

// The frontends write the state as a mutable memref.global marked usmp.state (standard MLIR);
// usmp-import-memref makes its one read a usmp.allocate_state with the initial value, and
// usmp-plan gives it the internal default state pool.
// PLAN: pool.workspace @global_workspace {internal, size_bytes = 8 : i64}
// PLAN-NEXT: pool.state @global_state {internal, size_bytes = 20 : i64}
// PLAN: %hidden = usmp.allocate_state {usmp.tensor = "hidden", pools = [@global_state], pool = @global_state, offset = {{0|16}} : i64} dense<[1, -2]> : memref<2xi16>
// PLAN: %cell = usmp.allocate_state {usmp.tensor = "cell", pools = [@global_state], pool = @global_state, offset = {{0|16}} : i64} dense<0.000000e+00> : memref<2xf32>
// PLAN: %tmp = usmp.allocate {usmp.tensor = "tmp", pools = [@global_workspace], pool = @global_workspace, offset = 0 : i64} : memref<2xf32>

// REPORT: {"name": "global_workspace", "kind": "workspace"
// REPORT-NEXT: {"name": "global_state", "kind": "state", "internal": true, "size_hint_bytes": null, "size_bytes": 20
// REPORT: {"name": "hidden", "function": "main", "kind": "state", "size_bytes": 4
// REPORT-SAME: "conflicts": ["cell"]

// The state pool holds the initial bytes it restores.
// CONVERTED: pool.state @global_state {internal, size_bytes = 20 : i64, data = dense<
// CONVERTED: memref.view %global_state

// UPSTREAM: memref.global "private" @global_state : memref<20xi8> = dense<

// HEADER: #define USMP_DEFAULT_STATE_SIZE 20
// HEADER: int32_t usmp_default_reset_state(void);

// SOURCE: static _Alignas(16) uint8_t global_state_pool[20];
// SOURCE: static const uint8_t global_state_initial[20] = {
// SOURCE: static uint8_t usmp_default_state_ready = 0;
// SOURCE: int32_t usmp_default_run(
// SOURCE-NEXT:   if (!usmp_default_state_ready) {
// SOURCE-NEXT:     memcpy(global_state_pool, global_state_initial, 20);
// SOURCE: int32_t usmp_default_reset_state(void) {
// SOURCE-NEXT:   memcpy(global_state_pool, global_state_initial, 20);
// SOURCE-NEXT:   usmp_default_state_ready = 1;
// SOURCE-NEXT:   return 0;

// An external state pool: a field of the pools struct that reset_state fills.
// EXTERNAL: int32_t usmp_default_reset_state(struct usmp_default_workspace_pools* workspace_pools) {
// EXTERNAL-NEXT:   memcpy((uint8_t*)workspace_pools->persist, persist_initial, 20);

// SECTION: static _Alignas(16) uint8_t persist_pool[20] __attribute__((section(".noinit")));

// TOO-SMALL: usmp-opt: error: {{.*}}: pool @persist (8 bytes) is too small: at least 12 bytes of buffers are live together

memref.global "private" @hidden : memref<2xi16> = dense<[1, -2]> {usmp.state, usmp.tensor = "hidden"}
memref.global "private" @cell : memref<2xf32> = dense<0.0> {usmp.state, usmp.tensor = "cell"}
func.func @step(%x: memref<2xf32>, %h: memref<2xi16>, %c: memref<2xf32>, %y: memref<2xf32>) {
  %c0 = arith.constant 0 : index
  %a = memref.load %x[%c0] : memref<2xf32>
  %b = memref.load %c[%c0] : memref<2xf32>
  %s = arith.addf %a, %b : f32
  memref.store %s, %c[%c0] : memref<2xf32>
  memref.store %s, %y[%c0] : memref<2xf32>
  %i = memref.load %h[%c0] : memref<2xi16>
  memref.store %i, %h[%c0] : memref<2xi16>
  func.return
}
func.func @main(%x: memref<2xf32> {usmp.io = "input"}, %y: memref<2xf32> {usmp.io = "output"}) {
  %hidden = memref.get_global @hidden : memref<2xi16>
  %cell = memref.get_global @cell : memref<2xf32>
  %tmp = memref.alloc() {usmp.tensor = "tmp"} : memref<2xf32>
  func.call @step(%x, %hidden, %cell, %tmp) : (memref<2xf32>, memref<2xi16>, memref<2xf32>, memref<2xf32>) -> ()
  memref.copy %tmp, %y : memref<2xf32> to memref<2xf32>
  func.return
}
