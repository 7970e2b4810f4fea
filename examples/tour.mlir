// The README's tour of the IR as a whole program: two workspace pools and a constant pool,
// an intermediate tensor, constant weights and an operator's int32 scratch buffer.
//   usmp-opt examples/tour.mlir -p 'convert-linalg-to-loops,usmp' -t c
// (Real models come in as .tflite files: examples/mlperf_tiny.)

pool.workspace @sram {size_hint_bytes = 65536 : i64, targets = ["c"]}
pool.workspace @dram {targets = ["c"], internal}
pool.constant @flash {targets = ["c"]}

func.func @main(%x: memref<1x16xi8>, %y: memref<1x16xi8>) {
  %t = usmp.allocate : memref<1x16xi8>
  %w = usmp.allocate_const dense<3> : memref<16x16xi8>
  func.call @dense(%x, %w, %t) : (memref<1x16xi8>, memref<16x16xi8>, memref<1x16xi8>) -> ()
  func.call @relu(%t, %y) : (memref<1x16xi8>, memref<1x16xi8>) -> ()
  func.return
}

// out = in x w, accumulated in int32 and scaled down by 2^4 (wrapping to int8).
func.func @dense(%in: memref<1x16xi8>, %w: memref<16x16xi8>, %out: memref<1x16xi8>) {
  %acc = usmp.allocate {alignment = 64 : i64, pools = [@sram, @dram]} : memref<1x16xi32>
  %zero = arith.constant 0 : i32
  linalg.fill ins(%zero : i32) outs(%acc : memref<1x16xi32>)
  linalg.generic {indexing_maps = [affine_map<(i, j, k) -> (i, k)>, affine_map<(i, j, k) -> (k, j)>, affine_map<(i, j, k) -> (i, j)>], iterator_types = ["parallel", "parallel", "reduction"]} ins(%in, %w : memref<1x16xi8>, memref<16x16xi8>) outs(%acc : memref<1x16xi32>) {
  ^bb0(%a: i8, %b: i8, %sum: i32):
    %a32 = arith.extsi %a : i8 to i32
    %b32 = arith.extsi %b : i8 to i32
    %p = arith.muli %a32, %b32 : i32
    %s = arith.addi %sum, %p : i32
    linalg.yield %s : i32
  }
  linalg.generic {indexing_maps = [affine_map<(i, j) -> (i, j)>, affine_map<(i, j) -> (i, j)>], iterator_types = ["parallel", "parallel"]} ins(%acc : memref<1x16xi32>) outs(%out : memref<1x16xi8>) {
  ^bb0(%sum: i32, %o: i8):
    %four = arith.constant 4 : i32
    %shifted = arith.shrsi %sum, %four : i32
    %r = arith.trunci %shifted : i32 to i8
    linalg.yield %r : i8
  }
  func.return
}

func.func @relu(%in: memref<1x16xi8>, %out: memref<1x16xi8>) {
  linalg.generic {indexing_maps = [affine_map<(i, j) -> (i, j)>, affine_map<(i, j) -> (i, j)>], iterator_types = ["parallel", "parallel"]} ins(%in : memref<1x16xi8>) outs(%out : memref<1x16xi8>) {
  ^bb0(%a: i8, %o: i8):
    %z = arith.constant 0 : i8
    %m = arith.maxsi %a, %z : i8
    linalg.yield %m : i8
  }
  func.return
}
