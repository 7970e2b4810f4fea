// 3-D pooling as IREE lowers ONNX's LRN (a sum over a window of channels, the channels moved
// to the depth dimension of an NDHWC view): linalg.pooling_ndhwc_sum with a window over depth
// and width, and linalg.pooling_ndhwc_max with strides and a dilation.
func.func @model(%x: tensor<1x5x3x4x2xf32>) -> (tensor<1x3x3x3x2xf32>, tensor<1x2x1x3x2xf32>) {
  %zero = arith.constant 0.0 : f32
  %lowest = arith.constant -1.0e+30 : f32
  %window = tensor.empty() : tensor<3x1x2xf32>
  %init = tensor.empty() : tensor<1x3x3x3x2xf32>
  %acc = linalg.fill ins(%zero : f32) outs(%init : tensor<1x3x3x3x2xf32>) -> tensor<1x3x3x3x2xf32>
  %sum = linalg.pooling_ndhwc_sum {dilations = dense<1> : vector<3xi64>, strides = dense<1> : vector<3xi64>}
      ins(%x, %window : tensor<1x5x3x4x2xf32>, tensor<3x1x2xf32>) outs(%acc : tensor<1x3x3x3x2xf32>) -> tensor<1x3x3x3x2xf32>
  %window2 = tensor.empty() : tensor<2x2x2xf32>
  %init2 = tensor.empty() : tensor<1x2x1x3x2xf32>
  %acc2 = linalg.fill ins(%lowest : f32) outs(%init2 : tensor<1x2x1x3x2xf32>) -> tensor<1x2x1x3x2xf32>
  %max = linalg.pooling_ndhwc_max {dilations = dense<[1, 2, 1]> : vector<3xi64>, strides = dense<[2, 1, 1]> : vector<3xi64>}
      ins(%x, %window2 : tensor<1x5x3x4x2xf32>, tensor<2x2x2xf32>) outs(%acc2 : tensor<1x2x1x3x2xf32>) -> tensor<1x2x1x3x2xf32>
  return %sum, %max : tensor<1x3x3x3x2xf32>, tensor<1x2x1x3x2xf32>
}
