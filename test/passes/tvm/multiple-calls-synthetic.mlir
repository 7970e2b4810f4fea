// TVM's MultipleCallsToSamePrimFuncModule (tvm-usmp.md §5.3/§5.7; test_tir_usmp_analysis_
// extract_bufferinfo.py::test_multiple_calls_to_same_primfunc): relay.testing.synthetic lowered
// to 14 operator calls, 6 operators called twice, 13 intermediate tensors of 3456 B in main
// (TVM's sid_N is %sidN here: xDSL drops `_N` suffixes), operator scratch buffers (data_pad,
// conv2d_NCHWc_global, compute, compute_global, T_softmax_*) and three constants.
// The scratch buffers of a twice-called operator are one buffer with two live intervals; the
// second softmax operator's copies are named with a `_1` suffix (TVM: `2`).

// RUN: usmp-opt %s -p usmp-extract-buffer-info | filecheck %s --check-prefix=LIVE
// RUN: usmp-opt %s -p usmp-plan | filecheck %s --check-prefix=PLAN
// RUN: usmp-opt %s -p 'usmp-plan{algorithm=hill_climb}' | filecheck %s --check-prefix=PLAN
// RUN: usmp-opt %s -p 'usmp-plan{algorithm=greedy_by_size}' | filecheck %s --check-prefix=GREEDY
// RUN: usmp-opt %s -p usmp | usmp-opt | filecheck %s --check-prefix=CONVERT

// Memory pressure 11424 = sid5 + sid4 + data_pad + conv2d_NCHWc_global, as in TVM; conflict
// sets are TVM's (without its duplicate entries).
// LIVE: builtin.module attributes {usmp.memory_pressure = 11424 : i64}
// LIVE: %data_pad = usmp.allocate {usmp.live = [array<i64: {{[0-9]+}}, {{[0-9]+}}>, array<i64: {{[0-9]+}}, {{[0-9]+}}>], usmp.conflicts = ["conv2d_NCHWc_global", "sid3", "sid4", "sid5", "sid7", "sid8"]}
// LIVE: %conv2d_NCHWc_global = usmp.allocate {{{.*}}usmp.conflicts = ["data_pad", "sid3", "sid5", "sid7"]}
// LIVE: %compute = usmp.allocate {usmp.live = [array<i64: {{[0-9]+}}, {{[0-9]+}}>, array<i64: {{[0-9]+}}, {{[0-9]+}}>], usmp.conflicts = ["compute_global", "sid11", "sid12", "sid19", "sid2", "sid20", "sid6"]}
// LIVE: %compute_global = usmp.allocate {{{.*}}usmp.conflicts = ["compute", "sid11", "sid12", "sid19", "sid2", "sid20", "sid6"]}
// LIVE: %T_softmax_maxelem = usmp.allocate {{{.*}}usmp.conflicts = ["T_softmax_exp", "T_softmax_expsum", "T_softmax_norm", "sid10", "sid5", "sid6"]}
// LIVE-LABEL: func.func @tvmgen_default_fused_add_nn_softmax_1
// LIVE: %T_softmax_maxelem = usmp.allocate {{{.*}}usmp.conflicts = ["T_softmax_exp_1", "T_softmax_expsum_1", "T_softmax_norm_1", "sid18", "sid2"]}
// LIVE-LABEL: func.func @main
// LIVE: %sid21 = usmp.allocate_const {{{.*}}usmp.conflicts = ["sid22", "sid23"]}
// LIVE: %sid2 = usmp.allocate {{{.*}}usmp.conflicts = ["T_softmax_exp_1", "T_softmax_expsum_1", "T_softmax_maxelem_1", "T_softmax_norm_1", "compute", "compute_global", "sid18", "sid19", "sid20", "sid3", "sid5"]}
// LIVE: %sid3 = usmp.allocate {{{.*}}usmp.conflicts = ["conv2d_NCHWc_global", "data_pad", "sid2", "sid5"]}
// LIVE: %sid4 = usmp.allocate {{{.*}}usmp.conflicts = ["data_pad", "sid5"]}
// LIVE: %sid5 = usmp.allocate {{{.*}}usmp.conflicts = ["T_softmax_exp", "T_softmax_expsum", "T_softmax_maxelem", "T_softmax_norm", "conv2d_NCHWc_global", "data_pad", "sid10", "sid2", "sid20", "sid3", "sid4", "sid6"]}
// LIVE: %sid6 = usmp.allocate {{{.*}}usmp.conflicts = ["T_softmax_exp", "T_softmax_expsum", "T_softmax_maxelem", "T_softmax_norm", "compute", "compute_global", "sid10", "sid11", "sid12", "sid5", "sid7"]}
// LIVE: %sid7 = usmp.allocate {{{.*}}usmp.conflicts = ["conv2d_NCHWc_global", "data_pad", "sid6"]}
// LIVE: %sid8 = usmp.allocate {{{.*}}usmp.conflicts = ["data_pad"]}
// LIVE: %sid10 = usmp.allocate {{{.*}}usmp.conflicts = ["T_softmax_exp", "T_softmax_expsum", "T_softmax_maxelem", "T_softmax_norm", "sid11", "sid5", "sid6"]}
// LIVE: %sid11 = usmp.allocate {{{.*}}usmp.conflicts = ["compute", "compute_global", "sid10", "sid12", "sid6"]}
// LIVE: %sid12 = usmp.allocate {{{.*}}usmp.conflicts = ["compute", "compute_global", "sid11", "sid6"]}
// LIVE: %sid18 = usmp.allocate {{{.*}}usmp.conflicts = ["T_softmax_exp_1", "T_softmax_expsum_1", "T_softmax_maxelem_1", "T_softmax_norm_1", "sid19", "sid2"]}
// LIVE: %sid19 = usmp.allocate {{{.*}}usmp.conflicts = ["compute", "compute_global", "sid18", "sid2", "sid20"]}
// LIVE: %sid20 = usmp.allocate {{{.*}}usmp.conflicts = ["compute", "compute_global", "sid19", "sid2", "sid5"]}

// The workspace reaches the memory pressure, 11424 B, with auto and with hill_climb (TVM's
// hill_climb result for this model; greedy_by_size: 22032 here and in the re-implementation of
// TVM's algorithm on TVM's conflict lists).
// PLAN: pool.workspace @global_workspace {internal, size_bytes = 11424 : i64}
// PLAN: pool.constant @global_constant {internal, size_bytes = 3473 : i64}
// GREEDY: pool.workspace @global_workspace {internal, size_bytes = 22032 : i64}

// The constant pool holds the packed constants (sid21: ten 7s, sid22: one 1, sid23: 0.5f).
// CONVERT: pool.constant @global_constant {internal, size_bytes = 3473 : i64, data = dense<"0x{{.*}}0000003F0000003F{{.*}}070707070707070707070000000000000{{.*}}"> : tensor<3473xi8>}
// CONVERT-LABEL: func.func @tvmgen_default_fused_nn_relu(%placeholder: memref<864xf32>, %T_out: memref<864xf32>) {
// CONVERT-LABEL: func.func @tvmgen_default_fused_nn_contrib_conv2d_NCHWc(
// CONVERT-SAME: %global_workspace: memref<11424xi8> {pool.pool = @global_workspace})
// CONVERT-LABEL: func.func @main(%data: memref<864xf32>, %output: memref<864xf32>) {
// CONVERT-NEXT: %global_workspace = pool.base @global_workspace : memref<11424xi8>
// CONVERT-NEXT: %global_constant = pool.base @global_constant : memref<3473xi8>
// CONVERT: memref.view %global_constant[%sid21_offset][] {usmp.buffer = "sid21"} : memref<3473xi8> to memref<10xi8>
// CONVERT: func.call @tvmgen_default_fused_nn_contrib_conv2d_NCHWc(%sid8, %sid21, %sid7, %global_workspace)
// CONVERT: func.call @tvmgen_default_fused_nn_relu(%sid7, %sid6) :

func.func @tvmgen_default_fused_nn_relu(%placeholder: memref<864xf32>, %T_out: memref<864xf32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c864 = arith.constant 864 : index
  scf.for %i = %c0 to %c864 step %c1 {
    %x = memref.load %placeholder[%i] : memref<864xf32>
    %y = math.absf %x : f32
    memref.store %y, %T_out[%i] : memref<864xf32>
  }
  func.return
}

func.func @tvmgen_default_fused_layout_transform(%placeholder: memref<864xf32>, %T_out: memref<864xf32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c864 = arith.constant 864 : index
  scf.for %i = %c0 to %c864 step %c1 {
    %x = memref.load %placeholder[%i] : memref<864xf32>
    %y = math.absf %x : f32
    memref.store %y, %T_out[%i] : memref<864xf32>
  }
  func.return
}

func.func @tvmgen_default_fused_nn_avg_pool2d(%placeholder: memref<864xf32>, %T_out: memref<864xf32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c864 = arith.constant 864 : index
  scf.for %i = %c0 to %c864 step %c1 {
    %x = memref.load %placeholder[%i] : memref<864xf32>
    %y = math.absf %x : f32
    memref.store %y, %T_out[%i] : memref<864xf32>
  }
  func.return
}

func.func @tvmgen_default_fused_add(%placeholder: memref<864xf32>, %placeholder1: memref<864xf32>, %T_add: memref<864xf32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c864 = arith.constant 864 : index
  scf.for %i = %c0 to %c864 step %c1 {
    %x = memref.load %placeholder[%i] : memref<864xf32>
    %y = memref.load %placeholder1[%i] : memref<864xf32>
    %s = arith.addf %x, %y : f32
    memref.store %s, %T_add[%i] : memref<864xf32>
  }
  func.return
}

func.func @tvmgen_default_fused_nn_contrib_conv2d_NCHWc(%placeholder: memref<864xf32>, %placeholder1: memref<10xi8>, %conv2d_NCHWc: memref<864xf32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c864 = arith.constant 864 : index
  %c36 = arith.constant 36 : index
  %c24 = arith.constant 24 : index
  %c1092 = arith.constant 1092 : index
  %zero = arith.constant 0.0 : f32
  %data_pad = usmp.allocate : memref<1092xf32>
  scf.for %i = %c0 to %c1092 step %c1 {
    %inside = arith.cmpi ult, %i, %c864 : index
    %v = scf.if %inside -> (f32) {
      %x = memref.load %placeholder[%i] : memref<864xf32>
      scf.yield %x : f32
    } else {
      scf.yield %zero : f32
    }
    memref.store %v, %data_pad[%i] : memref<1092xf32>
  }
  scf.for %p = %c0 to %c24 step %c1 {
    %conv2d_NCHWc_global = usmp.allocate : memref<36xf32>
    scf.for %j = %c0 to %c36 step %c1 {
      memref.store %zero, %conv2d_NCHWc_global[%j] : memref<36xf32>
      %b = arith.addi %p, %j : index
      %x = memref.load %data_pad[%b] : memref<1092xf32>
      %a = memref.load %conv2d_NCHWc_global[%j] : memref<36xf32>
      %s = arith.addf %a, %x : f32
      memref.store %s, %conv2d_NCHWc_global[%j] : memref<36xf32>
    }
    scf.for %j = %c0 to %c36 step %c1 {
      %a = memref.load %conv2d_NCHWc_global[%j] : memref<36xf32>
      %o = arith.addi %p, %j : index
      memref.store %a, %conv2d_NCHWc[%o] : memref<864xf32>
    }
  }
  func.return
}

func.func @tvmgen_default_fused_nn_dense(%placeholder: memref<864xf32>, %placeholder1: memref<1xi8>, %T_dense: memref<864xf32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c864 = arith.constant 864 : index
  %c48 = arith.constant 48 : index
  %c18 = arith.constant 18 : index
  %zero = arith.constant 0.0 : f32
  %compute = usmp.allocate : memref<48xf32>
  scf.for %p = %c0 to %c18 step %c1 {
    %compute_global = usmp.allocate : memref<48xf32>
    scf.for %j = %c0 to %c48 step %c1 {
      %b = arith.addi %p, %j : index
      %x = memref.load %placeholder[%b] : memref<864xf32>
      memref.store %x, %compute_global[%j] : memref<48xf32>
    }
    scf.for %j = %c0 to %c48 step %c1 {
      %x = memref.load %compute_global[%j] : memref<48xf32>
      memref.store %x, %compute[%j] : memref<48xf32>
    }
    scf.for %j = %c0 to %c48 step %c1 {
      %x = memref.load %compute[%j] : memref<48xf32>
      %o = arith.addi %p, %j : index
      memref.store %x, %T_dense[%o] : memref<864xf32>
    }
  }
  func.return
}

func.func @tvmgen_default_fused_add_nn_softmax(%placeholder: memref<864xf32>, %placeholder1: memref<864xf32>, %T_softmax: memref<864xf32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c864 = arith.constant 864 : index
  %c12 = arith.constant 12 : index
  %c72 = arith.constant 72 : index
  %T_softmax_maxelem = usmp.allocate : memref<1xf32>
  %T_softmax_exp = usmp.allocate : memref<12xf32>
  %T_softmax_expsum = usmp.allocate : memref<1xf32>
  %T_softmax_norm = usmp.allocate : memref<12xf32>
  scf.for %r = %c0 to %c72 step %c1 {
    scf.for %j = %c0 to %c12 step %c1 {
      %b = arith.addi %r, %j : index
      %x0 = memref.load %placeholder[%b] : memref<864xf32>
      %x1 = memref.load %placeholder1[%b] : memref<864xf32>
      %x = arith.addf %x0, %x1 : f32
      memref.store %x, %T_softmax_maxelem[%c0] : memref<1xf32>
      %m = memref.load %T_softmax_maxelem[%c0] : memref<1xf32>
      %d = arith.subf %x, %m : f32
      %e = math.exp %d : f32
      memref.store %e, %T_softmax_exp[%j] : memref<12xf32>
      memref.store %e, %T_softmax_expsum[%c0] : memref<1xf32>
    }
    scf.for %j = %c0 to %c12 step %c1 {
      %e = memref.load %T_softmax_exp[%j] : memref<12xf32>
      %s = memref.load %T_softmax_expsum[%c0] : memref<1xf32>
      %q = arith.divf %e, %s : f32
      memref.store %q, %T_softmax_norm[%j] : memref<12xf32>
      %n = memref.load %T_softmax_norm[%j] : memref<12xf32>
      %o = arith.addi %r, %j : index
      memref.store %n, %T_softmax[%o] : memref<864xf32>
    }
  }
  func.return
}

func.func @tvmgen_default_fused_add_nn_softmax_1(%placeholder: memref<864xf32>, %placeholder1: memref<864xf32>, %T_softmax: memref<864xf32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c864 = arith.constant 864 : index
  %c12 = arith.constant 12 : index
  %c72 = arith.constant 72 : index
  %T_softmax_maxelem = usmp.allocate : memref<1xf32>
  %T_softmax_exp = usmp.allocate : memref<12xf32>
  %T_softmax_expsum = usmp.allocate : memref<1xf32>
  %T_softmax_norm = usmp.allocate : memref<12xf32>
  scf.for %r = %c0 to %c72 step %c1 {
    scf.for %j = %c0 to %c12 step %c1 {
      %b = arith.addi %r, %j : index
      %x0 = memref.load %placeholder[%b] : memref<864xf32>
      %x1 = memref.load %placeholder1[%b] : memref<864xf32>
      %x = arith.addf %x0, %x1 : f32
      memref.store %x, %T_softmax_maxelem[%c0] : memref<1xf32>
      %m = memref.load %T_softmax_maxelem[%c0] : memref<1xf32>
      %d = arith.subf %x, %m : f32
      %e = math.exp %d : f32
      memref.store %e, %T_softmax_exp[%j] : memref<12xf32>
      memref.store %e, %T_softmax_expsum[%c0] : memref<1xf32>
    }
    scf.for %j = %c0 to %c12 step %c1 {
      %e = memref.load %T_softmax_exp[%j] : memref<12xf32>
      %s = memref.load %T_softmax_expsum[%c0] : memref<1xf32>
      %q = arith.divf %e, %s : f32
      memref.store %q, %T_softmax_norm[%j] : memref<12xf32>
      %n = memref.load %T_softmax_norm[%j] : memref<12xf32>
      %o = arith.addi %r, %j : index
      memref.store %n, %T_softmax[%o] : memref<864xf32>
    }
  }
  func.return
}

func.func @main(%data: memref<864xf32>, %output: memref<864xf32>) {
  %sid21 = usmp.allocate_const dense<7> : memref<10xi8>
  %sid22 = usmp.allocate_const dense<1> : memref<1xi8>
  %sid23 = usmp.allocate_const dense<0.5> : memref<864xf32>
  %sid2 = usmp.allocate : memref<864xf32>
  %sid3 = usmp.allocate : memref<864xf32>
  %sid4 = usmp.allocate : memref<864xf32>
  %sid5 = usmp.allocate : memref<864xf32>
  %sid6 = usmp.allocate : memref<864xf32>
  %sid7 = usmp.allocate : memref<864xf32>
  %sid8 = usmp.allocate : memref<864xf32>
  %sid10 = usmp.allocate : memref<864xf32>
  %sid11 = usmp.allocate : memref<864xf32>
  %sid12 = usmp.allocate : memref<864xf32>
  %sid18 = usmp.allocate : memref<864xf32>
  %sid19 = usmp.allocate : memref<864xf32>
  %sid20 = usmp.allocate : memref<864xf32>
  func.call @tvmgen_default_fused_add(%data, %sid23, %sid8) : (memref<864xf32>, memref<864xf32>, memref<864xf32>) -> ()
  func.call @tvmgen_default_fused_nn_contrib_conv2d_NCHWc(%sid8, %sid21, %sid7) : (memref<864xf32>, memref<10xi8>, memref<864xf32>) -> ()
  func.call @tvmgen_default_fused_nn_relu(%sid7, %sid6) : (memref<864xf32>, memref<864xf32>) -> ()
  func.call @tvmgen_default_fused_layout_transform(%sid6, %sid12) : (memref<864xf32>, memref<864xf32>) -> ()
  func.call @tvmgen_default_fused_nn_dense(%sid12, %sid22, %sid11) : (memref<864xf32>, memref<1xi8>, memref<864xf32>) -> ()
  func.call @tvmgen_default_fused_nn_avg_pool2d(%sid11, %sid10) : (memref<864xf32>, memref<864xf32>) -> ()
  func.call @tvmgen_default_fused_add_nn_softmax(%sid10, %sid6, %sid5) : (memref<864xf32>, memref<864xf32>, memref<864xf32>) -> ()
  func.call @tvmgen_default_fused_nn_avg_pool2d(%sid5, %sid4) : (memref<864xf32>, memref<864xf32>) -> ()
  func.call @tvmgen_default_fused_nn_contrib_conv2d_NCHWc(%sid4, %sid21, %sid3) : (memref<864xf32>, memref<10xi8>, memref<864xf32>) -> ()
  func.call @tvmgen_default_fused_add(%sid3, %sid5, %sid2) : (memref<864xf32>, memref<864xf32>, memref<864xf32>) -> ()
  func.call @tvmgen_default_fused_layout_transform(%sid5, %sid20) : (memref<864xf32>, memref<864xf32>) -> ()
  func.call @tvmgen_default_fused_nn_dense(%sid20, %sid22, %sid19) : (memref<864xf32>, memref<1xi8>, memref<864xf32>) -> ()
  func.call @tvmgen_default_fused_nn_relu(%sid19, %sid18) : (memref<864xf32>, memref<864xf32>) -> ()
  func.call @tvmgen_default_fused_add_nn_softmax_1(%sid18, %sid2, %output) : (memref<864xf32>, memref<864xf32>, memref<864xf32>) -> ()
  func.return
}
