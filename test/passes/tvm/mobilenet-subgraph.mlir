// TVM's MobilenetStructure / LinearStructure (tvm-usmp.md §5.7, test_tir_usmp_algo.py::
// test_mobilenet_subgraph and test_tir_usmp_analysis_extract_bufferinfo.py::test_linear),
// rebuilt in our IR (xDSL drops a `_N` suffix from SSA names, so TVM's sid_9 is %sid9 here): cast_subtract -> conv2d (7x7, 3->64, stride 2, padded input copied
// first, per-pixel accumulator) -> max_pool2d_cast. Buffers are flat like TVM's.
// Pools: fast_memory (hint 200704 B) then slow_memory (unbounded).

// RUN: usmp-opt %s -p usmp-extract-buffer-info | filecheck %s --check-prefix=LIVE
// RUN: usmp-opt %s -p 'usmp-plan{report="%t.json"}' | filecheck %s --check-prefix=PLAN
// RUN: filecheck %s --check-prefix=REPORT < %t.json
// RUN: usmp-opt %s -p 'usmp-plan{algorithm=hill_climb}' | filecheck %s --check-prefix=HILL
// RUN: usmp-opt %s -p usmp | usmp-opt | filecheck %s --check-prefix=CONVERT

// TVM's conflict lists for this structure (test_linear), and its memory pressure.
// LIVE: builtin.module attributes {usmp.memory_pressure = 1117718 : i64}
// LIVE-LABEL: func.func @tvmgen_default_fused_nn_conv2d_add_fixed_point_multiply_clip_cast
// LIVE: %PaddedInput7 = usmp.allocate {usmp.live = {{.*}}, usmp.conflicts = ["Conv2dOutput7", "sid8", "sid9"]{{.*}}} : memref<157323xi16>
// LIVE: %Conv2dOutput7 = usmp.allocate {usmp.live = {{.*}}, usmp.conflicts = ["PaddedInput7", "sid8"]{{.*}}} : memref<64xi32>
// LIVE-LABEL: func.func @tvmgen_default_fused_nn_max_pool2d_cast
// LIVE: %tensor2 = usmp.allocate {usmp.live = {{.*}}, usmp.conflicts = ["sid8"]{{.*}}} : memref<200704xi8>
// LIVE-LABEL: func.func @main
// LIVE: %sid9 = usmp.allocate {usmp.live = {{.*}}, usmp.conflicts = ["PaddedInput7"]{{.*}}} : memref<150528xi16>
// LIVE: %sid8 = usmp.allocate {usmp.live = {{.*}}, usmp.conflicts = ["Conv2dOutput7", "PaddedInput7", "tensor2"]{{.*}}} : memref<401408xi16>

// With the default algorithm (auto) the fast pool is full and the slow pool reaches 1117462 B
// (TVM: hill_climb 1117462, greedy_by_size/greedy_by_conflicts 1418528); TVM's hill_climb too.
// PLAN: pool.workspace @fast_memory {size_hint_bytes = 200704 : i64, size_bytes = 200704 : i64}
// PLAN: pool.workspace @slow_memory {size_bytes = 1117462 : i64}
// HILL: pool.workspace @fast_memory {size_hint_bytes = 200704 : i64, size_bytes = 200704 : i64}
// HILL: pool.workspace @slow_memory {size_bytes = 1117462 : i64}

// REPORT: "memory_pressure_bytes": 1117718
// REPORT: {"name": "fast_memory", "kind": "workspace", "internal": false, "size_hint_bytes": 200704, "size_bytes": 200704,
// REPORT: {"name": "slow_memory", "kind": "workspace", "internal": false, "size_hint_bytes": null, "size_bytes": 1117462,

// CONVERT: pool.workspace @fast_memory {size_hint_bytes = 200704 : i64, size_bytes = 200704 : i64}
// CONVERT: pool.workspace @slow_memory {size_bytes = 1117462 : i64}
// CONVERT-LABEL: func.func @tvmgen_default_fused_cast_subtract(%placeholder2: memref<150528xi8>, %placeholder3: memref<1xi16>, %T_subtract: memref<150528xi16>)
// CONVERT-LABEL: func.func @tvmgen_default_fused_nn_conv2d_add_fixed_point_multiply_clip_cast(
// CONVERT-SAME: %fast_memory: memref<200704xi8> {pool.pool = @fast_memory}, %slow_memory: memref<1117462xi8> {pool.pool = @slow_memory})
// CONVERT:  memref.view %slow_memory[%PaddedInput7_offset][] {usmp.buffer = "PaddedInput7"} : memref<1117462xi8> to memref<157323xi16>
// CONVERT:  memref.view %{{.*}}[%Conv2dOutput7_offset][] {usmp.buffer = "Conv2dOutput7"}
// CONVERT-LABEL: func.func @tvmgen_default_fused_nn_max_pool2d_cast(
// CONVERT-SAME: %fast_memory: memref<200704xi8> {pool.pool = @fast_memory})
// CONVERT-LABEL: func.func @main(%input: memref<150528xi8>, %output: memref<200704xi8>)
// CONVERT-NEXT: %fast_memory = pool.base @fast_memory : memref<200704xi8>
// CONVERT-NEXT: %slow_memory = pool.base @slow_memory : memref<1117462xi8>
// CONVERT: func.call @tvmgen_default_fused_cast_subtract(%input, %{{.*}}, %sid9)
// CONVERT: func.call @tvmgen_default_fused_nn_conv2d_add_fixed_point_multiply_clip_cast(%sid9, %{{.*}}, %{{.*}}, %sid8, %fast_memory, %slow_memory)
// CONVERT: func.call @tvmgen_default_fused_nn_max_pool2d_cast(%sid8, %output, %fast_memory)

pool.workspace @fast_memory {size_hint_bytes = 200704 : i64}
pool.workspace @slow_memory

// T_subtract[i] = int16(placeholder_2[i]) - placeholder_3[0]
func.func @tvmgen_default_fused_cast_subtract(%placeholder2: memref<150528xi8>, %placeholder3: memref<1xi16>, %T_subtract: memref<150528xi16>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %n = arith.constant 150528 : index
  scf.for %i = %c0 to %n step %c1 {
    %x = memref.load %placeholder2[%i] : memref<150528xi8>
    %xe = arith.extui %x : i8 to i16
    %zp = memref.load %placeholder3[%c0] : memref<1xi16>
    %d = arith.subi %xe, %zp : i16
    memref.store %d, %T_subtract[%i] : memref<150528xi16>
  }
  func.return
}

// PaddedInput7 = pad(placeholder_65); then per output pixel: Conv2dOutput7[64] accumulates
// over the 7x7x3 window and is written (scaled, clipped) to T_cast_21.
func.func @tvmgen_default_fused_nn_conv2d_add_fixed_point_multiply_clip_cast(%placeholder65: memref<150528xi16>, %placeholder66: memref<9408xi16>, %placeholder67: memref<64xi32>, %T_cast21: memref<401408xi16>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c64 = arith.constant 64 : index
  %c147 = arith.constant 147 : index
  %c150528 = arith.constant 150528 : index
  %c157323 = arith.constant 157323 : index
  %c12544 = arith.constant 12544 : index
  %zero16 = arith.constant 0 : i16
  %zero32 = arith.constant 0 : i32
  %PaddedInput7 = usmp.allocate : memref<157323xi16>
  scf.for %i = %c0 to %c157323 step %c1 {
    %inside = arith.cmpi ult, %i, %c150528 : index
    %v = scf.if %inside -> (i16) {
      %x = memref.load %placeholder65[%i] : memref<150528xi16>
      scf.yield %x : i16
    } else {
      scf.yield %zero16 : i16
    }
    memref.store %v, %PaddedInput7[%i] : memref<157323xi16>
  }
  scf.for %p = %c0 to %c12544 step %c1 {
    %Conv2dOutput7 = usmp.allocate : memref<64xi32>
    scf.for %c = %c0 to %c64 step %c1 {
      memref.store %zero32, %Conv2dOutput7[%c] : memref<64xi32>
      scf.for %k = %c0 to %c147 step %c1 {
        %pk = arith.addi %p, %k : index
        %x = memref.load %PaddedInput7[%pk] : memref<157323xi16>
        %w = memref.load %placeholder66[%k] : memref<9408xi16>
        %xw = arith.muli %x, %w : i16
        %xw32 = arith.extsi %xw : i16 to i32
        %acc = memref.load %Conv2dOutput7[%c] : memref<64xi32>
        %sum = arith.addi %acc, %xw32 : i32
        memref.store %sum, %Conv2dOutput7[%c] : memref<64xi32>
      }
    }
    scf.for %c = %c0 to %c64 step %c1 {
      %acc = memref.load %Conv2dOutput7[%c] : memref<64xi32>
      %b = memref.load %placeholder67[%c] : memref<64xi32>
      %s = arith.addi %acc, %b : i32
      %t = arith.trunci %s : i32 to i16
      %base = arith.muli %p, %c64 : index
      %o = arith.addi %base, %c : index
      memref.store %t, %T_cast21[%o] : memref<401408xi16>
    }
  }
  func.return
}

// tensor_2 = max_pool2d(placeholder_28); T_cast_7 = cast(tensor_2)
func.func @tvmgen_default_fused_nn_max_pool2d_cast(%placeholder28: memref<401408xi16>, %T_cast6: memref<200704xi8>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c2 = arith.constant 2 : index
  %n = arith.constant 200704 : index
  %tensor2 = usmp.allocate : memref<200704xi8>
  scf.for %i = %c0 to %n step %c1 {
    %j = arith.muli %i, %c2 : index
    %x = memref.load %placeholder28[%j] : memref<401408xi16>
    %t = arith.trunci %x : i16 to i8
    memref.store %t, %tensor2[%i] : memref<200704xi8>
  }
  scf.for %i = %c0 to %n step %c1 {
    %x = memref.load %tensor2[%i] : memref<200704xi8>
    memref.store %x, %T_cast6[%i] : memref<200704xi8>
  }
  func.return
}

func.func @main(%input: memref<150528xi8>, %output: memref<200704xi8>) {
  %p0 = usmp.allocate_const dense<3> : memref<1xi16>
  %p1 = usmp.allocate_const dense<1> : memref<9408xi16>
  %p2 = usmp.allocate_const dense<2> : memref<64xi32>
  %sid9 = usmp.allocate : memref<150528xi16>
  %sid8 = usmp.allocate : memref<401408xi16>
  func.call @tvmgen_default_fused_cast_subtract(%input, %p0, %sid9) : (memref<150528xi8>, memref<1xi16>, memref<150528xi16>) -> ()
  func.call @tvmgen_default_fused_nn_conv2d_add_fixed_point_multiply_clip_cast(%sid9, %p1, %p2, %sid8) : (memref<150528xi16>, memref<9408xi16>, memref<64xi32>, memref<401408xi16>) -> ()
  func.call @tvmgen_default_fused_nn_max_pool2d_cast(%sid8, %output) : (memref<401408xi16>, memref<200704xi8>) -> ()
  func.return
}
