// convert-pool-to-memref needs a planned program: diagnostics on the op at fault.
// RUN: usmp-opt %s --split-input-file --verify-diagnostics -p convert-pool-to-memref | filecheck %s

// An allocation that was never converted to a pool offset.
// CHECK: usmp.allocate is not converted to a pool offset: run usmp (or usmp-plan and usmp-convert-to-pool-offsets) before convert-pool-to-memref
func.func @main() {
  %a = usmp.allocate : memref<4xi8>
  func.return
}

// -----

// A constant pool's data global would take an existing name.
// CHECK: cannot add @flash_data for the data of pool @flash: taken
pool.constant @flash {size_bytes = 4 : i64}
func.func @flash_data() {
  func.return
}
func.func @main() {
  func.return
}
