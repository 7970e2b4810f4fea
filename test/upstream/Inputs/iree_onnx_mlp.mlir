// What IREE 3.13 (PyPI iree-base-compiler) makes of a float ONNX model (conv with pads -> relu
// -> reshape -> matmul -> add -> relu -> matmul, opset 17): `iree-import-onnx mlp.onnx`, then
// `iree-opt --torch-onnx-to-torch-backend-pipeline --torch-backend-to-linalg-on-tensors-backend-pipeline`
// (README, "Float ONNX models through IREE"; mlp.onnx of examples/iree/make_onnx_models.py).
// Only the function is renamed, from the graph's name @mlp to the tests' @model
// (usmp{entry=mlp} plans the original as it is).
#map = affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3)>
#map1 = affine_map<(d0, d1) -> (d0, d1)>
#map2 = affine_map<(d0, d1) -> (d1)>
module {
  func.func @model(%arg0: tensor<1x1x2x2xf32>) -> tensor<1x3xf32> {
    %cst = arith.constant 0.000000e+00 : f32
    %cst_0 = arith.constant dense<[[7.500000e-01, 2.500000e-01, 0.000000e+00, -5.000000e-01], [-5.000000e-01, -1.000000e+00, -1.000000e+00, -1.000000e+00], [-7.500000e-01, 7.500000e-01, 2.500000e-01, 1.000000e+00], [0.000000e+00, 2.500000e-01, 1.000000e+00, 5.000000e-01], [2.500000e-01, 0.000000e+00, 2.500000e-01, 1.000000e+00], [-5.000000e-01, 7.500000e-01, 5.000000e-01, -1.000000e+00], [-2.500000e-01, 7.500000e-01, 0.000000e+00, -1.000000e+00], [5.000000e-01, 5.000000e-01, 7.500000e-01, -7.500000e-01]]> : tensor<8x4xf32>
    %cst_1 = arith.constant dense<[-1.000000e+00, 7.500000e-01, -1.000000e+00, 0.000000e+00]> : tensor<4xf32>
    %cst_2 = arith.constant dense<[[-1.000000e+00, -5.000000e-01, 0.000000e+00], [-2.500000e-01, -2.500000e-01, -1.000000e+00], [-1.000000e+00, -7.500000e-01, -1.000000e+00], [5.000000e-01, 0.000000e+00, 2.500000e-01]]> : tensor<4x3xf32>
    %cst_3 = arith.constant dense<[[[[-5.000000e-01, 2.500000e-01, 5.000000e-01], [-2.500000e-01, 0.000000e+00, 1.000000e+00], [7.500000e-01, 1.000000e+00, -2.500000e-01]]], [[[5.000000e-01, 1.000000e+00, 2.500000e-01], [7.500000e-01, 5.000000e-01, 5.000000e-01], [-2.500000e-01, 7.500000e-01, -7.500000e-01]]]]> : tensor<2x1x3x3xf32>
    %padded = tensor.pad %arg0 low[0, 0, 1, 1] high[0, 0, 1, 1] {
    ^bb0(%arg1: index, %arg2: index, %arg3: index, %arg4: index):
      tensor.yield %cst : f32
    } : tensor<1x1x2x2xf32> to tensor<1x1x4x4xf32>
    %0 = tensor.empty() : tensor<1x2x2x2xf32>
    %1 = linalg.fill ins(%cst : f32) outs(%0 : tensor<1x2x2x2xf32>) -> tensor<1x2x2x2xf32>
    %2 = linalg.conv_2d_nchw_fchw {dilations = dense<1> : vector<2xi64>, strides = dense<1> : vector<2xi64>} ins(%padded, %cst_3 : tensor<1x1x4x4xf32>, tensor<2x1x3x3xf32>) outs(%1 : tensor<1x2x2x2xf32>) -> tensor<1x2x2x2xf32>
    %3 = linalg.generic {indexing_maps = [#map, #map], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} ins(%2 : tensor<1x2x2x2xf32>) outs(%0 : tensor<1x2x2x2xf32>) {
    ^bb0(%in: f32, %out: f32):
      %12 = arith.cmpf ugt, %in, %cst : f32
      %13 = arith.select %12, %in, %cst : f32
      linalg.yield %13 : f32
    } -> tensor<1x2x2x2xf32>
    %collapsed = tensor.collapse_shape %3 [[0], [1, 2, 3]] : tensor<1x2x2x2xf32> into tensor<1x8xf32>
    %4 = tensor.empty() : tensor<1x4xf32>
    %5 = linalg.fill ins(%cst : f32) outs(%4 : tensor<1x4xf32>) -> tensor<1x4xf32>
    %6 = linalg.matmul ins(%collapsed, %cst_0 : tensor<1x8xf32>, tensor<8x4xf32>) outs(%5 : tensor<1x4xf32>) -> tensor<1x4xf32>
    %7 = linalg.generic {indexing_maps = [#map1, #map2, #map1], iterator_types = ["parallel", "parallel"]} ins(%6, %cst_1 : tensor<1x4xf32>, tensor<4xf32>) outs(%4 : tensor<1x4xf32>) {
    ^bb0(%in: f32, %in_4: f32, %out: f32):
      %12 = arith.addf %in, %in_4 : f32
      linalg.yield %12 : f32
    } -> tensor<1x4xf32>
    %8 = linalg.generic {indexing_maps = [#map1, #map1], iterator_types = ["parallel", "parallel"]} ins(%7 : tensor<1x4xf32>) outs(%4 : tensor<1x4xf32>) {
    ^bb0(%in: f32, %out: f32):
      %12 = arith.cmpf ugt, %in, %cst : f32
      %13 = arith.select %12, %in, %cst : f32
      linalg.yield %13 : f32
    } -> tensor<1x4xf32>
    %9 = tensor.empty() : tensor<1x3xf32>
    %10 = linalg.fill ins(%cst : f32) outs(%9 : tensor<1x3xf32>) -> tensor<1x3xf32>
    %11 = linalg.matmul ins(%8, %cst_2 : tensor<1x4xf32>, tensor<4x3xf32>) outs(%10 : tensor<1x3xf32>) -> tensor<1x3xf32>
    return %11 : tensor<1x3xf32>
  }
}

