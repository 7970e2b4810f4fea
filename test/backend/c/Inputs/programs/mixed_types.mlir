func.func @mixed(%a: memref<16xf64>, %b: memref<16xi16>, %flags: memref<16xi1>, %o64: memref<16xi64>, %of: memref<16xf64>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c16 = arith.constant 16 : index
  %half = arith.constant 0.5 : f64
  %big = arith.constant 4000000000 : i64
  scf.for %i = %c0 to %c16 step %c1 {
    %x = memref.load %a[%i] : memref<16xf64>
    %n = memref.load %b[%i] : memref<16xi16>
    %f = memref.load %flags[%i] : memref<16xi1>
    %abs = math.absi %n : i16
    %absx = math.absf %x : f64
    %root = math.sqrt %absx : f64
    %sine = math.sin %x : f64
    %nf = arith.sitofp %n : i16 to f64
    %uf = arith.uitofp %n : i16 to f64
    %ugt = arith.cmpf ugt, %x, %half : f64
    %pick = arith.select %f, %root, %sine : f64
    %pick2 = arith.select %ugt, %nf, %uf : f64
    %sum = arith.addf %pick, %pick2 : f64
    memref.store %sum, %of[%i] : memref<16xf64>
    %abs64 = arith.extui %abs : i16 to i64
    %scaled = arith.fptosi %x : f64 to i64
    %wide = arith.muli %scaled, %big : i64
    %mix = arith.addi %wide, %abs64 : i64
    %fl = arith.extui %f : i1 to i64
    %res = arith.subi %mix, %fl : i64
    memref.store %res, %o64[%i] : memref<16xi64>
  }
  func.return
}
func.func @main(%a: memref<16xf64>, %b: memref<16xi16>, %flags: memref<16xi1>, %o64: memref<16xi64>, %of: memref<16xf64>) {
  %tmp = usmp.allocate : memref<16xf64>
  func.call @mixed(%a, %b, %flags, %o64, %tmp) : (memref<16xf64>, memref<16xi16>, memref<16xi1>, memref<16xi64>, memref<16xf64>) -> ()
  "memref.copy"(%tmp, %of) : (memref<16xf64>, memref<16xf64>) -> ()
  func.return
}
