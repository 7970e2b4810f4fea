// usmp-memory-aware-order: the entry's independent operators run in the order that needs the
// fewest live bytes; allocations and views go just before their first user. Program order here
// computes both 4 KiB tensors before shrinking either; branch by branch needs half. (The order
// counts a call's operands all live while it runs: 8,208 against 4,128 bytes; the planner sees
// that @shrink reads its input before it writes its output: 8,192 against 4,112.)
// RUN: usmp-opt %s -p usmp-memory-aware-order | filecheck %s
// RUN: usmp-opt %s -p 'usmp-memory-aware-order{entry=in_place}' | filecheck %s --check-prefix=WAR
// A program already in the best order is left byte for byte as it was.
// RUN: usmp-opt %s -p usmp-memory-aware-order -o %t.once.mlir
// RUN: usmp-opt %t.once.mlir -p usmp-memory-aware-order | diff %t.once.mlir -
// RUN: usmp-opt %s -p 'usmp-memory-aware-order{entry=slices}' | filecheck %s --check-prefix=SLICES
// The pipeline reorders by default; order=program keeps the program's order.
// RUN: usmp-opt %s -p 'usmp-import-memref,usmp' | filecheck %s --check-prefix=PLAN
// RUN: usmp-opt %s -p 'usmp-import-memref,usmp{order=program}' | filecheck %s --check-prefix=PROGRAM

// CHECK-LABEL: func.func @main(
// CHECK-NEXT:    %a = memref.alloc() : memref<1024xf32>
// CHECK-NEXT:    func.call @widen(%x, %a)
// CHECK-NEXT:    %sa = memref.alloc() : memref<4xf32>
// CHECK-NEXT:    func.call @shrink(%a, %sa)
// CHECK-NEXT:    %b = memref.alloc() : memref<1024xf32>
// CHECK-NEXT:    func.call @widen(%x, %b)
// CHECK-NEXT:    %sb = memref.alloc() : memref<4xf32>
// CHECK-NEXT:    func.call @shrink(%b, %sb)
// CHECK-NEXT:    func.call @join(%sa, %sb, %y)
// CHECK-NEXT:    func.return

// PLAN:    pool.workspace @global_workspace {internal, size_bytes = 4112 : i64}
// PROGRAM: pool.workspace @global_workspace {internal, size_bytes = 8192 : i64}

func.func @main(%x: memref<4xf32> {usmp.io = "input"}, %y: memref<4xf32> {usmp.io = "output"}) {
  %a = memref.alloc() : memref<1024xf32>
  func.call @widen(%x, %a) : (memref<4xf32>, memref<1024xf32>) -> ()
  %b = memref.alloc() : memref<1024xf32>
  func.call @widen(%x, %b) : (memref<4xf32>, memref<1024xf32>) -> ()
  %sa = memref.alloc() : memref<4xf32>
  func.call @shrink(%a, %sa) : (memref<1024xf32>, memref<4xf32>) -> ()
  %sb = memref.alloc() : memref<4xf32>
  func.call @shrink(%b, %sb) : (memref<1024xf32>, memref<4xf32>) -> ()
  func.call @join(%sa, %sb, %y) : (memref<4xf32>, memref<4xf32>, memref<4xf32>) -> ()
  func.return
}

// The second @widen of %t overwrites what the first @shrink reads (a write after a read): it
// stays after it. The @widen of %u moves after them: %t is dead by then.
// WAR-LABEL: func.func @in_place(
// WAR-NEXT:    %t = memref.alloc() : memref<1024xf32>
// WAR-NEXT:    func.call @widen(%x, %t)
// WAR-NEXT:    %s = memref.alloc() : memref<4xf32>
// WAR-NEXT:    func.call @shrink(%t, %s)
// WAR-NEXT:    func.call @widen(%x, %t)
// WAR-NEXT:    %u = memref.alloc() : memref<1024xf32>
// WAR-NEXT:    func.call @widen(%x, %u)
// WAR-NEXT:    func.call @shrink(%u, %y)
// WAR-NEXT:    func.call @join(%s, %y, %y)
// WAR-NEXT:    func.return
func.func @in_place(%x: memref<4xf32> {usmp.io = "input"}, %y: memref<4xf32> {usmp.io = "output"}) {
  %t = memref.alloc() : memref<1024xf32>
  %u = memref.alloc() : memref<1024xf32>
  func.call @widen(%x, %t) : (memref<4xf32>, memref<1024xf32>) -> ()
  func.call @widen(%x, %u) : (memref<4xf32>, memref<1024xf32>) -> ()
  %s = memref.alloc() : memref<4xf32>
  func.call @shrink(%t, %s) : (memref<1024xf32>, memref<4xf32>) -> ()
  func.call @widen(%x, %t) : (memref<4xf32>, memref<1024xf32>) -> ()
  func.call @shrink(%u, %y) : (memref<1024xf32>, memref<4xf32>) -> ()
  func.call @join(%s, %y, %y) : (memref<4xf32>, memref<4xf32>, memref<4xf32>) -> ()
  func.return
}

// Views of one buffer at different byte shifts are different bytes: the producers of a
// Concat's slices are independent, so each branch is finished before the next starts.
// SLICES-LABEL: func.func @slices(
// SLICES-NEXT:    %a = memref.alloc() : memref<1024xf32>
// SLICES-NEXT:    func.call @widen(%x, %a)
// SLICES-NEXT:    %c0 = arith.constant 0 : index
// SLICES-NEXT:    %cat = memref.alloc() : memref<32xi8>
// SLICES-NEXT:    %first = memref.view %cat[%c0][] : memref<32xi8> to memref<4xf32>
// SLICES-NEXT:    func.call @shrink(%a, %first)
// SLICES-NEXT:    %b = memref.alloc() : memref<1024xf32>
// SLICES-NEXT:    func.call @widen(%x, %b)
// SLICES-NEXT:    %c16 = arith.constant 16 : index
// SLICES-NEXT:    %second = memref.view %cat[%c16][] : memref<32xi8> to memref<4xf32>
// SLICES-NEXT:    func.call @shrink(%b, %second)
// SLICES-NEXT:    %whole = memref.view %cat[%c0][] : memref<32xi8> to memref<8xf32>
// SLICES-NEXT:    func.call @sum(%whole, %y)
func.func @slices(%x: memref<4xf32> {usmp.io = "input"}, %y: memref<4xf32> {usmp.io = "output"}) {
  %c0 = arith.constant 0 : index
  %c16 = arith.constant 16 : index
  %a = memref.alloc() : memref<1024xf32>
  func.call @widen(%x, %a) : (memref<4xf32>, memref<1024xf32>) -> ()
  %b = memref.alloc() : memref<1024xf32>
  func.call @widen(%x, %b) : (memref<4xf32>, memref<1024xf32>) -> ()
  %cat = memref.alloc() : memref<32xi8>
  %first = memref.view %cat[%c0][] : memref<32xi8> to memref<4xf32>
  func.call @shrink(%a, %first) : (memref<1024xf32>, memref<4xf32>) -> ()
  %second = memref.view %cat[%c16][] : memref<32xi8> to memref<4xf32>
  func.call @shrink(%b, %second) : (memref<1024xf32>, memref<4xf32>) -> ()
  %whole = memref.view %cat[%c0][] : memref<32xi8> to memref<8xf32>
  func.call @sum(%whole, %y) : (memref<8xf32>, memref<4xf32>) -> ()
  func.return
}

func.func @widen(%in: memref<4xf32>, %out: memref<1024xf32>) {
  %c0 = arith.constant 0 : index
  %v = memref.load %in[%c0] : memref<4xf32>
  memref.store %v, %out[%c0] : memref<1024xf32>
  func.return
}
func.func @shrink(%in: memref<1024xf32>, %out: memref<4xf32>) {
  %c0 = arith.constant 0 : index
  %v = memref.load %in[%c0] : memref<1024xf32>
  memref.store %v, %out[%c0] : memref<4xf32>
  func.return
}
func.func @join(%a: memref<4xf32>, %b: memref<4xf32>, %out: memref<4xf32>) {
  %c0 = arith.constant 0 : index
  %u = memref.load %a[%c0] : memref<4xf32>
  %v = memref.load %b[%c0] : memref<4xf32>
  %w = arith.addf %u, %v : f32
  memref.store %w, %out[%c0] : memref<4xf32>
  func.return
}
func.func @sum(%in: memref<8xf32>, %out: memref<4xf32>) {
  %c0 = arith.constant 0 : index
  %c7 = arith.constant 7 : index
  %u = memref.load %in[%c0] : memref<8xf32>
  %v = memref.load %in[%c7] : memref<8xf32>
  %w = arith.addf %u, %v : f32
  memref.store %w, %out[%c0] : memref<4xf32>
  func.return
}
