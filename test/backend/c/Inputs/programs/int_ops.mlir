func.func @int_ops(%a: memref<64xi32>, %b: memref<64xi32>, %o: memref<${rows}x64xi32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c64 = arith.constant 64 : index
  %c31 = arith.constant 31 : i32
  %r0 = arith.constant 0 : index
  %r1 = arith.constant 1 : index
  %r2 = arith.constant 2 : index
  %r3 = arith.constant 3 : index
  %r4 = arith.constant 4 : index
  %r5 = arith.constant 5 : index
  %r6 = arith.constant 6 : index
  %r7 = arith.constant 7 : index
  %r8 = arith.constant 8 : index
  %r9 = arith.constant 9 : index
  %r10 = arith.constant 10 : index
  %r11 = arith.constant 11 : index
  %r12 = arith.constant 12 : index
  %r13 = arith.constant 13 : index
  %r14 = arith.constant 14 : index
  scf.for %i = %c0 to %c64 step %c1 {
    %x = memref.load %a[%i] : memref<64xi32>
    %y = memref.load %b[%i] : memref<64xi32>
    %s = arith.andi %y, %c31 : i32
    %v0 = arith.divsi %x, %y : i32
    memref.store %v0, %o[%r0, %i] : memref<${rows}x64xi32>
    %v1 = arith.remsi %x, %y : i32
    memref.store %v1, %o[%r1, %i] : memref<${rows}x64xi32>
    %v2 = arith.divui %x, %y : i32
    memref.store %v2, %o[%r2, %i] : memref<${rows}x64xi32>
    %v3 = arith.remui %x, %y : i32
    memref.store %v3, %o[%r3, %i] : memref<${rows}x64xi32>
    %v4 = arith.floordivsi %x, %y : i32
    memref.store %v4, %o[%r4, %i] : memref<${rows}x64xi32>
    %v5 = arith.ceildivsi %x, %y : i32
    memref.store %v5, %o[%r5, %i] : memref<${rows}x64xi32>
    %v6 = arith.shrsi %x, %s : i32
    memref.store %v6, %o[%r6, %i] : memref<${rows}x64xi32>
    %v7 = arith.shrui %x, %s : i32
    memref.store %v7, %o[%r7, %i] : memref<${rows}x64xi32>
    %v8 = arith.shli %x, %s : i32
    memref.store %v8, %o[%r8, %i] : memref<${rows}x64xi32>
    %v9 = arith.minui %x, %y : i32
    memref.store %v9, %o[%r9, %i] : memref<${rows}x64xi32>
    %v10 = arith.maxsi %x, %y : i32
    memref.store %v10, %o[%r10, %i] : memref<${rows}x64xi32>
    %v11 = arith.muli %x, %y : i32
    memref.store %v11, %o[%r11, %i] : memref<${rows}x64xi32>
    %lt = arith.cmpi ult, %x, %y : i32
    %v12 = arith.select %lt, %x, %y : i32
    memref.store %v12, %o[%r12, %i] : memref<${rows}x64xi32>
    %x8 = arith.trunci %x : i32 to i8
    %y8 = arith.trunci %y : i32 to i8
    %sum8 = arith.addi %x8, %y8 : i8
    %v13 = arith.extui %sum8 : i8 to i32
    memref.store %v13, %o[%r13, %i] : memref<${rows}x64xi32>
    %slt = arith.cmpi slt, %x, %y : i32
    %v14 = arith.extsi %slt : i1 to i32
    memref.store %v14, %o[%r14, %i] : memref<${rows}x64xi32>
  }
  func.return
}
func.func @main(%a: memref<64xi32>, %b: memref<64xi32>, %out: memref<${rows}x64xi32>) {
  func.call @int_ops(%a, %b, %out) : (memref<64xi32>, memref<64xi32>, memref<${rows}x64xi32>) -> ()
  func.return
}
