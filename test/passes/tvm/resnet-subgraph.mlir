// TVM's ResnetStructure (tvm-usmp.md §5.7; test_tir_usmp_algo.py::test_resnet_subgraph), rebuilt
// in our IR with flat buffers (xDSL drops a `_N` suffix from SSA names: TVM's sid_2 is %sid2).
// Five operators: pre-processing writes sid2, three convolutions write sid8, sid7, sid6, and the
// last convolution pads sid2 (the residual branch) and adds sid6 while writing the output. Each
// convolution first copies its input into PaddedInput*, then accumulates per pixel into a
// 256-byte Conv2dOutput*. No pools are declared: planning creates the internal defaults (U1).

// RUN: usmp-opt %s -p usmp-extract-buffer-info | filecheck %s --check-prefix=LIVE
// RUN: usmp-opt %s -p usmp-plan | filecheck %s --check-prefix=PLAN
// RUN: usmp-opt %s -p 'usmp-plan{algorithm=hill_climb}' | filecheck %s --check-prefix=PLAN
// RUN: usmp-opt %s -p 'usmp-plan{algorithm=greedy_by_size}' | filecheck %s --check-prefix=GREEDY
// RUN: usmp-opt %s -p usmp | usmp-opt | filecheck %s --check-prefix=CONVERT

// The statement-level precision of TVM: the input (sid8) and output (sid7) of the second
// convolution do not conflict, because the input is fully copied into PaddedInput1 before the
// output is first written; the final Conv2dOutput3 does not conflict with sid2 (read only by
// the padding loop). These are exactly TVM's conflict lists.
// LIVE: builtin.module attributes {usmp.memory_pressure = 7200256 : i64}
// LIVE: %PaddedInput = usmp.allocate {{{.*}}usmp.conflicts = ["Conv2dOutput", "sid2", "sid8"]}
// LIVE: %Conv2dOutput = usmp.allocate {{{.*}}usmp.conflicts = ["PaddedInput", "sid2", "sid8"]}
// LIVE: %PaddedInput1 = usmp.allocate {{{.*}}usmp.conflicts = ["Conv2dOutput1", "sid2", "sid7", "sid8"]}
// LIVE: %Conv2dOutput1 = usmp.allocate {{{.*}}usmp.conflicts = ["PaddedInput1", "sid2", "sid7"]}
// LIVE: %PaddedInput2 = usmp.allocate {{{.*}}usmp.conflicts = ["Conv2dOutput2", "sid2", "sid6", "sid7"]}
// LIVE: %Conv2dOutput2 = usmp.allocate {{{.*}}usmp.conflicts = ["PaddedInput2", "sid2", "sid6"]}
// LIVE: %PaddedInput3 = usmp.allocate {{{.*}}usmp.conflicts = ["Conv2dOutput3", "sid2", "sid6"]}
// LIVE: %Conv2dOutput3 = usmp.allocate {{{.*}}usmp.conflicts = ["PaddedInput3", "sid6"]}
// LIVE: %sid2 = usmp.allocate {{{.*}}usmp.conflicts = ["Conv2dOutput", "Conv2dOutput1", "Conv2dOutput2", "PaddedInput", "PaddedInput1", "PaddedInput2", "PaddedInput3", "sid6", "sid7", "sid8"]}
// LIVE: %sid8 = usmp.allocate {{{.*}}usmp.conflicts = ["Conv2dOutput", "PaddedInput", "PaddedInput1", "sid2"]}
// LIVE: %sid7 = usmp.allocate {{{.*}}usmp.conflicts = ["Conv2dOutput1", "PaddedInput1", "PaddedInput2", "sid2"]}
// LIVE: %sid6 = usmp.allocate {{{.*}}usmp.conflicts = ["Conv2dOutput2", "Conv2dOutput3", "PaddedInput2", "PaddedInput3", "sid2"]}

// The workspace reaches the memory pressure, 7200256 B, with auto and TVM's hill_climb (TVM:
// greedy_by_size 7920256, greedy_by_conflicts and hill_climb 7200256).
// GREEDY: pool.workspace @global_workspace {internal, size_bytes = 7920256 : i64}
// PLAN: pool.workspace @global_workspace {internal, size_bytes = 7200256 : i64}
// PLAN: pool.constant @global_constant {internal, size_bytes = 128 : i64}

// CONVERT: pool.workspace @global_workspace {internal, size_bytes = 7200256 : i64}
// CONVERT: pool.constant @global_constant {internal, size_bytes = 128 : i64, data = dense<"0x01000100
// CONVERT-LABEL: func.func @tvmgen_default_fused_cast_subtract_fixed_point_multiply_add_clip_cast_cast(%placeholder: memref<360000xi8>, %T_cast: memref<360000xi16>) {
// CONVERT-LABEL: func.func @main(%input: memref<360000xi8>, %output: memref<1440000xi8>) {
// CONVERT-NEXT: %global_workspace = pool.base @global_workspace : memref<7200256xi8>
// CONVERT-NEXT: %global_constant = pool.base @global_constant : memref<128xi8>
// Operators receive only the pools they use: the pre-processing operator allocates nothing.
// CONVERT: func.call @tvmgen_default_fused_cast_subtract_fixed_point_multiply_add_clip_cast_cast(%input, %sid2) :
// CONVERT: func.call @tvmgen_default_fused_nn_conv2d_add_fixed_point_multiply_clip_cast_cast(%sid2, %w, %sid8, %global_workspace) :
// CONVERT-NOT: usmp.allocate

func.func @tvmgen_default_fused_cast_subtract_fixed_point_multiply_add_clip_cast_cast(%placeholder: memref<360000xi8>, %T_cast: memref<360000xi16>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %n = arith.constant 360000 : index
  %zp = arith.constant 5 : i16
  scf.for %i = %c0 to %n step %c1 {
    %x = memref.load %placeholder[%i] : memref<360000xi8>
    %xe = arith.extui %x : i8 to i16
    %d = arith.subi %xe, %zp : i16
    memref.store %d, %T_cast[%i] : memref<360000xi16>
  }
  func.return
}

func.func @tvmgen_default_fused_nn_conv2d_add_fixed_point_multiply_clip_cast_cast(%placeholder: memref<360000xi16>, %weights: memref<64xi16>, %T_cast: memref<360000xi16>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c64 = arith.constant 64 : index
  %cin = arith.constant 360000 : index
  %cpad = arith.constant 360000 : index
  %cpix = arith.constant 5625 : index
  %cout = arith.constant 360000 : index
  %zero16 = arith.constant 0 : i16
  %zero32 = arith.constant 0 : i32
  %PaddedInput = usmp.allocate : memref<360000xi16>
  scf.for %i = %c0 to %cpad step %c1 {
    %inside = arith.cmpi ult, %i, %cin : index
    %v = scf.if %inside -> (i16) {
      %x = memref.load %placeholder[%i] : memref<360000xi16>
      scf.yield %x : i16
    } else {
      scf.yield %zero16 : i16
    }
    memref.store %v, %PaddedInput[%i] : memref<360000xi16>
  }
  scf.for %p = %c0 to %cpix step %c1 {
    %Conv2dOutput = usmp.allocate : memref<64xi32>
    scf.for %c = %c0 to %c64 step %c1 {
      memref.store %zero32, %Conv2dOutput[%c] : memref<64xi32>
      scf.for %k = %c0 to %c64 step %c1 {
        %pk = arith.addi %p, %k : index
        %x = memref.load %PaddedInput[%pk] : memref<360000xi16>
        %w = memref.load %weights[%k] : memref<64xi16>
        %xw = arith.muli %x, %w : i16
        %xw32 = arith.extsi %xw : i16 to i32
        %a = memref.load %Conv2dOutput[%c] : memref<64xi32>
        %s = arith.addi %a, %xw32 : i32
        memref.store %s, %Conv2dOutput[%c] : memref<64xi32>
      }
    }
    scf.for %c = %c0 to %c64 step %c1 {
      %a = memref.load %Conv2dOutput[%c] : memref<64xi32>
      %base = arith.muli %p, %c64 : index
      %o = arith.addi %base, %c : index
      %t = arith.trunci %a : i32 to i16
      memref.store %t, %T_cast[%o] : memref<360000xi16>
    }
  }
  func.return
}

func.func @tvmgen_default_fused_nn_conv2d_add_fixed_point_multiply_clip_cast_cast_1(%placeholder: memref<360000xi16>, %weights: memref<64xi16>, %T_cast: memref<360000xi16>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c64 = arith.constant 64 : index
  %cin = arith.constant 360000 : index
  %cpad = arith.constant 379456 : index
  %cpix = arith.constant 5625 : index
  %cout = arith.constant 360000 : index
  %zero16 = arith.constant 0 : i16
  %zero32 = arith.constant 0 : i32
  %PaddedInput1 = usmp.allocate : memref<379456xi16>
  scf.for %i = %c0 to %cpad step %c1 {
    %inside = arith.cmpi ult, %i, %cin : index
    %v = scf.if %inside -> (i16) {
      %x = memref.load %placeholder[%i] : memref<360000xi16>
      scf.yield %x : i16
    } else {
      scf.yield %zero16 : i16
    }
    memref.store %v, %PaddedInput1[%i] : memref<379456xi16>
  }
  scf.for %p = %c0 to %cpix step %c1 {
    %Conv2dOutput1 = usmp.allocate : memref<64xi32>
    scf.for %c = %c0 to %c64 step %c1 {
      memref.store %zero32, %Conv2dOutput1[%c] : memref<64xi32>
      scf.for %k = %c0 to %c64 step %c1 {
        %pk = arith.addi %p, %k : index
        %x = memref.load %PaddedInput1[%pk] : memref<379456xi16>
        %w = memref.load %weights[%k] : memref<64xi16>
        %xw = arith.muli %x, %w : i16
        %xw32 = arith.extsi %xw : i16 to i32
        %a = memref.load %Conv2dOutput1[%c] : memref<64xi32>
        %s = arith.addi %a, %xw32 : i32
        memref.store %s, %Conv2dOutput1[%c] : memref<64xi32>
      }
    }
    scf.for %c = %c0 to %c64 step %c1 {
      %a = memref.load %Conv2dOutput1[%c] : memref<64xi32>
      %base = arith.muli %p, %c64 : index
      %o = arith.addi %base, %c : index
      %t = arith.trunci %a : i32 to i16
      memref.store %t, %T_cast[%o] : memref<360000xi16>
    }
  }
  func.return
}

func.func @tvmgen_default_fused_nn_conv2d_add_fixed_point_multiply_add_clip_cast_cast_subtract(%placeholder: memref<360000xi16>, %weights: memref<64xi16>, %T_cast: memref<1440000xi32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c64 = arith.constant 64 : index
  %cin = arith.constant 360000 : index
  %cpad = arith.constant 360000 : index
  %cpix = arith.constant 22500 : index
  %cout = arith.constant 1440000 : index
  %zero16 = arith.constant 0 : i16
  %zero32 = arith.constant 0 : i32
  %PaddedInput2 = usmp.allocate : memref<360000xi16>
  scf.for %i = %c0 to %cpad step %c1 {
    %inside = arith.cmpi ult, %i, %cin : index
    %v = scf.if %inside -> (i16) {
      %x = memref.load %placeholder[%i] : memref<360000xi16>
      scf.yield %x : i16
    } else {
      scf.yield %zero16 : i16
    }
    memref.store %v, %PaddedInput2[%i] : memref<360000xi16>
  }
  scf.for %p = %c0 to %cpix step %c1 {
    %Conv2dOutput2 = usmp.allocate : memref<64xi32>
    scf.for %c = %c0 to %c64 step %c1 {
      memref.store %zero32, %Conv2dOutput2[%c] : memref<64xi32>
      scf.for %k = %c0 to %c64 step %c1 {
        %pk = arith.addi %p, %k : index
        %x = memref.load %PaddedInput2[%pk] : memref<360000xi16>
        %w = memref.load %weights[%k] : memref<64xi16>
        %xw = arith.muli %x, %w : i16
        %xw32 = arith.extsi %xw : i16 to i32
        %a = memref.load %Conv2dOutput2[%c] : memref<64xi32>
        %s = arith.addi %a, %xw32 : i32
        memref.store %s, %Conv2dOutput2[%c] : memref<64xi32>
      }
    }
    scf.for %c = %c0 to %c64 step %c1 {
      %a = memref.load %Conv2dOutput2[%c] : memref<64xi32>
      %base = arith.muli %p, %c64 : index
      %o = arith.addi %base, %c : index
      memref.store %a, %T_cast[%o] : memref<1440000xi32>
    }
  }
  func.return
}

func.func @tvmgen_default_fused_nn_conv2d_add_fixed_point_multiply_add_clip_cast_cast_subtract_1(%placeholder: memref<360000xi16>, %weights: memref<64xi16>, %residual: memref<1440000xi32>, %T_cast: memref<1440000xi8>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c64 = arith.constant 64 : index
  %cin = arith.constant 360000 : index
  %cpad = arith.constant 360000 : index
  %cpix = arith.constant 22500 : index
  %cout = arith.constant 1440000 : index
  %zero16 = arith.constant 0 : i16
  %zero32 = arith.constant 0 : i32
  %PaddedInput3 = usmp.allocate : memref<360000xi16>
  scf.for %i = %c0 to %cpad step %c1 {
    %inside = arith.cmpi ult, %i, %cin : index
    %v = scf.if %inside -> (i16) {
      %x = memref.load %placeholder[%i] : memref<360000xi16>
      scf.yield %x : i16
    } else {
      scf.yield %zero16 : i16
    }
    memref.store %v, %PaddedInput3[%i] : memref<360000xi16>
  }
  scf.for %p = %c0 to %cpix step %c1 {
    %Conv2dOutput3 = usmp.allocate : memref<64xi32>
    scf.for %c = %c0 to %c64 step %c1 {
      memref.store %zero32, %Conv2dOutput3[%c] : memref<64xi32>
      scf.for %k = %c0 to %c64 step %c1 {
        %pk = arith.addi %p, %k : index
        %x = memref.load %PaddedInput3[%pk] : memref<360000xi16>
        %w = memref.load %weights[%k] : memref<64xi16>
        %xw = arith.muli %x, %w : i16
        %xw32 = arith.extsi %xw : i16 to i32
        %a = memref.load %Conv2dOutput3[%c] : memref<64xi32>
        %s = arith.addi %a, %xw32 : i32
        memref.store %s, %Conv2dOutput3[%c] : memref<64xi32>
      }
    }
    scf.for %c = %c0 to %c64 step %c1 {
      %a = memref.load %Conv2dOutput3[%c] : memref<64xi32>
      %base = arith.muli %p, %c64 : index
      %o = arith.addi %base, %c : index
      %r = memref.load %residual[%o] : memref<1440000xi32>
      %ar = arith.addi %a, %r : i32
      %t = arith.trunci %ar : i32 to i8
      memref.store %t, %T_cast[%o] : memref<1440000xi8>
    }
  }
  func.return
}

func.func @main(%input: memref<360000xi8>, %output: memref<1440000xi8>) {
  %w = usmp.allocate_const dense<1> : memref<64xi16>
  %sid2 = usmp.allocate : memref<360000xi16>
  %sid8 = usmp.allocate : memref<360000xi16>
  %sid7 = usmp.allocate : memref<360000xi16>
  %sid6 = usmp.allocate : memref<1440000xi32>
  func.call @tvmgen_default_fused_cast_subtract_fixed_point_multiply_add_clip_cast_cast(%input, %sid2) : (memref<360000xi8>, memref<360000xi16>) -> ()
  func.call @tvmgen_default_fused_nn_conv2d_add_fixed_point_multiply_clip_cast_cast(%sid2, %w, %sid8) : (memref<360000xi16>, memref<64xi16>, memref<360000xi16>) -> ()
  func.call @tvmgen_default_fused_nn_conv2d_add_fixed_point_multiply_clip_cast_cast_1(%sid8, %w, %sid7) : (memref<360000xi16>, memref<64xi16>, memref<360000xi16>) -> ()
  func.call @tvmgen_default_fused_nn_conv2d_add_fixed_point_multiply_add_clip_cast_cast_subtract(%sid7, %w, %sid6) : (memref<360000xi16>, memref<64xi16>, memref<1440000xi32>) -> ()
  func.call @tvmgen_default_fused_nn_conv2d_add_fixed_point_multiply_add_clip_cast_cast_subtract_1(%sid2, %w, %sid6, %output) : (memref<360000xi16>, memref<64xi16>, memref<1440000xi32>, memref<1440000xi8>) -> ()
  func.return
}
