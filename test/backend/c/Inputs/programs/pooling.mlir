func.func @pool(%x: memref<1x6x6x4xf32>, %mx: memref<1x3x3x4xf32>, %avg: memref<1x3x3x4xf32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c2 = arith.constant 2 : index
  %c3 = arith.constant 3 : index
  %c4 = arith.constant 4 : index
  %lowest = arith.constant -3.0e38 : f32
  %zero = arith.constant 0.0 : f32
  %quarter = arith.constant 4.0 : f32
  scf.for %oh = %c0 to %c3 step %c1 {
    scf.for %ow = %c0 to %c3 step %c1 {
      scf.for %ch = %c0 to %c4 step %c1 {
        %best, %sum = scf.for %kh = %c0 to %c2 step %c1 iter_args(%b0 = %lowest, %s0 = %zero) -> (f32, f32) {
          %b2, %s2 = scf.for %kw = %c0 to %c2 step %c1 iter_args(%b1 = %b0, %s1 = %s0) -> (f32, f32) {
            %h0 = arith.muli %oh, %c2 : index
            %h = arith.addi %h0, %kh : index
            %w0 = arith.muli %ow, %c2 : index
            %w = arith.addi %w0, %kw : index
            %v = memref.load %x[%c0, %h, %w, %ch] : memref<1x6x6x4xf32>
            %gt = arith.cmpf ogt, %v, %b1 : f32
            %nb = arith.select %gt, %v, %b1 : f32
            %ns = arith.addf %s1, %v : f32
            scf.yield %nb, %ns : f32, f32
          }
          scf.yield %b2, %s2 : f32, f32
        }
        memref.store %best, %mx[%c0, %oh, %ow, %ch] : memref<1x3x3x4xf32>
        %mean = arith.divf %sum, %quarter : f32
        memref.store %mean, %avg[%c0, %oh, %ow, %ch] : memref<1x3x3x4xf32>
      }
    }
  }
  func.return
}
func.func @main(%x: memref<1x6x6x4xf32>, %y_max: memref<1x3x3x4xf32>, %y_avg: memref<1x3x3x4xf32>) {
  %scratch_max = usmp.allocate : memref<1x3x3x4xf32>
  func.call @pool(%x, %scratch_max, %y_avg) : (memref<1x6x6x4xf32>, memref<1x3x3x4xf32>, memref<1x3x3x4xf32>) -> ()
  "memref.copy"(%scratch_max, %y_max) : (memref<1x3x3x4xf32>, memref<1x3x3x4xf32>) -> ()
  func.return
}
