// What IREE 3.13 (PyPI iree-base-compiler) makes of a float ONNX CNN (conv with bias and pads ->
// relu -> maxpool -> averagepool -> reshape -> gemm -> sigmoid -> softmax, opset 17; cnn.onnx of
// examples/iree/make_onnx_models.py): `iree-import-onnx cnn.onnx`, then `iree-opt
// --torch-onnx-to-torch-backend-pipeline --torch-backend-to-linalg-on-tensors-backend-pipeline`.
// Only the function is renamed, from the graph's name @cnn to the tests' @model.
#map = affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3)>
#map1 = affine_map<(d0, d1) -> (d0, d1)>
#map2 = affine_map<(d0, d1) -> (d1)>
#map3 = affine_map<(d0, d1) -> (d0)>
#map4 = affine_map<(d0, d1) -> (d0, 0)>
module {
  func.func @model(%arg0: tensor<1x2x4x4xf32>) -> tensor<1x10xf32> {
    %c0_i64 = arith.constant 0 : i64
    %cst = arith.constant 0.000000e+00 : f32
    %cst_0 = arith.constant 0xFF800000 : f32
    %cst_1 = arith.constant 1.000000e+00 : f32
    %cst_2 = arith.constant dense<[[[[0.000000e+00, 0.000000e+00, 5.000000e-01], [1.000000e+00, -1.000000e+00, -7.500000e-01], [7.500000e-01, 1.000000e+00, -5.000000e-01]], [[-5.000000e-01, 7.500000e-01, -2.500000e-01], [-5.000000e-01, 7.500000e-01, -5.000000e-01], [-2.500000e-01, 2.500000e-01, 0.000000e+00]]], [[[-1.000000e+00, -1.000000e+00, 7.500000e-01], [5.000000e-01, 7.500000e-01, 0.000000e+00], [7.500000e-01, -5.000000e-01, 0.000000e+00]], [[7.500000e-01, -7.500000e-01, -5.000000e-01], [-7.500000e-01, 0.000000e+00, 1.000000e+00], [-7.500000e-01, -2.500000e-01, -2.500000e-01]]], [[[1.000000e+00, -7.500000e-01, 0.000000e+00], [-5.000000e-01, -1.000000e+00, 5.000000e-01], [-1.000000e+00, -5.000000e-01, 0.000000e+00]], [[0.000000e+00, -7.500000e-01, 1.000000e+00], [5.000000e-01, 1.000000e+00, -1.000000e+00], [5.000000e-01, -5.000000e-01, 0.000000e+00]]], [[[1.000000e+00, -5.000000e-01, 5.000000e-01], [-7.500000e-01, -5.000000e-01, 1.000000e+00], [-2.500000e-01, 0.000000e+00, -5.000000e-01]], [[-7.500000e-01, -2.500000e-01, 2.500000e-01], [0.000000e+00, 5.000000e-01, -2.500000e-01], [2.500000e-01, 5.000000e-01, 1.000000e+00]]]]> : tensor<4x2x3x3xf32>
    %cst_3 = arith.constant dense<[-2.500000e-01, -1.000000e+00, 5.000000e-01, 0.000000e+00]> : tensor<4xf32>
    %cst_4 = arith.constant dense<[[7.500000e-01, 0.000000e+00, -2.500000e-01, -1.000000e+00], [0.000000e+00, 2.500000e-01, 5.000000e-01, 7.500000e-01], [-7.500000e-01, 2.500000e-01, 7.500000e-01, -5.000000e-01], [-2.500000e-01, 7.500000e-01, 2.500000e-01, 0.000000e+00], [5.000000e-01, 0.000000e+00, 1.000000e+00, 5.000000e-01], [-1.000000e+00, -7.500000e-01, 0.000000e+00, 7.500000e-01], [-1.000000e+00, 5.000000e-01, 5.000000e-01, 7.500000e-01], [7.500000e-01, -7.500000e-01, 0.000000e+00, 7.500000e-01], [-2.500000e-01, -7.500000e-01, 0.000000e+00, -1.000000e+00], [-7.500000e-01, 7.500000e-01, 5.000000e-01, 7.500000e-01]]> : tensor<10x4xf32>
    %cst_5 = arith.constant dense<[7.500000e-01, 7.500000e-01, -5.000000e-01, 0.000000e+00, 2.500000e-01, -5.000000e-01, 1.000000e+00, -1.000000e+00, 7.500000e-01, 2.500000e-01]> : tensor<10xf32>
    %cst_6 = arith.constant 4.000000e+00 : f32
    %padded = tensor.pad %arg0 low[0, 0, 1, 1] high[0, 0, 1, 1] {
    ^bb0(%arg1: index, %arg2: index, %arg3: index, %arg4: index):
      tensor.yield %cst : f32
    } : tensor<1x2x4x4xf32> to tensor<1x2x6x6xf32>
    %0 = tensor.empty() : tensor<1x4x4x4xf32>
    %broadcasted = linalg.broadcast ins(%cst_3 : tensor<4xf32>) outs(%0 : tensor<1x4x4x4xf32>) dimensions = [0, 2, 3] 
    %1 = linalg.conv_2d_nchw_fchw {dilations = dense<1> : vector<2xi64>, strides = dense<1> : vector<2xi64>} ins(%padded, %cst_2 : tensor<1x2x6x6xf32>, tensor<4x2x3x3xf32>) outs(%broadcasted : tensor<1x4x4x4xf32>) -> tensor<1x4x4x4xf32>
    %2 = linalg.generic {indexing_maps = [#map, #map], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} ins(%1 : tensor<1x4x4x4xf32>) outs(%0 : tensor<1x4x4x4xf32>) {
    ^bb0(%in: f32, %out: f32):
      %28 = arith.cmpf ugt, %in, %cst : f32
      %29 = arith.select %28, %in, %cst : f32
      linalg.yield %29 : f32
    } -> tensor<1x4x4x4xf32>
    %3 = tensor.empty() : tensor<1x4x2x2xf32>
    %4 = linalg.fill ins(%cst_0 : f32) outs(%3 : tensor<1x4x2x2xf32>) -> tensor<1x4x2x2xf32>
    %5 = tensor.empty() : tensor<2x2xf32>
    %6 = linalg.pooling_nchw_max {dilations = dense<1> : vector<2xi64>, strides = dense<2> : vector<2xi64>} ins(%2, %5 : tensor<1x4x4x4xf32>, tensor<2x2xf32>) outs(%4 : tensor<1x4x2x2xf32>) -> tensor<1x4x2x2xf32>
    %7 = tensor.empty() : tensor<1x4x1x1xf32>
    %8 = linalg.fill ins(%cst : f32) outs(%7 : tensor<1x4x1x1xf32>) -> tensor<1x4x1x1xf32>
    %9 = linalg.pooling_nchw_sum {dilations = dense<1> : vector<2xi64>, strides = dense<2> : vector<2xi64>} ins(%6, %5 : tensor<1x4x2x2xf32>, tensor<2x2xf32>) outs(%8 : tensor<1x4x1x1xf32>) -> tensor<1x4x1x1xf32>
    %10 = linalg.generic {indexing_maps = [#map, #map], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} ins(%9 : tensor<1x4x1x1xf32>) outs(%7 : tensor<1x4x1x1xf32>) {
    ^bb0(%in: f32, %out: f32):
      %28 = arith.divf %in, %cst_6 : f32
      linalg.yield %28 : f32
    } -> tensor<1x4x1x1xf32>
    %collapsed = tensor.collapse_shape %10 [[0], [1, 2, 3]] : tensor<1x4x1x1xf32> into tensor<1x4xf32>
    %11 = tensor.empty() : tensor<4x10xf32>
    %transposed = linalg.transpose ins(%cst_4 : tensor<10x4xf32>) outs(%11 : tensor<4x10xf32>) permutation = [1, 0] 
    %12 = tensor.empty() : tensor<1x10xf32>
    %13 = linalg.fill ins(%cst : f32) outs(%12 : tensor<1x10xf32>) -> tensor<1x10xf32>
    %14 = linalg.matmul ins(%collapsed, %transposed : tensor<1x4xf32>, tensor<4x10xf32>) outs(%13 : tensor<1x10xf32>) -> tensor<1x10xf32>
    %15 = linalg.generic {indexing_maps = [#map1, #map2, #map1], iterator_types = ["parallel", "parallel"]} ins(%14, %cst_5 : tensor<1x10xf32>, tensor<10xf32>) outs(%12 : tensor<1x10xf32>) {
    ^bb0(%in: f32, %in_7: f32, %out: f32):
      %28 = arith.addf %in, %in_7 : f32
      linalg.yield %28 : f32
    } -> tensor<1x10xf32>
    %16 = linalg.generic {indexing_maps = [#map1, #map1], iterator_types = ["parallel", "parallel"]} ins(%15 : tensor<1x10xf32>) outs(%12 : tensor<1x10xf32>) {
    ^bb0(%in: f32, %out: f32):
      %28 = arith.negf %in : f32
      %29 = math.exp %28 : f32
      %30 = arith.addf %29, %cst_1 : f32
      %31 = arith.divf %cst_1, %30 : f32
      linalg.yield %31 : f32
    } -> tensor<1x10xf32>
    %17 = tensor.empty() : tensor<1xi64>
    %18 = linalg.fill ins(%c0_i64 : i64) outs(%17 : tensor<1xi64>) -> tensor<1xi64>
    %19 = tensor.empty() : tensor<1xf32>
    %20 = linalg.fill ins(%cst_0 : f32) outs(%19 : tensor<1xf32>) -> tensor<1xf32>
    %21:2 = linalg.generic {indexing_maps = [#map1, #map3, #map3], iterator_types = ["parallel", "reduction"]} ins(%16 : tensor<1x10xf32>) outs(%20, %18 : tensor<1xf32>, tensor<1xi64>) {
    ^bb0(%in: f32, %out: f32, %out_7: i64):
      %28 = linalg.index 1 : index
      %29 = arith.index_cast %28 : index to i64
      %30 = arith.maximumf %in, %out : f32
      %31 = arith.cmpf ogt, %in, %out : f32
      %32 = arith.select %31, %29, %out_7 : i64
      linalg.yield %30, %32 : f32, i64
    } -> (tensor<1xf32>, tensor<1xi64>)
    %expanded = tensor.expand_shape %21#0 [[0, 1]] output_shape [1, 1] : tensor<1xf32> into tensor<1x1xf32>
    %22 = linalg.generic {indexing_maps = [#map1, #map4, #map1], iterator_types = ["parallel", "parallel"]} ins(%16, %expanded : tensor<1x10xf32>, tensor<1x1xf32>) outs(%12 : tensor<1x10xf32>) {
    ^bb0(%in: f32, %in_7: f32, %out: f32):
      %28 = arith.subf %in, %in_7 : f32
      linalg.yield %28 : f32
    } -> tensor<1x10xf32>
    %23 = linalg.generic {indexing_maps = [#map1, #map1], iterator_types = ["parallel", "parallel"]} ins(%22 : tensor<1x10xf32>) outs(%12 : tensor<1x10xf32>) {
    ^bb0(%in: f32, %out: f32):
      %28 = math.exp %in : f32
      linalg.yield %28 : f32
    } -> tensor<1x10xf32>
    %24 = tensor.empty() : tensor<1x1xf32>
    %25 = linalg.fill ins(%cst : f32) outs(%24 : tensor<1x1xf32>) -> tensor<1x1xf32>
    %26 = linalg.generic {indexing_maps = [#map1, #map4], iterator_types = ["parallel", "reduction"]} ins(%23 : tensor<1x10xf32>) outs(%25 : tensor<1x1xf32>) {
    ^bb0(%in: f32, %out: f32):
      %28 = arith.addf %in, %out : f32
      linalg.yield %28 : f32
    } -> tensor<1x1xf32>
    %27 = linalg.generic {indexing_maps = [#map1, #map4, #map1], iterator_types = ["parallel", "parallel"]} ins(%23, %26 : tensor<1x10xf32>, tensor<1x1xf32>) outs(%12 : tensor<1x10xf32>) {
    ^bb0(%in: f32, %in_7: f32, %out: f32):
      %28 = arith.divf %in, %in_7 : f32
      linalg.yield %28 : f32
    } -> tensor<1x10xf32>
    return %27 : tensor<1x10xf32>
  }
}

