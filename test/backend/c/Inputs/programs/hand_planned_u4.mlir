builtin.module attributes {usmp.io_allocations = [{name = "x", kind = "input", pool = @sram, offset = 0 : i64, type = memref<4x16xf32>}, {name = "y", kind = "output", pool = @sram, offset = 256 : i64, type = memref<4x8xf32>}]} {
  pool.workspace @sram {size_bytes = 512 : i64}
  pool.constant @global_constant {internal, size_bytes = 512 : i64, data = $weight_bytes}
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
  func.func @main() {
    %sram = pool.base @sram : memref<512xi8>
    %global_constant = pool.base @global_constant : memref<512xi8>
    %x_offset = arith.constant 0 : index
    %x = memref.view %sram[%x_offset][] {usmp.buffer = "x"} : memref<512xi8> to memref<4x16xf32>
    %y_offset = arith.constant 256 : index
    %y = memref.view %sram[%y_offset][] {usmp.buffer = "y"} : memref<512xi8> to memref<4x8xf32>
    %t_offset = arith.constant 384 : index
    %t = memref.view %sram[%t_offset][] {usmp.buffer = "t"} : memref<512xi8> to memref<4x8xf32>
    %w_offset = arith.constant 0 : index
    %w = memref.view %global_constant[%w_offset][] {usmp.buffer = "w"} : memref<512xi8> to memref<16x8xf32>
    func.call @dense(%x, %w, %t) : (memref<4x16xf32>, memref<16x8xf32>, memref<4x8xf32>) -> ()
    func.call @relu(%t, %y) : (memref<4x8xf32>, memref<4x8xf32>) -> ()
    func.return
  }
}
