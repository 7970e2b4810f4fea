func.func @bias_tanh(%x: memref<2x8xf32>, %b: memref<8xf32>, %y: memref<2x8xf32>) {
  linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d1)>, affine_map<(d0, d1) -> (d0, d1)>], iterator_types = ["parallel", "parallel"]} ins(%x, %b : memref<2x8xf32>, memref<8xf32>) outs(%y : memref<2x8xf32>) {
  ^bb0(%in: f32, %bias: f32, %out: f32):
    %s = arith.addf %in, %bias : f32
    %t = math.tanh %s : f32
    linalg.yield %t : f32
  }
  func.return
}
func.func @mathy(%x: memref<2x8xf32>, %t: memref<2x8xf32>, %y: memref<2x8xf32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c2 = arith.constant 2 : index
  %c8 = arith.constant 8 : index
  %one = arith.constant 1.0 : f32
  %three = arith.constant 3.0 : f32
  %half = arith.constant 1.5 : f32
  %zero = arith.constant 0.0 : f32
  scf.for %i = %c0 to %c2 step %c1 {
    scf.for %j = %c0 to %c8 step %c1 {
      %v = memref.load %x[%i, %j] : memref<2x8xf32>
      %w = memref.load %t[%i, %j] : memref<2x8xf32>
      %a = math.absf %v : f32
      %na = arith.negf %a : f32
      %e = math.exp %na : f32
      %s = math.sqrt %a : f32
      %a1 = arith.addf %a, %one : f32
      %r = math.rsqrt %a1 : f32
      %l = math.log %a1 : f32
      %v3 = arith.mulf %v, %three : f32
      %f = math.floor %v3 : f32
      %c = math.ceil %v3 : f32
      %p = math.powf %a1, %half : f32
      %m = math.fma %v, %e, %s : f32
      %neg = arith.cmpf olt, %v, %zero : f32
      %fc = arith.select %neg, %f, %c : f32
      %mx = arith.maximumf %w, %zero : f32
      %mn = arith.minimumf %v, %w : f32
      %s1 = arith.addf %r, %l : f32
      %s2 = arith.subf %p, %m : f32
      %s3 = arith.divf %fc, %a1 : f32
      %s4 = arith.addf %s1, %s2 : f32
      %s5 = arith.addf %s3, %mx : f32
      %s6 = arith.addf %s4, %s5 : f32
      %s7 = arith.addf %s6, %mn : f32
      memref.store %s7, %y[%i, %j] : memref<2x8xf32>
    }
  }
  func.return
}
func.func @main(%x: memref<2x8xf32>, %y: memref<2x8xf32>) {
  %b = usmp.allocate_const $bias : memref<8xf32>
  %t = usmp.allocate : memref<2x8xf32>
  func.call @bias_tanh(%x, %b, %t) : (memref<2x8xf32>, memref<8xf32>, memref<2x8xf32>) -> ()
  func.call @mathy(%x, %t, %y) : (memref<2x8xf32>, memref<2x8xf32>, memref<2x8xf32>) -> ()
  func.return
}
