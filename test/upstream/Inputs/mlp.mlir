// A two-layer perceptron: matmul, bias add (broadcast), relu, constant weights; each layer an
// operator function returning its result (upstream bufferization's default).
#row = affine_map<(d0, d1) -> (d0, d1)>
#bias = affine_map<(d0, d1) -> (d1)>
func.func @dense(%x: tensor<2x6xf32>, %w: tensor<6x5xf32>, %b: tensor<5xf32>) -> tensor<2x5xf32> {
  %zero = arith.constant 0.0 : f32
  %init = tensor.empty() : tensor<2x5xf32>
  %acc = linalg.fill ins(%zero : f32) outs(%init : tensor<2x5xf32>) -> tensor<2x5xf32>
  %mm = linalg.matmul ins(%x, %w : tensor<2x6xf32>, tensor<6x5xf32>) outs(%acc : tensor<2x5xf32>) -> tensor<2x5xf32>
  %out = tensor.empty() : tensor<2x5xf32>
  %y = linalg.generic {indexing_maps = [#row, #bias, #row], iterator_types = ["parallel", "parallel"]}
      ins(%mm, %b : tensor<2x5xf32>, tensor<5xf32>) outs(%out : tensor<2x5xf32>) {
  ^bb0(%v: f32, %c: f32, %o: f32):
    %s = arith.addf %v, %c : f32
    %r = arith.maximumf %s, %zero : f32
    linalg.yield %r : f32
  } -> tensor<2x5xf32>
  return %y : tensor<2x5xf32>
}
func.func @dense2(%x: tensor<2x5xf32>, %w: tensor<5x3xf32>) -> tensor<2x3xf32> {
  %zero = arith.constant 0.0 : f32
  %init = tensor.empty() : tensor<2x3xf32>
  %acc = linalg.fill ins(%zero : f32) outs(%init : tensor<2x3xf32>) -> tensor<2x3xf32>
  %mm = linalg.matmul ins(%x, %w : tensor<2x5xf32>, tensor<5x3xf32>) outs(%acc : tensor<2x3xf32>) -> tensor<2x3xf32>
  return %mm : tensor<2x3xf32>
}
func.func @model(%x: tensor<2x6xf32>) -> tensor<2x3xf32> {
  %w1 = arith.constant dense<[[0.5, -0.25, 1.0, 0.0, 0.75], [0.125, 0.5, -1.0, 0.25, 0.0], [1.0, 1.0, 0.5, -0.5, 0.25], [-0.75, 0.0, 0.25, 0.5, 1.0], [0.0, 0.25, 0.5, 0.75, -1.0], [0.5, -0.5, 0.5, -0.5, 0.5]]> : tensor<6x5xf32>
  %b1 = arith.constant dense<[0.1, -0.2, 0.3, -0.4, 0.5]> : tensor<5xf32>
  %w2 = arith.constant dense<[[1.0, 0.5, -0.5], [0.25, -1.0, 0.75], [0.5, 0.5, 0.5], [-0.25, 0.125, 1.0], [0.0, 1.0, -1.0]]> : tensor<5x3xf32>
  %h = call @dense(%x, %w1, %b1) : (tensor<2x6xf32>, tensor<6x5xf32>, tensor<5xf32>) -> tensor<2x5xf32>
  %y = call @dense2(%h, %w2) : (tensor<2x5xf32>, tensor<5x3xf32>) -> tensor<2x3xf32>
  return %y : tensor<2x3xf32>
}
