// differential: {"inputs": [{"element": "f32", "name": "in0", "shape": [14]}, {"element": "f32", "name": "in1", "shape": [48]}], "outputs": [{"element": "f32", "name": "out0", "shape": [6, 8]}], "pools": [{"alignment": null, "capacity_bytes": 575, "internal": true, "kind": "workspace", "name": "fast", "targets": ["c"]}, {"alignment": null, "capacity_bytes": null, "internal": false, "kind": "workspace", "name": "slow", "targets": ["c"]}, {"alignment": null, "capacity_bytes": null, "internal": true, "kind": "workspace", "name": "accel_mem", "targets": ["accel"]}, {"alignment": null, "capacity_bytes": null, "internal": true, "kind": "constant", "name": "flash", "targets": ["c"]}], "seed": 6010, "use_case": "U3", "workspace_io": false}
// replay-algorithms: greedy_by_conflicts,greedy_by_size,greedy_first_fit,no_reuse
// finding: [no_reuse] gcc-warning: /tmp/usmp-differential-0x5r493i/seed6010/no_reuse/model.c: In function ‘model_run’:
// finding: [greedy_by_conflicts] gcc-warning: /tmp/usmp-differential-0x5r493i/seed6010/greedy_by_conflicts/model.c: In function ‘model_run’:
// finding: [greedy_by_size] gcc-warning: /tmp/usmp-differential-0x5r493i/seed6010/greedy_by_size/model.c: In function ‘model_run’:
// finding: [greedy_first_fit] gcc-warning: /tmp/usmp-differential-0x5r493i/seed6010/greedy_first_fit/model.c: In function ‘model_run’:
builtin.module {
  pool.workspace @fast {size_hint_bytes = 575 : i64, targets = ["c"], internal}
  pool.workspace @slow {targets = ["c"]}
  pool.workspace @accel_mem {targets = ["accel"], internal}
  pool.constant @flash {targets = ["c"], internal}
  func.func @main(%in0: memref<14xf32>, %in1: memref<48xf32>, %out0: memref<6x8xf32>) {
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    %c2 = arith.constant 2 : index
    %c3 = arith.constant 3 : index
    %c4 = arith.constant 4 : index
    %c5 = arith.constant 5 : index
    %c6 = arith.constant 6 : index
    %c7 = arith.constant 7 : index
    %c8 = arith.constant 8 : index
    %c9 = arith.constant 9 : index
    %c14 = arith.constant 14 : index
    %c15 = arith.constant 15 : index
    %c17 = arith.constant 17 : index
    %c19 = arith.constant 19 : index
    %c22 = arith.constant 22 : index
    %c30 = arith.constant 30 : index
    %c45 = arith.constant 45 : index
    %c48 = arith.constant 48 : index
    %c56 = arith.constant 56 : index
    %b1 = usmp.allocate {alignment = 64 : i64, pools = [@fast, @slow]} : memref<56xf32>
    %sv2 = memref.subview %in1[23] [22] [1] : memref<48xf32> to memref<22xf32, strided<[1], offset: 23>>
    scf.for %i3 = %c0 to %c56 step %c1 {
      %x4 = arith.muli %i3, %c3 : index
      %x5 = arith.addi %x4, %c15 : index
      %x6 = arith.remui %x5, %c22 : index
      %v7 = memref.load %sv2[%x6] : memref<22xf32, strided<[1], offset: 23>>
      %k8 = arith.constant 0.5 : f32
      memref.store %v7, %b1[%i3] : memref<56xf32>
    }
    %v10 = memref.load %in1[%c19] : memref<48xf32>
    %k11 = arith.constant 0.0 : f32
    %cond9 = arith.cmpf olt, %v10, %k11 : f32
    scf.if %cond9 {
      %b12 = usmp.allocate {pools = [@slow]} : memref<48xf32>
      %sv13 = memref.subview %in0[0] [5] [1] : memref<14xf32> to memref<5xf32, strided<[1], offset: 0>>
      scf.for %i14 = %c0 to %c48 step %c1 {
        %x15 = arith.muli %i14, %c7 : index
        %x16 = arith.addi %x15, %c30 : index
        %x17 = arith.remui %x16, %c56 : index
        %v18 = memref.load %b1[%x17] : memref<56xf32>
        %x19 = arith.muli %i14, %c1 : index
        %x20 = arith.addi %x19, %c3 : index
        %x21 = arith.remui %x20, %c5 : index
        %v22 = memref.load %sv13[%x21] : memref<5xf32, strided<[1], offset: 0>>
        %v23 = arith.index_cast %i14 : index to i32
        %v24 = arith.sitofp %v23 : i32 to f32
        %k25 = arith.constant 0.5 : f32
        %v26 = arith.addf %v18, %v22 : f32
        %v27 = arith.mulf %v26, %k25 : f32
        %v28 = arith.subf %v27, %v24 : f32
        %v29 = arith.mulf %v28, %k25 : f32
        memref.store %v29, %b12[%i14] : memref<48xf32>
      }
      "memref.copy"(%b1, %b1) : (memref<56xf32>, memref<56xf32>) -> ()
    }
    %b30 = usmp.allocate {alignment = 32 : i64} : memref<9xi8>
    %cv31 = "memref.cast"(%b1) : (memref<56xf32>) -> memref<?xf32>
    %sv32 = memref.subview %b30[0] [8] [1] : memref<9xi8> to memref<8xi8, strided<[1]>>
    %sv33 = memref.subview %b30[8] [1] [1] : memref<9xi8> to memref<1xi8, strided<[1], offset: 8>>
    scf.for %i34 = %c0 to %c1 step %c1 {
      %x35 = arith.addi %i34, %c8 : index
      %x36 = arith.muli %x35, %c5 : index
      %x37 = arith.addi %x36, %c45 : index
      %x38 = arith.remui %x37, %c56 : index
      %v39 = memref.load %cv31[%x38] : memref<?xf32>
      %v40 = arith.bitcast %v39 : f32 to i32
      %v41 = arith.trunci %v40 : i32 to i8
      memref.store %v41, %sv33[%i34] : memref<1xi8, strided<[1], offset: 8>>
    }
    scf.for %i42 = %c0 to %c8 step %c1 {
      %x43 = arith.muli %i42, %c5 : index
      %x44 = arith.addi %x43, %c45 : index
      %x45 = arith.remui %x44, %c56 : index
      %v46 = memref.load %cv31[%x45] : memref<?xf32>
      %v47 = arith.bitcast %v46 : f32 to i32
      %v48 = arith.trunci %v47 : i32 to i8
      memref.store %v48, %sv32[%i42] : memref<8xi8, strided<[1]>>
    }
    %b49 = usmp.allocate : memref<6x8xf32>
    %cv50 = "memref.cast"(%b30) : (memref<9xi8>) -> memref<?xi8>
    %sv51 = memref.subview %in1[43] [1] [1] : memref<48xf32> to memref<1xf32, strided<[1], offset: 43>>
    scf.for %i52 = %c0 to %c6 step %c1 {
      scf.for %i53 = %c0 to %c8 step %c1 {
        %x54 = arith.muli %i52, %c8 : index
        %x55 = arith.addi %x54, %i53 : index
        %x56 = arith.muli %x55, %c1 : index
        %x57 = arith.addi %x56, %c3 : index
        %x58 = arith.remui %x57, %c9 : index
        %v59 = memref.load %cv50[%x58] : memref<?xi8>
        %v60 = arith.sitofp %v59 : i8 to f32
        %x61 = arith.muli %x55, %c1 : index
        %x62 = arith.addi %x61, %c4 : index
        %x63 = arith.remui %x62, %c9 : index
        %v64 = memref.load %b30[%x63] : memref<9xi8>
        %v65 = arith.sitofp %v64 : i8 to f32
        %x66 = arith.remui %x55, %c1 : index
        %v67 = memref.load %sv51[%x66] : memref<1xf32, strided<[1], offset: 43>>
        %v68 = arith.index_cast %x55 : index to i32
        %v69 = arith.sitofp %v68 : i32 to f32
        %k70 = arith.constant 0.5 : f32
        %v71 = arith.subf %v60, %v65 : f32
        %v72 = arith.mulf %v71, %k70 : f32
        %v73 = arith.subf %v72, %v67 : f32
        %v74 = arith.mulf %v73, %k70 : f32
        %v75 = arith.addf %v74, %v69 : f32
        %v76 = arith.mulf %v75, %k70 : f32
        memref.store %v76, %b49[%i52, %i53] : memref<6x8xf32>
      }
    }
    %b77 = usmp.allocate : memref<14xf32>
    %ev78 = memref.expand_shape %b77 [[0, 1]] output_shape [7, 2] : memref<14xf32> into memref<7x2xf32>
    scf.for %i79 = %c0 to %c7 step %c1 {
      scf.for %i80 = %c0 to %c2 step %c1 {
        %x81 = arith.muli %i79, %c2 : index
        %x82 = arith.addi %x81, %i80 : index
        %x83 = arith.muli %x82, %c7 : index
        %x84 = arith.addi %x83, %c7 : index
        %x85 = arith.remui %x84, %c48 : index
        %x87 = arith.remui %x85, %c8 : index
        %x88 = arith.divui %x85, %c8 : index
        %v86 = memref.load %b49[%x88, %x87] : memref<6x8xf32>
        %x89 = arith.muli %x82, %c3 : index
        %x90 = arith.addi %x89, %c0 : index
        %x91 = arith.remui %x90, %c9 : index
        %v92 = memref.load %b30[%x91] : memref<9xi8>
        %v93 = arith.sitofp %v92 : i8 to f32
        %v94 = arith.index_cast %x82 : index to i32
        %v95 = arith.sitofp %v94 : i32 to f32
        %k96 = arith.constant 0.5 : f32
        %v97 = arith.subf %v86, %v93 : f32
        %v98 = arith.mulf %v97, %k96 : f32
        %v99 = arith.subf %v98, %v95 : f32
        %v100 = arith.mulf %v99, %k96 : f32
        memref.store %v100, %ev78[%i79, %i80] : memref<7x2xf32>
      }
    }
    scf.for %k101 = %c0 to %c3 step %c1 {
      %b102 = usmp.allocate : memref<30xi8>
      %sv103 = memref.subview %in1[28] [17] [1] : memref<48xf32> to memref<17xf32, strided<[1], offset: 28>>
      %cv104 = "memref.cast"(%b77) : (memref<14xf32>) -> memref<?xf32>
      scf.for %i105 = %c0 to %c30 step %c1 {
        %x106 = arith.muli %i105, %c3 : index
        %x107 = arith.addi %x106, %c6 : index
        %x108 = arith.remui %x107, %c14 : index
        %v109 = memref.load %b77[%x108] : memref<14xf32>
        %v110 = arith.bitcast %v109 : f32 to i32
        %v111 = arith.trunci %v110 : i32 to i8
        %x112 = arith.muli %i105, %c1 : index
        %x113 = arith.addi %x112, %c7 : index
        %x114 = arith.remui %x113, %c17 : index
        %v115 = memref.load %sv103[%x114] : memref<17xf32, strided<[1], offset: 28>>
        %v116 = arith.bitcast %v115 : f32 to i32
        %v117 = arith.trunci %v116 : i32 to i8
        %x118 = arith.muli %i105, %c3 : index
        %x119 = arith.addi %x118, %c3 : index
        %x120 = arith.remui %x119, %c14 : index
        %v121 = memref.load %cv104[%x120] : memref<?xf32>
        %v122 = arith.bitcast %v121 : f32 to i32
        %v123 = arith.trunci %v122 : i32 to i8
        %v124 = arith.index_cast %k101 : index to i32
        %v125 = arith.trunci %v124 : i32 to i8
        %v126 = arith.subi %v111, %v117 : i8
        %v127 = arith.subi %v126, %v123 : i8
        %v128 = arith.xori %v127, %v125 : i8
        memref.store %v128, %b102[%i105] : memref<30xi8>
      }
      %b129 = usmp.allocate {pools = [@fast, @slow]} : memref<6x8xf32>
      %sv130 = memref.subview %b102[23] [6] [1] : memref<30xi8> to memref<6xi8, strided<[1], offset: 23>>
      scf.for %i131 = %c0 to %c6 step %c1 {
        scf.for %i132 = %c0 to %c8 step %c1 {
          %x133 = arith.muli %i131, %c8 : index
          %x134 = arith.addi %x133, %i132 : index
          %x135 = arith.muli %x134, %c5 : index
          %x136 = arith.addi %x135, %c2 : index
          %x137 = arith.remui %x136, %c6 : index
          %v138 = memref.load %sv130[%x137] : memref<6xi8, strided<[1], offset: 23>>
          %v139 = arith.sitofp %v138 : i8 to f32
          %v140 = arith.index_cast %x134 : index to i32
          %v141 = arith.sitofp %v140 : i32 to f32
          %v142 = arith.index_cast %k101 : index to i32
          %v143 = arith.sitofp %v142 : i32 to f32
          %k144 = arith.constant 0.5 : f32
          %v145 = arith.addf %v139, %v141 : f32
          %v146 = arith.mulf %v145, %k144 : f32
          %v147 = arith.subf %v146, %v143 : f32
          %v148 = arith.mulf %v147, %k144 : f32
          memref.store %v148, %b129[%i131, %i132] : memref<6x8xf32>
        }
      }
      %fv149 = memref.collapse_shape %b129 [[0, 1]] : memref<6x8xf32> into memref<48xf32>
      scf.for %i150 = %c0 to %c14 step %c1 {
        %v151 = memref.load %b77[%i150] : memref<14xf32>
        %x152 = arith.muli %i150, %c5 : index
        %x153 = arith.addi %x152, %c2 : index
        %x154 = arith.remui %x153, %c48 : index
        %v155 = memref.load %fv149[%x154] : memref<48xf32>
        %v156 = arith.index_cast %k101 : index to i32
        %v157 = arith.sitofp %v156 : i32 to f32
        %k158 = arith.constant 0.5 : f32
        %v159 = arith.subf %v151, %v155 : f32
        %v160 = arith.mulf %v159, %k158 : f32
        %v161 = arith.addf %v160, %v157 : f32
        %v162 = arith.mulf %v161, %k158 : f32
        memref.store %v162, %b77[%i150] : memref<14xf32>
      }
    }
    %w163 = usmp.allocate_const dense<[-3.0, 11.5, 6.5, -8.5, 10.5, -15.75, 8.5, 11.25, 15.5, 12.25, 10.25, -3.0, 8.75, -6.0, -11.0, -9.75, 12.5, -10.5, -12.25, 3.0, -1.0, -11.25, 11.5, -4.25, -6.5, 7.0, 6.75, -8.25, 4.75, -5.75, 14.5, 10.75, 12.0, 13.25, 2.5, 0.0, -6.0, -13.25, 3.25, -6.25, -4.0, 8.5, -13.25, -0.5, 5.75, -3.25, 14.25, 14.25]> : memref<48xf32>
    %sv164 = memref.subview %w163[9] [3] [1] : memref<48xf32> to memref<3xf32, strided<[1], offset: 9>>
    scf.for %i165 = %c0 to %c6 step %c1 {
      scf.for %i166 = %c0 to %c8 step %c1 {
        %x167 = arith.muli %i165, %c8 : index
        %x168 = arith.addi %x167, %i166 : index
        %x169 = arith.muli %x168, %c7 : index
        %x170 = arith.addi %x169, %c9 : index
        %x171 = arith.remui %x170, %c14 : index
        %v172 = memref.load %b77[%x171] : memref<14xf32>
        %x173 = arith.remui %x168, %c3 : index
        %v174 = memref.load %sv164[%x173] : memref<3xf32, strided<[1], offset: 9>>
        %v175 = arith.index_cast %x168 : index to i32
        %v176 = arith.sitofp %v175 : i32 to f32
        %k177 = arith.constant 0.5 : f32
        %v178 = arith.subf %v172, %v174 : f32
        %v179 = arith.mulf %v178, %k177 : f32
        %v180 = arith.addf %v179, %v176 : f32
        %v181 = arith.mulf %v180, %k177 : f32
        memref.store %v181, %out0[%i165, %i166] : memref<6x8xf32>
      }
    }
    func.return
  }
}
