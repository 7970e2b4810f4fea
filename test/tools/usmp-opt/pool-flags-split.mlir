// With --split-input-file every chunk is its own module and gets its own copy of the pools,
// ahead of the pools the chunk declares itself.

// RUN: usmp-opt %s --split-input-file --workspace-pools=sram --constant-pools=flash \
// RUN:   --internal-pools=flash | filecheck %s

// CHECK:      builtin.module {
// CHECK-NEXT:   pool.workspace @sram {targets = ["c"]}
// CHECK-NEXT:   pool.constant @flash {targets = ["c"], internal}
// CHECK-NEXT:   func.func @first()
func.func @first() {
  func.return
}

// -----

// CHECK:      {{//}} -----
// CHECK-NEXT: builtin.module {
// CHECK-NEXT:   pool.workspace @sram {targets = ["c"]}
// CHECK-NEXT:   pool.constant @flash {targets = ["c"], internal}
// CHECK-NEXT:   pool.workspace @dram {targets = ["c"]}
// CHECK-NEXT:   func.func @second()
pool.workspace @dram {targets = ["c"]}
func.func @second() {
  func.return
}
