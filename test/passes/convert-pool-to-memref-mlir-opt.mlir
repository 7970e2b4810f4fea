// REQUIRES: mlir-opt
// The output of convert-pool-to-memref is upstream MLIR: LLVM 22's mlir-opt parses and
// verifies it (a round trip) and lowers it to the LLVM dialect with SPEC §10's pipeline.
// RUN: usmp-opt %s -p 'usmp-import-memref,usmp,convert-pool-to-memref' | %mlir_opt | filecheck %s
// RUN: usmp-opt %s -p 'usmp-import-memref,usmp,convert-pool-to-memref' | %mlir_opt_lower | filecheck %s --check-prefix=LLVM
// RUN: usmp-opt %s -p 'usmp-import-memref,usmp,convert-pool-to-memref' --print-op-generic | %mlir_opt_lower | filecheck %s --check-prefix=LLVM

// The pools take the 64-byte alignment of the imported buffers.
// CHECK:       memref.global "private" @global_workspace : memref<{{[0-9]+}}xi8> = uninitialized {alignment = 64 : i64}
// CHECK-NEXT:  memref.global "private" constant @global_constant : memref<16xi8> = dense<[0, 0, -128, 63, {{.*}}]> {alignment = 64 : i64}
// CHECK-LABEL: func.func @main(%{{.*}}: memref<4xf32>, %{{.*}}: memref<4xf32>) {
// CHECK:         memref.get_global @global_workspace
// CHECK:         memref.view
// LLVM:        llvm.mlir.global private @global_workspace() {addr_space = 0 : i32, alignment = 64 : i64} : !llvm.array<{{[0-9]+}} x i8>
// LLVM:        llvm.mlir.global private constant @global_constant(dense<[0, 0, -128, 63, {{.*}}]> : tensor<16xi8>) {addr_space = 0 : i32, alignment = 64 : i64} : !llvm.array<16 x i8>
// LLVM:        llvm.func @main(
// LLVM-NOT:    memref.
memref.global "private" constant @w : memref<4xf32> = dense<[1.0, 2.0, 3.0, 4.0]> {alignment = 64 : i64}
func.func @main(%x: memref<4xf32>, %y: memref<4xf32>) {
  %w = memref.get_global @w : memref<4xf32>
  %t = memref.alloc() {alignment = 64 : i64} : memref<4xf32>
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c4 = arith.constant 4 : index
  scf.for %i = %c0 to %c4 step %c1 {
    %a = memref.load %x[%i] : memref<4xf32>
    %b = memref.load %w[%i] : memref<4xf32>
    %s = arith.mulf %a, %b : f32
    memref.store %s, %t[%i] : memref<4xf32>
  }
  memref.copy %t, %y : memref<4xf32> to memref<4xf32>
  memref.dealloc %t : memref<4xf32>
  func.return
}
