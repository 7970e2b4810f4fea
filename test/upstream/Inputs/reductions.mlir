// Reductions: a row sum and a row max (linalg.reduce), softmax-like normalisation (exp,
// broadcast, div), a transpose, and an integer path (i8 -> i32 sum with linalg.reduce).
func.func @softmax(%x: tensor<4x8xf32>) -> tensor<4x8xf32> {
  %ninf = arith.constant -1.0e+30 : f32
  %zero = arith.constant 0.0 : f32
  %mi = tensor.empty() : tensor<4xf32>
  %m0 = linalg.fill ins(%ninf : f32) outs(%mi : tensor<4xf32>) -> tensor<4xf32>
  %m = linalg.reduce ins(%x : tensor<4x8xf32>) outs(%m0 : tensor<4xf32>) dimensions = [1]
    (%in: f32, %acc: f32) {
      %r = arith.maximumf %in, %acc : f32
      linalg.yield %r : f32
    }
  %e0 = tensor.empty() : tensor<4x8xf32>
  %mb = linalg.broadcast ins(%m : tensor<4xf32>) outs(%e0 : tensor<4x8xf32>) dimensions = [1]
  %d0 = tensor.empty() : tensor<4x8xf32>
  %d = linalg.sub ins(%x, %mb : tensor<4x8xf32>, tensor<4x8xf32>) outs(%d0 : tensor<4x8xf32>) -> tensor<4x8xf32>
  %ex0 = tensor.empty() : tensor<4x8xf32>
  %ex = linalg.exp ins(%d : tensor<4x8xf32>) outs(%ex0 : tensor<4x8xf32>) -> tensor<4x8xf32>
  %si = tensor.empty() : tensor<4xf32>
  %s0 = linalg.fill ins(%zero : f32) outs(%si : tensor<4xf32>) -> tensor<4xf32>
  %s = linalg.reduce ins(%ex : tensor<4x8xf32>) outs(%s0 : tensor<4xf32>) dimensions = [1]
    (%in: f32, %acc: f32) {
      %r = arith.addf %in, %acc : f32
      linalg.yield %r : f32
    }
  %sb0 = tensor.empty() : tensor<4x8xf32>
  %sb = linalg.broadcast ins(%s : tensor<4xf32>) outs(%sb0 : tensor<4x8xf32>) dimensions = [1]
  %q0 = tensor.empty() : tensor<4x8xf32>
  %q = linalg.div ins(%ex, %sb : tensor<4x8xf32>, tensor<4x8xf32>) outs(%q0 : tensor<4x8xf32>) -> tensor<4x8xf32>
  return %q : tensor<4x8xf32>
}
func.func @int_sums(%x: tensor<8x4xi8>) -> tensor<4xi32> {
  %zero = arith.constant 0 : i32
  %wide0 = tensor.empty() : tensor<8x4xi32>
  %wide = linalg.map ins(%x : tensor<8x4xi8>) outs(%wide0 : tensor<8x4xi32>)
    (%v: i8, %o: i32) {
      %w = arith.extsi %v : i8 to i32
      linalg.yield %w : i32
    }
  %t0 = tensor.empty() : tensor<4x8xi32>
  %t = linalg.transpose ins(%wide : tensor<8x4xi32>) outs(%t0 : tensor<4x8xi32>) permutation = [1, 0]
  %s0 = tensor.empty() : tensor<4xi32>
  %s1 = linalg.fill ins(%zero : i32) outs(%s0 : tensor<4xi32>) -> tensor<4xi32>
  %s = linalg.reduce ins(%t : tensor<4x8xi32>) outs(%s1 : tensor<4xi32>) dimensions = [1]
    (%in: i32, %acc: i32) {
      %r = arith.addi %in, %acc : i32
      linalg.yield %r : i32
    }
  return %s : tensor<4xi32>
}
func.func @model(%x: tensor<4x8xf32>, %y: tensor<8x4xi8>) -> (tensor<4x8xf32>, tensor<4xi32>) {
  %a = call @softmax(%x) : (tensor<4x8xf32>) -> tensor<4x8xf32>
  %b = call @softmax(%a) : (tensor<4x8xf32>) -> tensor<4x8xf32>
  %c = call @int_sums(%y) : (tensor<8x4xi8>) -> tensor<4xi32>
  return %b, %c : tensor<4x8xf32>, tensor<4xi32>
}
