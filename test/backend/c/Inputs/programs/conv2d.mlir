func.func @conv(%x: memref<1x8x8x3xf32>, %w: memref<3x3x3x4xf32>, %y: memref<1x6x6x4xf32>) {
  %z = arith.constant 0.0 : f32
  linalg.fill ins(%z : f32) outs(%y : memref<1x6x6x4xf32>)
  linalg.conv_2d_nhwc_hwcf {dilations = dense<1> : tensor<2xi64>, strides = dense<1> : tensor<2xi64>} ins(%x, %w : memref<1x8x8x3xf32>, memref<3x3x3x4xf32>) outs(%y : memref<1x6x6x4xf32>)
  func.return
}
func.func @bias_relu(%a: memref<1x6x6x4xf32>, %b: memref<4xf32>, %o: memref<1x6x6x4xf32>) {
  linalg.generic {indexing_maps = [affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3)>, affine_map<(d0, d1, d2, d3) -> (d3)>, affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3)>], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} ins(%a, %b : memref<1x6x6x4xf32>, memref<4xf32>) outs(%o : memref<1x6x6x4xf32>) {
  ^bb0(%in: f32, %bias: f32, %out: f32):
    %s = arith.addf %in, %bias : f32
    %z = arith.constant 0.0 : f32
    %m = arith.maximumf %s, %z : f32
    linalg.yield %m : f32
  }
  func.return
}
func.func @main(%x: memref<1x8x8x3xf32>, %y: memref<1x6x6x4xf32>) {
  %w = usmp.allocate_const $weights : memref<3x3x3x4xf32>
  %b = usmp.allocate_const $bias : memref<4xf32>
  %t = usmp.allocate : memref<1x6x6x4xf32>
  func.call @conv(%x, %w, %t) : (memref<1x8x8x3xf32>, memref<3x3x3x4xf32>, memref<1x6x6x4xf32>) -> ()
  func.call @bias_relu(%t, %b, %y) : (memref<1x6x6x4xf32>, memref<4xf32>, memref<1x6x6x4xf32>) -> ()
  func.return
}
