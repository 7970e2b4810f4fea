// Newer MLIR (IREE 3.13's iree-opt after --one-shot-bufferize) prints the alignment of
// memref.global, memref.alloc and memref.alloca as a keyword, `alignment = 64`, before the
// attribute dictionary; it parses and prints back in LLVM 22's form, which mlir-opt-22 reads.
// RUN: usmp-opt %s | filecheck %s
// RUN: usmp-opt %s | usmp-opt | filecheck %s
// RUN: usmp-opt %s --print-op-generic | usmp-opt | filecheck %s

// CHECK:      memref.global "private" constant @w : memref<2xf32> = dense<[1.000000e+00, 2.000000e+00]> {alignment = 64 : i64}
// CHECK-NEXT: memref.global "private" constant @tagged : memref<2xf32> = dense<5.000000e-01> {foo = 1 : i64, alignment = 16 : i64}
// CHECK-NEXT: memref.global "private" @scratch : memref<16xi8> = uninitialized {alignment = 16 : i64}
// CHECK-NEXT: memref.global "private" @old : memref<16xi8> = uninitialized {alignment = 8 : i64}
memref.global "private" constant @w : memref<2xf32> = dense<[1.0, 2.0]> alignment = 64
memref.global "private" constant @tagged : memref<2xf32> = dense<0.5> alignment = 16 {foo = 1 : i64}
memref.global "private" @scratch : memref<16xi8> = uninitialized alignment = 16
memref.global "private" @old : memref<16xi8> = uninitialized {alignment = 8 : i64}

// CHECK-LABEL: func.func @allocations(
// CHECK-NEXT:    %a = memref.alloc() {alignment = 64 : i64} : memref<1x64x111x111xf32>
// CHECK-NEXT:    %b = memref.alloc(%n) {alignment = 64 : i64, foo = 2 : i64} : memref<?xf32>
// CHECK-NEXT:    %c = memref.alloca() {alignment = 32 : i64} : memref<3xf32>
// CHECK-NEXT:    %d = memref.alloc() {alignment = 64 : i64} : memref<3xf32>
// CHECK-NEXT:    %e = memref.alloc() : memref<3xf32>
func.func @allocations(%n: index) {
  %a = memref.alloc() alignment = 64 : memref<1x64x111x111xf32>
  %b = memref.alloc(%n) alignment = 64 {foo = 2 : i64} : memref<?xf32>
  %c = memref.alloca() alignment = 32 : memref<3xf32>
  %d = memref.alloc() {alignment = 64 : i64} : memref<3xf32>
  %e = memref.alloc() : memref<3xf32>
  func.return
}
