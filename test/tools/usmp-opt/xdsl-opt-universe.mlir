// A stock xdsl-opt knows our dialects, passes and targets through the xdsl.universe entry point.

// RUN: xdsl-opt %s | filecheck %s
// RUN: xdsl-opt %s --print-op-generic | xdsl-opt | filecheck %s
// xdsl-opt's help wraps pass names at their hyphens: join the lines before checking.
// RUN: xdsl-opt --help | tr -d ' \n' | filecheck %s --check-prefix=HELP

// CHECK:      builtin.module {
// CHECK-NEXT:   pool.workspace @sram {size_hint_bytes = 65536 : i64, targets = ["c"]}
// CHECK-NEXT:   pool.constant @flash {targets = ["c"], internal}
// CHECK-NEXT:   func.func @main() {
// CHECK-NEXT:     %a = usmp.allocate {pools = [@sram]} : memref<1x16x16x8xi8>
// CHECK-NEXT:     %w = usmp.allocate_const dense<[1, 2, 3]> : memref<3xi32>
// CHECK-NEXT:     func.return
// CHECK-NEXT:   }
// CHECK-NEXT: }

// HELP: Availablepassesare:
// HELP-SAME: ,usmp-assign-pools,
// HELP-SAME: ,usmp-plan,
// HELP-SAME: usmp-convert-to-pool-offsets,

pool.workspace @sram {size_hint_bytes = 65536 : i64, targets = ["c"]}
pool.constant @flash {targets = ["c"], internal}
func.func @main() {
  %a = usmp.allocate {pools = [@sram]} : memref<1x16x16x8xi8>
  %w = usmp.allocate_const dense<[1, 2, 3]> : memref<3xi32>
  func.return
}
