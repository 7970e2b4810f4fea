func.func @conv1x1(%x: $t, %w: $w, %y: $t) {
  %z = arith.constant 0.0 : f32
  linalg.fill ins(%z : f32) outs(%y : $t)
  linalg.conv_2d_nhwc_hwcf {dilations = dense<1> : tensor<2xi64>, strides = dense<1> : tensor<2xi64>} ins(%x, %w : $t, $w) outs(%y : $t)
  func.return
}
func.func @conv1x1_relu(%x: $t, %w: $w, %y: $t) {
  %scratch = usmp.allocate : $t
  func.call @conv1x1(%x, %w, %scratch) : ($t, $w, $t) -> ()
  linalg.generic {indexing_maps = [affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3)>, affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3)>], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} ins(%scratch : $t) outs(%y : $t) {
  ^bb0(%in: f32, %out: f32):
    %z = arith.constant 0.0 : f32
    %m = arith.maximumf %in, %z : f32
    linalg.yield %m : f32
  }
  func.return
}
func.func @add_relu(%a: $t, %b: $t, %y: $t) {
  linalg.generic {indexing_maps = [affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3)>, affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3)>, affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3)>], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} ins(%a, %b : $t, $t) outs(%y : $t) {
  ^bb0(%l: f32, %r: f32, %out: f32):
    %s = arith.addf %l, %r : f32
    %z = arith.constant 0.0 : f32
    %m = arith.maximumf %s, %z : f32
    linalg.yield %m : f32
  }
  func.return
}
func.func @main(%x: $t, %y: $t) {
  %w1 = usmp.allocate_const $w1 : $w
  %w2 = usmp.allocate_const $w2 : $w
  %t1 = usmp.allocate : $t
  %t2 = usmp.allocate : $t
  func.call @conv1x1_relu(%x, %w1, %t1) : ($t, $w, $t) -> ()
  func.call @conv1x1(%t1, %w2, %t2) : ($t, $w, $t) -> ()
  func.call @add_relu(%t2, %x, %y) : ($t, $t, $t) -> ()
  func.return
}
