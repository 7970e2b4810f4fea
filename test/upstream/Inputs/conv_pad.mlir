// A padded 3x3 convolution (tensor.pad, bufferized to linalg.map + a copy into a subview),
// then a second convolution and a residual add of the two (NHWC, constant filters).
func.func @conv(%x: tensor<1x6x6x2xf32>, %f: tensor<3x3x2x2xf32>) -> tensor<1x6x6x2xf32> {
  %zero = arith.constant 0.0 : f32
  %padded = tensor.pad %x low[0, 1, 1, 0] high[0, 1, 1, 0] {
  ^bb0(%i: index, %j: index, %k: index, %l: index):
    tensor.yield %zero : f32
  } : tensor<1x6x6x2xf32> to tensor<1x8x8x2xf32>
  %init = tensor.empty() : tensor<1x6x6x2xf32>
  %acc = linalg.fill ins(%zero : f32) outs(%init : tensor<1x6x6x2xf32>) -> tensor<1x6x6x2xf32>
  %y = linalg.conv_2d_nhwc_hwcf {dilations = dense<1> : tensor<2xi64>, strides = dense<1> : tensor<2xi64>}
      ins(%padded, %f : tensor<1x8x8x2xf32>, tensor<3x3x2x2xf32>) outs(%acc : tensor<1x6x6x2xf32>) -> tensor<1x6x6x2xf32>
  return %y : tensor<1x6x6x2xf32>
}
func.func @model(%x: tensor<1x6x6x2xf32>) -> tensor<1x6x6x2xf32> {
  %f1 = arith.constant dense<0.25> : tensor<3x3x2x2xf32>
  %f2 = arith.constant dense<[[[[0.5, -0.5], [0.25, 0.0]], [[1.0, 0.0], [0.0, 1.0]], [[-0.25, 0.5], [0.5, -0.25]]], [[[0.125, 0.25], [0.5, 1.0]], [[0.0, 0.0], [1.0, 1.0]], [[-1.0, 0.5], [0.25, 0.125]]], [[[0.5, 0.5], [0.5, 0.5]], [[0.25, -0.25], [0.75, -0.75]], [[1.0, -1.0], [0.0, 0.5]]]]> : tensor<3x3x2x2xf32>
  %a = call @conv(%x, %f1) : (tensor<1x6x6x2xf32>, tensor<3x3x2x2xf32>) -> tensor<1x6x6x2xf32>
  %b = call @conv(%a, %f2) : (tensor<1x6x6x2xf32>, tensor<3x3x2x2xf32>) -> tensor<1x6x6x2xf32>
  %init = tensor.empty() : tensor<1x6x6x2xf32>
  %sum = linalg.add ins(%a, %b : tensor<1x6x6x2xf32>, tensor<1x6x6x2xf32>) outs(%init : tensor<1x6x6x2xf32>) -> tensor<1x6x6x2xf32>
  return %sum : tensor<1x6x6x2xf32>
}
