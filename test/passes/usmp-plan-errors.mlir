// Plans that cannot be made are diagnostics on the op at fault.
// RUN: usmp-opt %s --split-input-file --verify-diagnostics -p 'usmp-plan{algorithm=greedy_by_size}' | filecheck %s
// RUN: usmp-opt %s --split-input-file --verify-diagnostics -p 'usmp-plan{algorithm=nonsense}' | filecheck %s --check-prefix=ALGO

// A buffer larger than every candidate pool: the message names the buffer, its size and the
// pools with their room.
// CHECK: buffer 'big' (4096 bytes) is larger than every candidate pool: @sram has 1024 bytes, @dram has 2048 bytes
// CHECK: %big = "usmp.allocate"() <{pools = [@sram, @dram]}> : () -> memref<4096xi8>
// CHECK-NEXT: ^^^^
// ALGO: unknown algorithm 'nonsense' (known: {{.*}}greedy_by_size{{.*}})
pool.workspace @sram {size_hint_bytes = 1024 : i64}
pool.workspace @dram {size_hint_bytes = 2048 : i64}
func.func @main() {
  %big = usmp.allocate {pools = [@sram, @dram]} : memref<4096xi8>
  func.return
}

// -----

// Each buffer fits, but the two live together do not.
// CHECK: pool @sram (100 bytes) is too small: at least 128 bytes of buffers are live together at time 5: 'a' (64 bytes), 'b' (64 bytes)
pool.workspace @sram {size_hint_bytes = 100 : i64}
func.func @main() {
  %c0 = arith.constant 0 : index
  %a = usmp.allocate : memref<64xi8>
  %b = usmp.allocate : memref<64xi8>
  %v = memref.load %a[%c0] : memref<64xi8>
  memref.store %v, %b[%c0] : memref<64xi8>
  %w = memref.load %a[%c0] : memref<64xi8>
  func.return
}

// -----

// Three buffers live together, two pools that hold one each: the algorithm reports it.
// CHECK: planning with 'greedy_by_size' failed: {{.*}}fits in none of its candidate pools
pool.workspace @fast {size_hint_bytes = 64 : i64}
pool.workspace @slow {size_hint_bytes = 100 : i64}
func.func @main() {
  %c0 = arith.constant 0 : index
  %a = usmp.allocate : memref<64xi8>
  %b = usmp.allocate : memref<64xi8>
  %c = usmp.allocate : memref<64xi8>
  %v = memref.load %a[%c0] : memref<64xi8>
  memref.store %v, %b[%c0] : memref<64xi8>
  memref.store %v, %c[%c0] : memref<64xi8>
  %w = memref.load %a[%c0] : memref<64xi8>
  %u = memref.load %b[%c0] : memref<64xi8>
  func.return
}

// -----

// The entry function must exist.
// CHECK: entry function @main does not exist (option entry=NAME; public functions: @start)
func.func @start() {
  func.return
}
