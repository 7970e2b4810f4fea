func.func @dense(%x: memref<4x16xf32>, %w: memref<16x8xf32>, %acc: memref<4x8xf32>) {
  %z = arith.constant 0.0 : f32
  linalg.fill ins(%z : f32) outs(%acc : memref<4x8xf32>)
  linalg.matmul ins(%x, %w : memref<4x16xf32>, memref<16x8xf32>) outs(%acc : memref<4x8xf32>)
  func.return
}
func.func @relu(%a: memref<4x8xf32>, %o: memref<4x8xf32>) {
  linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d0, d1)>], iterator_types = ["parallel", "parallel"]} ins(%a : memref<4x8xf32>) outs(%o : memref<4x8xf32>) {
  ^bb0(%in: f32, %out: f32):
    %z = arith.constant 0.0 : f32
    %m = arith.maximumf %in, %z : f32
    linalg.yield %m : f32
  }
  func.return
}
func.func @main(%x: memref<4x16xf32>, %y: memref<4x8xf32>) {
  %w = usmp.allocate_const $weights : memref<16x8xf32>
  %t = usmp.allocate : memref<4x8xf32>
  func.call @dense(%x, %w, %t) : (memref<4x16xf32>, memref<16x8xf32>, memref<4x8xf32>) -> ()
  func.call @relu(%t, %y) : (memref<4x8xf32>, memref<4x8xf32>) -> ()
  func.return
}
