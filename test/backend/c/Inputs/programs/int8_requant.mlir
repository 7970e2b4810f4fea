func.func @qdense(%x: memref<4x16xi8>, %w: memref<16x8xi8>, %b: memref<8xi32>, %y: memref<4x8xi8>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c4 = arith.constant 4 : index
  %c8 = arith.constant 8 : index
  %c16 = arith.constant 16 : index
  %acc = usmp.allocate : memref<4x8xi32>
  scf.for %i = %c0 to %c4 step %c1 {
    scf.for %j = %c0 to %c8 step %c1 {
      %bias = memref.load %b[%j] : memref<8xi32>
      %sum = scf.for %k = %c0 to %c16 step %c1 iter_args(%s = %bias) -> (i32) {
        %xv = memref.load %x[%i, %k] : memref<4x16xi8>
        %wv = memref.load %w[%k, %j] : memref<16x8xi8>
        %xe = arith.extsi %xv : i8 to i32
        %we = arith.extsi %wv : i8 to i32
        %p = arith.muli %xe, %we : i32
        %n = arith.addi %s, %p : i32
        scf.yield %n : i32
      }
      memref.store %sum, %acc[%i, %j] : memref<4x8xi32>
    }
  }
  %mult = arith.constant $multiplier : i64
  %shift = arith.constant $shift : i64
  %round = arith.constant $round : i64
  %zp = arith.constant $zero_point : i32
  %lo = arith.constant -128 : i32
  %hi = arith.constant 127 : i32
  scf.for %i = %c0 to %c4 step %c1 {
    scf.for %j = %c0 to %c8 step %c1 {
      %a = memref.load %acc[%i, %j] : memref<4x8xi32>
      %a64 = arith.extsi %a : i32 to i64
      %scaled = arith.muli %a64, %mult : i64
      %rounded = arith.addi %scaled, %round : i64
      %q64 = arith.shrsi %rounded, %shift : i64
      %q = arith.trunci %q64 : i64 to i32
      %qz = arith.addi %q, %zp : i32
      %c_lo = arith.maxsi %qz, %lo : i32
      %c_hi = arith.minsi %c_lo, %hi : i32
      %out = arith.trunci %c_hi : i32 to i8
      memref.store %out, %y[%i, %j] : memref<4x8xi8>
    }
  }
  func.return
}
func.func @main(%x: memref<4x16xi8>, %y: memref<4x8xi8>) {
  %w = usmp.allocate_const $weights : memref<16x8xi8>
  %b = usmp.allocate_const $bias : memref<8xi32>
  func.call @qdense(%x, %w, %b, %y) : (memref<4x16xi8>, memref<16x8xi8>, memref<8xi32>, memref<4x8xi8>) -> ()
  func.return
}
