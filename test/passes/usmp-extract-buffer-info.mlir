// usmp-extract-buffer-info writes the liveness analysis onto the IR: `usmp.live` (half-open
// intervals on one program-wide timeline, callee bodies inlined at each call), `usmp.conflicts`
// (buffers live at the same time) and the module's `usmp.memory_pressure`.
// RUN: usmp-opt %s --split-input-file -p usmp-extract-buffer-info | filecheck %s

// A buffer passed to an operator is live from its first to its last access inside it: the
// operator copies %in into %pad before it writes %out, so %a (input of the second call) and
// %b (its output) share no time. The scratch buffer %pad of the operator called three times
// is one buffer with three intervals.
// CHECK: builtin.module attributes {usmp.memory_pressure = 48 : i64}
// CHECK-LABEL: func.func @op
// CHECK: %pad = usmp.allocate {usmp.live = [array<i64: 8, 18>, array<i64: 24, 34>, array<i64: 40, 50>], usmp.conflicts = ["a", "b"]} : memref<32xi8>
// CHECK-LABEL: func.func @main
// CHECK: %a = usmp.allocate {usmp.live = [array<i64: 13, 29>], usmp.conflicts = ["pad"]} : memref<16xi8>
// CHECK: %b = usmp.allocate {usmp.live = [array<i64: 29, 45>], usmp.conflicts = ["pad"]} : memref<16xi8>
func.func @op(%in: memref<16xi8>, %out: memref<16xi8>) {
  %pad = usmp.allocate : memref<32xi8>
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c16 = arith.constant 16 : index
  scf.for %i = %c0 to %c16 step %c1 {
    %v = memref.load %in[%i] : memref<16xi8>
    memref.store %v, %pad[%i] : memref<32xi8>
  }
  scf.for %i = %c0 to %c16 step %c1 {
    %v = memref.load %pad[%i] : memref<32xi8>
    memref.store %v, %out[%i] : memref<16xi8>
  }
  func.return
}
func.func @main(%x: memref<16xi8>, %y: memref<16xi8>) {
  %a = usmp.allocate : memref<16xi8>
  %b = usmp.allocate : memref<16xi8>
  func.call @op(%x, %a) : (memref<16xi8>, memref<16xi8>) -> ()
  func.call @op(%a, %b) : (memref<16xi8>, memref<16xi8>) -> ()
  func.call @op(%b, %y) : (memref<16xi8>, memref<16xi8>) -> ()
  func.return
}

// -----

// Loops: an access inside a loop keeps the buffer live for the whole loop, at the outermost
// loop level below the buffer's definition. %outer (defined outside) is live over the whole
// outer loop; %inner (defined in the outer loop's body) only over the inner loop it is used in,
// so %late, used in a second inner loop, shares no time with it; %outer conflicts with both.
// CHECK: builtin.module attributes {usmp.memory_pressure = 12 : i64}
// CHECK: %outer = usmp.allocate {usmp.live = [array<i64: 5, 20>], usmp.conflicts = ["inner", "late"]} : memref<4xi8>
// CHECK: %inner = usmp.allocate {usmp.live = [array<i64: 7, 12>], usmp.conflicts = ["outer"]} : memref<4xi8>
// CHECK: %late = usmp.allocate {usmp.live = [array<i64: 13, 18>], usmp.conflicts = ["outer"]} : memref<8xi8>
func.func @main() {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c4 = arith.constant 4 : index
  %outer = usmp.allocate : memref<4xi8>
  scf.for %i = %c0 to %c4 step %c1 {
    %inner = usmp.allocate : memref<4xi8>
    scf.for %j = %c0 to %c4 step %c1 {
      %v = memref.load %outer[%j] : memref<4xi8>
      memref.store %v, %inner[%j] : memref<4xi8>
    }
    %late = usmp.allocate : memref<8xi8>
    scf.for %j = %c0 to %c4 step %c1 {
      %v = memref.load %outer[%j] : memref<4xi8>
      memref.store %v, %late[%j] : memref<8xi8>
    }
  }
  func.return
}

// -----

// The two branches of an scf.if never conflict: %then_buf and %else_buf may share memory. A
// buffer used in both branches (%shared) is live from its first access in the first branch to
// its last in the second, so it conflicts with %else_buf (live together) but not with
// %then_buf (dead before %shared is first written).
// CHECK: builtin.module attributes {usmp.memory_pressure = 68 : i64}
// CHECK: %shared = usmp.allocate {usmp.live = [array<i64: 8, 14>], usmp.conflicts = ["else_buf"]} : memref<4xi8>
// CHECK: %then_buf = usmp.allocate {usmp.live = [array<i64: 6, 8>], usmp.conflicts = []} : memref<64xi8>
// CHECK: %else_buf = usmp.allocate {usmp.live = [array<i64: 11, 13>], usmp.conflicts = ["shared"]} : memref<64xi8>
func.func @main(%cond: i1) {
  %c0 = arith.constant 0 : index
  %v0 = arith.constant 0 : i8
  %shared = usmp.allocate : memref<4xi8>
  scf.if %cond {
    %then_buf = usmp.allocate : memref<64xi8>
    memref.store %v0, %then_buf[%c0] : memref<64xi8>
    %t = memref.load %then_buf[%c0] : memref<64xi8>
    memref.store %t, %shared[%c0] : memref<4xi8>
  } else {
    %else_buf = usmp.allocate : memref<64xi8>
    memref.store %v0, %else_buf[%c0] : memref<64xi8>
    %e = memref.load %else_buf[%c0] : memref<64xi8>
    memref.store %e, %shared[%c0] : memref<4xi8>
  }
  func.return
}

// -----

// Aliases count as accesses of the buffer they view: %raw is live until the load through the
// collapse_shape of the subview of its view; %other until the load through its cast inside
// the callee. An allocation never accessed gets no interval and conflicts with nothing.
// CHECK: builtin.module attributes {usmp.memory_pressure = 80 : i64}
// CHECK: %raw = usmp.allocate {usmp.live = [array<i64: 5, 10>], usmp.conflicts = ["other"]} : memref<64xi8>
// CHECK: %other = usmp.allocate {usmp.live = [array<i64: 7, 13>], usmp.conflicts = ["raw"]} : memref<4xf32>
// CHECK: %unused = usmp.allocate {usmp.live = [], usmp.conflicts = []} : memref<1024xi8>
func.func @use(%m: memref<4xf32>) {
  %c0 = arith.constant 0 : index
  %v = memref.load %m[%c0] : memref<4xf32>
  func.return
}
func.func @main() {
  %c0 = arith.constant 0 : index
  %raw = usmp.allocate : memref<64xi8>
  %other = usmp.allocate : memref<4xf32>
  %unused = usmp.allocate : memref<1024xi8>
  %f = memref.view %raw[%c0][] : memref<64xi8> to memref<2x8xf32>
  %s = memref.subview %f[0, 0] [1, 4] [1, 1] : memref<2x8xf32> to memref<1x4xf32, strided<[8, 1]>>
  %cast = "memref.cast"(%other) : (memref<4xf32>) -> memref<4xf32>
  %flat = "memref.collapse_shape"(%s) <{reassociation = [[0, 1]]}> : (memref<1x4xf32, strided<[8, 1]>>) -> memref<4xf32, strided<[1]>>
  %v = memref.load %flat[%c0] : memref<4xf32, strided<[1]>>
  func.call @use(%cast) : (memref<4xf32>) -> ()
  func.return
}

// -----

// Inputs are live from the start of the run and outputs until its end (U4), so the two inputs
// conflict although each is read by a different operator; constants are live for the whole run
// and conflict with each other only. A buffer passed to a function declaration is accessed at
// the call.
// CHECK: builtin.module attributes {usmp.memory_pressure = 24 : i64}
// CHECK: %in0 = usmp.allocate {usmp.io = "input", usmp.io_index = 0 : i64, usmp.live = [array<i64: 0, 8>], usmp.conflicts = ["in1", "tmp"]} : memref<4xi8>
// CHECK: %in1 = usmp.allocate {usmp.io = "input", usmp.io_index = 1 : i64, usmp.live = [array<i64: 0, 9>], usmp.conflicts = ["in0", "tmp"]} : memref<4xi8>
// CHECK: %out0 = usmp.allocate {usmp.io = "output", usmp.io_index = 2 : i64, usmp.live = [array<i64: 9, 12>], usmp.conflicts = ["tmp"]} : memref<4xi8>
// CHECK: %tmp = usmp.allocate {usmp.live = [array<i64: 7, 10>], usmp.conflicts = ["in0", "in1", "out0"]} : memref<16xi8>
// CHECK: %w0 = usmp.allocate_const {usmp.live = [array<i64: 0, 12>], usmp.conflicts = ["w1"]} dense<1> : memref<4xi8>
// CHECK: %w1 = usmp.allocate_const {usmp.live = [array<i64: 0, 12>], usmp.conflicts = ["w0"]} dense<2> : memref<2xi8>
func.func private @kernel(memref<4xi8>, memref<16xi8>) -> ()
func.func @main() {
  %in0 = usmp.allocate {usmp.io = "input", usmp.io_index = 0 : i64} : memref<4xi8>
  %in1 = usmp.allocate {usmp.io = "input", usmp.io_index = 1 : i64} : memref<4xi8>
  %out0 = usmp.allocate {usmp.io = "output", usmp.io_index = 2 : i64} : memref<4xi8>
  %tmp = usmp.allocate : memref<16xi8>
  %w0 = usmp.allocate_const dense<1> : memref<4xi8>
  %w1 = usmp.allocate_const dense<2> : memref<2xi8>
  func.call @kernel(%in0, %tmp) : (memref<4xi8>, memref<16xi8>) -> ()
  func.call @kernel(%in1, %tmp) : (memref<4xi8>, memref<16xi8>) -> ()
  func.call @kernel(%out0, %tmp) : (memref<4xi8>, memref<16xi8>) -> ()
  func.return
}

// -----

// Loop-carried buffers: the iter_args of an scf.for and its result alias the buffer passed in;
// a buffer carried through a loop is live for the whole loop and until its last use after it.
// CHECK: %carried = usmp.allocate {usmp.live = [array<i64: 5, 12>], usmp.conflicts = ["inside"]} : memref<4xi8>
// CHECK: %inside = usmp.allocate {usmp.live = [array<i64: 8, 9>], usmp.conflicts = ["carried"]} : memref<4xi8>
// CHECK: %after = usmp.allocate {usmp.live = [array<i64: 13, 14>], usmp.conflicts = []} : memref<4xi8>
func.func @main() {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c4 = arith.constant 4 : index
  %carried = usmp.allocate : memref<4xi8>
  %r = scf.for %i = %c0 to %c4 step %c1 iter_args(%m = %carried) -> (memref<4xi8>) {
    %inside = usmp.allocate : memref<4xi8>
    %v = memref.load %m[%i] : memref<4xi8>
    memref.store %v, %inside[%i] : memref<4xi8>
    scf.yield %m : memref<4xi8>
  }
  %w = memref.load %r[%c0] : memref<4xi8>
  %after = usmp.allocate : memref<4xi8>
  memref.store %w, %after[%c0] : memref<4xi8>
  func.return
}
