// RUN: usmp-opt %s -p usmp-assign-pools --split-input-file --verify-diagnostics | filecheck %s
// Idempotent: a second run changes nothing.
// RUN: usmp-opt %s -p usmp-assign-pools,usmp-assign-pools --split-input-file --verify-diagnostics | filecheck %s
// The pass checks pool kinds itself too (the verifier normally gets there first).
// RUN: usmp-opt %s -p usmp-assign-pools --split-input-file --verify-diagnostics --disable-verify | filecheck %s --check-prefix=KIND

// U1, no pools declared: internal defaults for both kinds, serving the targets of the
// functions that need them ("c" is the default and stays implicit).

// CHECK:       builtin.module {
// CHECK-NEXT:    pool.workspace @global_workspace {internal}
// CHECK-NEXT:    pool.constant @global_constant {internal}
// CHECK-LABEL:   func.func @main()
// CHECK-NEXT:      %a = usmp.allocate {pools = [@global_workspace]} : memref<16xi8>
// CHECK-NEXT:      %w = usmp.allocate_const {pools = [@global_constant]} dense<[1, 2, 3]> : memref<3xi32>
func.func @main() {
  %a = usmp.allocate : memref<16xi8>
  %w = usmp.allocate_const dense<[1, 2, 3]> : memref<3xi32>
  func.return
}

// -----

// Default pools serve every target that needs them; only the kinds needed are created.

// CHECK:       builtin.module {
// CHECK-NEXT:    pool.workspace @global_workspace {targets = ["accel", "c"], internal}
// CHECK-NOT:     pool.constant
// CHECK-LABEL:   func.func @main()
// CHECK-NEXT:      %a = usmp.allocate {pools = [@global_workspace]} : memref<16xi8>
// CHECK-LABEL:   func.func @kernel()
// CHECK-NEXT:      %k = usmp.allocate {alignment = 64 : i64, pools = [@global_workspace]} : memref<8xf32>
func.func @main() {
  %a = usmp.allocate : memref<16xi8>
  func.return
}
func.func @kernel() attributes {usmp.target = "accel"} {
  %k = usmp.allocate {alignment = 64 : i64} : memref<8xf32>
  func.return
}

// -----

// U3: candidates are the pools of the right kind serving the function's target, in declaration
// order. Only workspace pools are declared: constants go to an internal @global_constant,
// placed after the existing pools. An allocation listing pools itself keeps them.

// CHECK:       builtin.module {
// CHECK-NEXT:    pool.workspace @sram {size_hint_bytes = 1024 : i64, targets = ["c"]}
// CHECK-NEXT:    pool.workspace @shared {targets = ["accel", "c"]}
// CHECK-NEXT:    pool.workspace @dram{{$}}
// CHECK-NEXT:    pool.constant @global_constant {internal}
// CHECK-NEXT:    func.func @main()
// CHECK-NEXT:      %a = usmp.allocate {pools = [@sram, @shared, @dram]} : memref<16xi8>
// CHECK-NEXT:      %pinned = usmp.allocate {pools = [@dram, @sram]} : memref<16xi8>
// CHECK-NEXT:      %w = usmp.allocate_const {pools = [@global_constant]} dense<7> : memref<4xi8>
// CHECK-LABEL:   func.func @kernel()
// CHECK:             %t = usmp.allocate {pools = [@shared]} : memref<8xf32>
pool.workspace @sram {size_hint_bytes = 1024 : i64, targets = ["c"]}
pool.workspace @shared {targets = ["accel", "c"]}
pool.workspace @dram
func.func @main() {
  %a = usmp.allocate : memref<16xi8>
  %pinned = usmp.allocate {pools = [@dram, @sram]} : memref<16xi8>
  %w = usmp.allocate_const dense<7> : memref<4xi8>
  func.return
}
func.func @kernel() attributes {usmp.target = "accel"} {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  scf.for %i = %c0 to %c1 step %c1 {
    %t = usmp.allocate : memref<8xf32>
  }
  func.return
}

// -----

// Only constant pools declared: workspace buffers go to an internal @global_workspace.

// CHECK:       builtin.module {
// CHECK-NEXT:    pool.constant @flash
// CHECK-NEXT:    pool.workspace @global_workspace {internal}
// CHECK-NEXT:    func.func @main()
// CHECK-NEXT:      %a = usmp.allocate {pools = [@global_workspace]} : memref<16xi8>
// CHECK-NEXT:      %w = usmp.allocate_const {pools = [@flash]} dense<7> : memref<4xi8>
pool.constant @flash
func.func @main() {
  %a = usmp.allocate : memref<16xi8>
  %w = usmp.allocate_const dense<7> : memref<4xi8>
  func.return
}

// -----

// Nothing to place: no pool is created.

// CHECK:       builtin.module {
// CHECK-NEXT:    func.func @main(%x: memref<4xi8>) {
// CHECK-NEXT:      func.return
func.func @main(%x: memref<4xi8>) {
  func.return
}

// -----

// CHECK: no workspace pool serves buffer %b of function @kernel (target 'accel'); workspace pools: @sram (targets ["c"]), @dram (targets ["c", "dsp"])
pool.workspace @sram {targets = ["c"]}
pool.workspace @dram {targets = ["c", "dsp"]}
func.func @kernel() attributes {usmp.target = "accel"} {
  %b = usmp.allocate : memref<16xi8>
  func.return
}

// -----

// CHECK: no constant pool serves buffer %w of function @main (target 'c'); constant pools: @flash (targets ["dsp"])
pool.workspace @sram
pool.constant @flash {targets = ["dsp"]}
func.func @main() {
  %w = usmp.allocate_const dense<1> : memref<4xi8>
  func.return
}

// -----

// CHECK: usmp.target of @main must be a string, got 3 : i64
func.func @main() attributes {usmp.target = 3 : i64} {
  %b = usmp.allocate : memref<16xi8>
  func.return
}

// -----

// CHECK: cannot create the default workspace pool @global_workspace: the name is taken by this 'func.func'
func.func @global_workspace() {
  %b = usmp.allocate : memref<16xi8>
  func.return
}

// -----

// A listed pool of the wrong kind is an error.

// CHECK: {{.*}}@flash{{.*}}constant pool
// KIND:  buffer %b lists @flash, a constant pool, but usmp.allocate needs workspace pools
pool.workspace @sram
pool.constant @flash
func.func @main() {
  %b = usmp.allocate {pools = [@sram, @flash]} : memref<16xi8>
  func.return
}

// -----

// CHECK: usmp.allocate of buffer %b is not in a func.func
pool.workspace @sram
%b = usmp.allocate : memref<16xi8>
