// Every linalg form the bufferized program prints: calls returning buffers, matmul, named
// elementwise ops (add, exp, sub), tensor.pad (linalg.map), reduce, transpose, broadcast,
// constant weights (splat and dense).
func.func @layer(%x: tensor<1x8xf32>, %w: tensor<8x4xf32>) -> tensor<1x4xf32> {
  %zero = arith.constant 0.0 : f32
  %init = tensor.empty() : tensor<1x4xf32>
  %acc = linalg.fill ins(%zero : f32) outs(%init : tensor<1x4xf32>) -> tensor<1x4xf32>
  %y = linalg.matmul ins(%x, %w : tensor<1x8xf32>, tensor<8x4xf32>) outs(%acc : tensor<1x4xf32>) -> tensor<1x4xf32>
  return %y : tensor<1x4xf32>
}
func.func @model(%x: tensor<1x8xf32>) -> tensor<1x4xf32> {
  %w = arith.constant dense<0.5> : tensor<8x4xf32>
  %w2 = arith.constant dense<[[1.0, 2.0, 3.0, 4.0], [1.0, 2.0, 3.0, 4.0], [1.0, 2.0, 3.0, 4.0], [1.0, 2.0, 3.0, 4.0], [1.0, 2.0, 3.0, 4.0], [1.0, 2.0, 3.0, 4.0], [1.0, 2.0, 3.0, 4.0], [1.0, 2.0, 3.0, 4.0]]> : tensor<8x4xf32>
  %a = call @layer(%x, %w) : (tensor<1x8xf32>, tensor<8x4xf32>) -> tensor<1x4xf32>
  %b = call @layer(%x, %w2) : (tensor<1x8xf32>, tensor<8x4xf32>) -> tensor<1x4xf32>
  %init = tensor.empty() : tensor<1x4xf32>
  %s = linalg.add ins(%a, %b : tensor<1x4xf32>, tensor<1x4xf32>) outs(%init : tensor<1x4xf32>) -> tensor<1x4xf32>
  %t = linalg.exp ins(%s : tensor<1x4xf32>) outs(%init : tensor<1x4xf32>) -> tensor<1x4xf32>
  %pad0 = arith.constant 0.0 : f32
  %p = tensor.pad %t low[0, 1] high[0, 1] { ^bb0(%i: index, %j: index): tensor.yield %pad0 : f32 } : tensor<1x4xf32> to tensor<1x6xf32>
  %rinit = tensor.empty() : tensor<1xf32>
  %rz = linalg.fill ins(%pad0 : f32) outs(%rinit : tensor<1xf32>) -> tensor<1xf32>
  %r = linalg.reduce ins(%p : tensor<1x6xf32>) outs(%rz : tensor<1xf32>) dimensions = [1]
    (%in: f32, %out: f32) { %q = arith.addf %in, %out : f32
      linalg.yield %q : f32 }
  %tinit = tensor.empty() : tensor<6x1xf32>
  %tr = linalg.transpose ins(%p : tensor<1x6xf32>) outs(%tinit : tensor<6x1xf32>) permutation = [1, 0]
  %binit = tensor.empty() : tensor<1x4xf32>
  %bc = linalg.broadcast ins(%r : tensor<1xf32>) outs(%binit : tensor<1x4xf32>) dimensions = [1]
  %o = linalg.sub ins(%t, %bc : tensor<1x4xf32>, tensor<1x4xf32>) outs(%init : tensor<1x4xf32>) -> tensor<1x4xf32>
  return %o : tensor<1x4xf32>
}
