// `entry=NAME` selects the entry function: only what it reaches is planned, and the pools
// reach it through pool.base after conversion.
// RUN: usmp-opt %s -p 'usmp-plan{entry=run algorithm=exact},usmp-convert-to-pool-offsets{entry=run}' | filecheck %s
// Planning a converted program again changes nothing.
// RUN: usmp-opt %s -p 'usmp{entry=run},usmp{entry=run}' | filecheck %s

// CHECK:       pool.workspace @global_workspace {internal, size_bytes = 8 : i64}
// CHECK-LABEL: func.func @main() {
// CHECK-NEXT:    %other = usmp.allocate {pools = [@global_workspace]} : memref<64xi8>
// CHECK-LABEL: func.func @run() {
// CHECK-NEXT:    %global_workspace = pool.base @global_workspace : memref<8xi8>
// CHECK-NEXT:    %mine_offset = arith.constant 0 : index
// CHECK-NEXT:    %mine = memref.view %global_workspace[%mine_offset][] {usmp.buffer = "mine"} : memref<8xi8> to memref<8xi8>
func.func @main() {
  %other = usmp.allocate : memref<64xi8>
  func.return
}
func.func @run() {
  %mine = usmp.allocate : memref<8xi8>
  func.return
}
