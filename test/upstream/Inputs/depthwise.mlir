// Depthwise convolutions as IREE lowers ONNX's grouped Conv with one channel per group:
// linalg.depthwise_conv_2d_nchw_chw (stride 2, dilation 1, as in ShuffleNet) and
// linalg.depthwise_conv_2d_nhwc_hwc (stride 1, dilation 2), constant filters.
func.func @model(%x: tensor<1x3x7x7xf32>) -> (tensor<1x3x3x3xf32>, tensor<1x3x3x3xf32>) {
  %zero = arith.constant 0.0 : f32
  %k = arith.constant dense<[[[0.25, -0.5, 1.0], [0.0, 0.75, -0.25], [0.5, 0.125, -1.0]], [[1.0, 0.5, 0.25], [-0.5, 0.0, 0.5], [0.25, -0.75, 0.125]], [[-0.25, 0.25, 0.5], [1.0, -1.0, 0.0], [0.75, 0.5, -0.5]]]> : tensor<3x3x3xf32>
  %init = tensor.empty() : tensor<1x3x3x3xf32>
  %acc = linalg.fill ins(%zero : f32) outs(%init : tensor<1x3x3x3xf32>) -> tensor<1x3x3x3xf32>
  %y = linalg.depthwise_conv_2d_nchw_chw {dilations = dense<1> : vector<2xi64>, strides = dense<2> : vector<2xi64>}
      ins(%x, %k : tensor<1x3x7x7xf32>, tensor<3x3x3xf32>) outs(%acc : tensor<1x3x3x3xf32>) -> tensor<1x3x3x3xf32>
  %nhwc_init = tensor.empty() : tensor<1x7x7x3xf32>
  %nhwc = linalg.transpose ins(%x : tensor<1x3x7x7xf32>) outs(%nhwc_init : tensor<1x7x7x3xf32>) permutation = [0, 2, 3, 1]
  %acc2 = linalg.fill ins(%zero : f32) outs(%init : tensor<1x3x3x3xf32>) -> tensor<1x3x3x3xf32>
  %z = linalg.depthwise_conv_2d_nhwc_hwc {dilations = dense<2> : tensor<2xi64>, strides = dense<1> : tensor<2xi64>}
      ins(%nhwc, %k : tensor<1x7x7x3xf32>, tensor<3x3x3xf32>) outs(%acc2 : tensor<1x3x3x3xf32>) -> tensor<1x3x3x3xf32>
  return %y, %z : tensor<1x3x3x3xf32>, tensor<1x3x3x3xf32>
}
