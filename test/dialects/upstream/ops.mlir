// Upstream MLIR's printed forms that xDSL's own dialects do not parse (usmp_dialect/dialects/
// upstream.py), as LLVM 22's mlir-opt prints them after bufferization. memref.global, copy and
// cast round-trip in that syntax; linalg.map, reduce and broadcast parse into the
// linalg.generic they stand for; the extra named elementwise ops round-trip.
// RUN: usmp-opt %s | filecheck %s
// RUN: usmp-opt %s | usmp-opt | filecheck %s
// RUN: usmp-opt %s --print-op-generic | usmp-opt | filecheck %s
// RUN: usmp-opt %s -p convert-linalg-to-loops | filecheck %s --check-prefix=LOOPS

// CHECK:      memref.global "private" constant @w : memref<2x2xf32> = dense<{{\[}}[1.000000e+00, 2.000000e+00], [3.000000e+00, 4.000000e+00]]> {alignment = 64 : i64}
// CHECK-NEXT: memref.global "private" constant @splat : memref<8x4xf32> = dense<5.000000e-01> {alignment = 64 : i64}
// CHECK-NEXT: memref.global @state : memref<4xi32> = dense<0>
// CHECK-NEXT: memref.global "private" @scratch : memref<16xi8> = uninitialized
memref.global "private" constant @w : memref<2x2xf32> = dense<[[1.0, 2.0], [3.0, 4.0]]> {alignment = 64 : i64}
memref.global "private" constant @splat : memref<8x4xf32> = dense<5.000000e-01> {alignment = 64 : i64}
memref.global @state : memref<4xi32> = dense<0>
memref.global "private" @scratch : memref<16xi8> = uninitialized

// CHECK-LABEL: func.func @memref_ops(
// CHECK-NEXT:    memref.copy %a, %b : memref<4xf32> to memref<4xf32, strided<[1], offset: 4>>
// CHECK-NEXT:    %c = memref.cast %a : memref<4xf32> to memref<?xf32>
func.func @memref_ops(%a: memref<4xf32>, %b: memref<4xf32, strided<[1], offset: 4>>) {
  memref.copy %a, %b : memref<4xf32> to memref<4xf32, strided<[1], offset: 4>>
  %c = memref.cast %a : memref<4xf32> to memref<?xf32>
  func.return
}

// The long form of linalg.map (the body gets the init's element too, as LLVM 22 prints it),
// and the short form with the op's name only.
// CHECK-LABEL: func.func @map(
// CHECK-NEXT:    linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>], iterator_types = ["parallel", "parallel"]} outs(%y : memref<1x6xf32>) {
// CHECK-NEXT:    ^bb0(%init: f32):
// CHECK-NEXT:      %i = linalg.index 0 : index
// CHECK-NEXT:      linalg.yield %cst : f32
// CHECK-NEXT:    }
// CHECK-NEXT:    linalg.generic {indexing_maps = [affine_map<(d0) -> (d0)>, affine_map<(d0) -> (d0)>], iterator_types = ["parallel"]} ins(%x : memref<4xi8>) outs(%z : memref<4xi32>) {
// CHECK-NEXT:    ^{{.*}}(%{{.*}}: i8, %{{.*}}: i32):
// CHECK-NEXT:      %{{.*}} = arith.extsi %{{.*}} : i8 to i32
func.func @map(%x: memref<4xi8>, %y: memref<1x6xf32>, %z: memref<4xi32>, %cst: f32) {
  linalg.map outs(%y : memref<1x6xf32>)
    (%init: f32) {
      %i = linalg.index 0 : index
      linalg.yield %cst : f32
    }
  linalg.map { arith.extsi } ins(%x : memref<4xi8>) outs(%z : memref<4xi32>)
  func.return
}

// CHECK-LABEL: func.func @reduce_broadcast_transpose(
// CHECK-NEXT:    linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d0)>], iterator_types = ["parallel", "reduction"]} ins(%x : memref<4x8xf32>) outs(%r : memref<4xf32>) {
// CHECK-NEXT:    ^bb0(%in: f32, %acc: f32):
// CHECK-NEXT:      %s = arith.addf %in, %acc : f32
// CHECK:         linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d0)>], iterator_types = ["parallel", "reduction"]} ins(%x : memref<4x8xf32>) outs(%r : memref<4xf32>) {
// CHECK-NEXT:    ^{{.*}}(%{{.*}}: f32, %{{.*}}: f32):
// CHECK-NEXT:      %{{.*}} = arith.maximumf
// CHECK:         linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0)>, affine_map<(d0, d1) -> (d0, d1)>], iterator_types = ["parallel", "parallel"]} ins(%r : memref<4xf32>) outs(%x : memref<4x8xf32>) {
// CHECK-NEXT:    ^{{.*}}(%{{.*}}: f32, %{{.*}}: f32):
// CHECK-NEXT:      linalg.yield %{{.*}} : f32
// CHECK:         linalg.transpose ins(%x:memref<4x8xf32>) outs(%t:memref<8x4xf32>) permutation = [1, 0]
func.func @reduce_broadcast_transpose(%x: memref<4x8xf32>, %r: memref<4xf32>, %t: memref<8x4xf32>) {
  linalg.reduce ins(%x : memref<4x8xf32>) outs(%r : memref<4xf32>) dimensions = [1]
    (%in: f32, %acc: f32) {
      %s = arith.addf %in, %acc : f32
      linalg.yield %s : f32
    }
  linalg.reduce { arith.maximumf } ins(%x : memref<4x8xf32>) outs(%r : memref<4xf32>) dimensions = [1]
  linalg.broadcast ins(%r : memref<4xf32>) outs(%x : memref<4x8xf32>) dimensions = [1]
  linalg.transpose ins(%x : memref<4x8xf32>) outs(%t : memref<8x4xf32>) permutation = [1, 0]
  func.return
}

// CHECK-LABEL: func.func @named(
// CHECK-NEXT:    linalg.div ins(%a, %b : memref<4xf32>, memref<4xf32>) outs(%c : memref<4xf32>)
// CHECK-NEXT:    linalg.abs ins(%a : memref<4xf32>) outs(%c : memref<4xf32>)
// CHECK-NEXT:    linalg.negf ins(%a : memref<4xf32>) outs(%c : memref<4xf32>)
// CHECK-NEXT:    linalg.floor ins(%a : memref<4xf32>) outs(%c : memref<4xf32>)
// CHECK-NEXT:    linalg.ceil ins(%a : memref<4xf32>) outs(%c : memref<4xf32>)
// CHECK-NEXT:    linalg.tanh ins(%a : memref<4xf32>) outs(%c : memref<4xf32>)
// CHECK-NEXT:    linalg.rsqrt ins(%a : memref<4xf32>) outs(%c : memref<4xf32>)
// CHECK-NEXT:    linalg.erf ins(%a : memref<4xf32>) outs(%c : memref<4xf32>)
// CHECK-NEXT:    linalg.powf ins(%a, %b : memref<4xf32>, memref<4xf32>) outs(%c : memref<4xf32>)
// CHECK-NEXT:    linalg.square ins(%a : memref<4xf32>) outs(%c : memref<4xf32>)
func.func @named(%a: memref<4xf32>, %b: memref<4xf32>, %c: memref<4xf32>) {
  linalg.div ins(%a, %b : memref<4xf32>, memref<4xf32>) outs(%c : memref<4xf32>)
  linalg.abs ins(%a : memref<4xf32>) outs(%c : memref<4xf32>)
  linalg.negf ins(%a : memref<4xf32>) outs(%c : memref<4xf32>)
  linalg.floor ins(%a : memref<4xf32>) outs(%c : memref<4xf32>)
  linalg.ceil ins(%a : memref<4xf32>) outs(%c : memref<4xf32>)
  linalg.tanh ins(%a : memref<4xf32>) outs(%c : memref<4xf32>)
  linalg.rsqrt ins(%a : memref<4xf32>) outs(%c : memref<4xf32>)
  linalg.erf ins(%a : memref<4xf32>) outs(%c : memref<4xf32>)
  linalg.powf ins(%a, %b : memref<4xf32>, memref<4xf32>) outs(%c : memref<4xf32>)
  linalg.square ins(%a : memref<4xf32>) outs(%c : memref<4xf32>)
  func.return
}

// Pooling (xDSL's own pooling_nchw_max combined the input with the window instead of the
// output): the body is O = op(O, I) in both layouts.
// LOOPS-LABEL: func.func @pooling(
// LOOPS:         %[[IN:.*]] = memref.load %x[
// LOOPS-NEXT:    %[[OUT:.*]] = memref.load %y[
// LOOPS-NEXT:    %{{.*}} = arith.maximumf %[[OUT]], %[[IN]] : f32
// CHECK-LABEL: func.func @pooling(
// CHECK-NEXT:    linalg.pooling_nchw_max {dilations = dense<1> : vector<2xi64>, strides = dense<2> : vector<2xi64>} ins(%x, %k : memref<1x2x4x4xf32>, memref<2x2xf32>) outs(%y : memref<1x2x2x2xf32>)
// CHECK-NEXT:    linalg.pooling_nhwc_sum {dilations = dense<1> : tensor<2xi64>, strides = dense<1> : tensor<2xi64>} ins(%z, %k : memref<1x3x3x2xf32>, memref<2x2xf32>) outs(%w : memref<1x2x2x2xf32>)
// CHECK-NEXT:    linalg.pooling_nhwc_min {dilations = dense<1> : tensor<2xi64>, strides = dense<1> : tensor<2xi64>} ins(%z, %k : memref<1x3x3x2xf32>, memref<2x2xf32>) outs(%w : memref<1x2x2x2xf32>)
func.func @pooling(%x: memref<1x2x4x4xf32>, %k: memref<2x2xf32>, %y: memref<1x2x2x2xf32>, %z: memref<1x3x3x2xf32>, %w: memref<1x2x2x2xf32>) {
  linalg.pooling_nchw_max {dilations = dense<1> : vector<2xi64>, strides = dense<2> : vector<2xi64>} ins(%x, %k : memref<1x2x4x4xf32>, memref<2x2xf32>) outs(%y : memref<1x2x2x2xf32>)
  linalg.pooling_nhwc_sum {dilations = dense<1> : tensor<2xi64>, strides = dense<1> : tensor<2xi64>} ins(%z, %k : memref<1x3x3x2xf32>, memref<2x2xf32>) outs(%w : memref<1x2x2x2xf32>)
  linalg.pooling_nhwc_min {dilations = dense<1> : tensor<2xi64>, strides = dense<1> : tensor<2xi64>} ins(%z, %k : memref<1x3x3x2xf32>, memref<2x2xf32>) outs(%w : memref<1x2x2x2xf32>)
  func.return
}

// Contractions: O += cast(A) * cast(B), the inputs sign-extended to the output's type.
// CHECK-LABEL: func.func @contractions(
// CHECK-NEXT:    linalg.batch_matmul ins(%a, %b : memref<2x3x4xi8>, memref<2x4x5xi8>) outs(%c : memref<2x3x5xi32>)
// CHECK-NEXT:    linalg.matvec ins(%m, %v : memref<3x4xf32>, memref<4xf32>) outs(%o : memref<3xf32>)
// CHECK-NEXT:    linalg.vecmat ins(%o, %m : memref<3xf32>, memref<3x4xf32>) outs(%v : memref<4xf32>)
// LOOPS-LABEL: func.func @contractions(
// LOOPS:         %[[A:.*]] = memref.load %a[
// LOOPS-NEXT:    %[[B:.*]] = memref.load %b[
// LOOPS-NEXT:    %[[C:.*]] = memref.load %c[
// LOOPS-NEXT:    %[[WA:.*]] = arith.extsi %[[A]] : i8 to i32
// LOOPS-NEXT:    %[[WB:.*]] = arith.extsi %[[B]] : i8 to i32
// LOOPS-NEXT:    %[[P:.*]] = arith.muli %[[WA]], %[[WB]] : i32
// LOOPS-NEXT:    %{{.*}} = arith.addi %[[C]], %[[P]] : i32
func.func @contractions(%a: memref<2x3x4xi8>, %b: memref<2x4x5xi8>, %c: memref<2x3x5xi32>, %m: memref<3x4xf32>, %v: memref<4xf32>, %o: memref<3xf32>) {
  linalg.batch_matmul ins(%a, %b : memref<2x3x4xi8>, memref<2x4x5xi8>) outs(%c : memref<2x3x5xi32>)
  linalg.matvec ins(%m, %v : memref<3x4xf32>, memref<4xf32>) outs(%o : memref<3xf32>)
  linalg.vecmat ins(%o, %m : memref<3xf32>, memref<3x4xf32>) outs(%v : memref<4xf32>)
  func.return
}
