// Contractions xDSL does not have: batch_matmul on int8 with an int32 accumulator (the inputs
// sign-extended, as upstream's named op does), matvec and vecmat on floats.
func.func @model(%a: tensor<2x3x4xi8>, %b: tensor<2x4x5xi8>, %m: tensor<3x6xf32>, %v: tensor<6xf32>) -> (tensor<2x3x5xi32>, tensor<3xf32>, tensor<6xf32>) {
  %zero = arith.constant 0 : i32
  %fzero = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<2x3x5xi32>
  %acc = linalg.fill ins(%zero : i32) outs(%e : tensor<2x3x5xi32>) -> tensor<2x3x5xi32>
  %bmm = linalg.batch_matmul ins(%a, %b : tensor<2x3x4xi8>, tensor<2x4x5xi8>) outs(%acc : tensor<2x3x5xi32>) -> tensor<2x3x5xi32>
  %ev = tensor.empty() : tensor<3xf32>
  %accv = linalg.fill ins(%fzero : f32) outs(%ev : tensor<3xf32>) -> tensor<3xf32>
  %mv = linalg.matvec ins(%m, %v : tensor<3x6xf32>, tensor<6xf32>) outs(%accv : tensor<3xf32>) -> tensor<3xf32>
  %ew = tensor.empty() : tensor<6xf32>
  %accw = linalg.fill ins(%fzero : f32) outs(%ew : tensor<6xf32>) -> tensor<6xf32>
  %vm = linalg.vecmat ins(%mv, %m : tensor<3xf32>, tensor<3x6xf32>) outs(%accw : tensor<6xf32>) -> tensor<6xf32>
  return %bmm, %mv, %vm : tensor<2x3x5xi32>, tensor<3xf32>, tensor<6xf32>
}
