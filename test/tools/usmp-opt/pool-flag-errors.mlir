// Mistakes in the pool flags: one line on stderr, exit code 1, no traceback.

// RUN: not usmp-opt %s --workspace-pools=sram --workspace-pools-size-hint-bytes=sram:64k 2>&1 \
// RUN: | filecheck %s --check-prefix=NOT-INTEGER
// NOT-INTEGER-NOT: Traceback
// NOT-INTEGER: {{^}}usmp-opt: error: invalid --workspace-pools-size-hint-bytes item 'sram:64k': '64k' is not a non-negative integer{{$}}
// NOT-INTEGER-NOT: {{.}}

// RUN: not usmp-opt %s --constant-pools=flash --constant-pools-read-latency-cycles=flash:-1 2>&1 \
// RUN: | filecheck %s --check-prefix=NEGATIVE
// NEGATIVE-NOT: Traceback
// NEGATIVE: {{^}}usmp-opt: error: invalid --constant-pools-read-latency-cycles item 'flash:-1': '-1' is not a non-negative integer{{$}}
// NEGATIVE-NOT: {{.}}

// RUN: not usmp-opt %s --workspace-pools=sram --workspace-pools-clock-frequency-hz=sram:0 2>&1 \
// RUN: | filecheck %s --check-prefix=TOO-SMALL
// TOO-SMALL-NOT: Traceback
// TOO-SMALL: {{^}}usmp-opt: error: invalid --workspace-pools-clock-frequency-hz item 'sram:0': the value must be >= 1{{$}}
// TOO-SMALL-NOT: {{.}}

// RUN: not usmp-opt %s --workspace-pools=sram --workspace-pools-size-hint-bytes=sram:9223372036854775808 2>&1 \
// RUN: | filecheck %s --check-prefix=TOO-LARGE
// TOO-LARGE-NOT: Traceback
// TOO-LARGE: {{^}}usmp-opt: error: invalid --workspace-pools-size-hint-bytes item 'sram:9223372036854775808': the value does not fit in 64 bits{{$}}
// TOO-LARGE-NOT: {{.}}

// RUN: not usmp-opt %s --workspace-pools=sram --workspace-pools-targets=sram 2>&1 \
// RUN: | filecheck %s --check-prefix=NO-COLON
// NO-COLON-NOT: Traceback
// NO-COLON: {{^}}usmp-opt: error: invalid --workspace-pools-targets item 'sram': expected POOL:TARGET{{$}}
// NO-COLON-NOT: {{.}}

// RUN: not usmp-opt %s --workspace-pools=sram --workspace-pools-target-burst-bytes=sram:8 2>&1 \
// RUN: | filecheck %s --check-prefix=BURST-FORM
// BURST-FORM-NOT: Traceback
// BURST-FORM: {{^}}usmp-opt: error: invalid --workspace-pools-target-burst-bytes item 'sram:8': expected POOL:TARGET:N{{$}}
// BURST-FORM-NOT: {{.}}

// RUN: not usmp-opt %s --workspace-pools=sram --workspace-pools-target-burst-bytes=sram:accel:8 2>&1 \
// RUN: | filecheck %s --check-prefix=BURST-TARGET
// BURST-TARGET-NOT: Traceback
// BURST-TARGET: {{^}}usmp-opt: error: invalid --workspace-pools-target-burst-bytes item 'sram:accel:8': 'accel' is not a target of pool 'sram' (its targets: c){{$}}
// BURST-TARGET-NOT: {{.}}

// RUN: not usmp-opt %s --workspace-pools=sram --workspace-pools-size-hint-bytes=dram:1024 2>&1 \
// RUN: | filecheck %s --check-prefix=UNLISTED
// UNLISTED-NOT: Traceback
// UNLISTED: {{^}}usmp-opt: error: --workspace-pools-size-hint-bytes names pool 'dram', which is not listed in --workspace-pools{{$}}
// UNLISTED-NOT: {{.}}

// RUN: not usmp-opt %s --workspace-pools=sram --constant-pools-targets=sram:c 2>&1 \
// RUN: | filecheck %s --check-prefix=OTHER-KIND
// OTHER-KIND-NOT: Traceback
// OTHER-KIND: {{^}}usmp-opt: error: --constant-pools-targets names pool 'sram', which is not listed in --constant-pools (it is a workspace pool){{$}}
// OTHER-KIND-NOT: {{.}}

// RUN: not usmp-opt %s --workspace-pools=sram,flash --constant-pools=flash 2>&1 \
// RUN: | filecheck %s --check-prefix=BOTH
// BOTH-NOT: Traceback
// BOTH: {{^}}usmp-opt: error: pool 'flash' is listed in both --workspace-pools and --constant-pools{{$}}
// BOTH-NOT: {{.}}

// RUN: not usmp-opt %s --workspace-pools=sram --workspace-pools=sram 2>&1 \
// RUN: | filecheck %s --check-prefix=TWICE
// TWICE-NOT: Traceback
// TWICE: {{^}}usmp-opt: error: --workspace-pools lists pool 'sram' twice{{$}}
// TWICE-NOT: {{.}}

// RUN: not usmp-opt %s --workspace-pools=sram --internal-pools=sram,dram 2>&1 \
// RUN: | filecheck %s --check-prefix=INTERNAL
// INTERNAL-NOT: Traceback
// INTERNAL: {{^}}usmp-opt: error: --internal-pools names pool 'dram', which is not declared by --workspace-pools, --constant-pools or --state-pools{{$}}
// INTERNAL-NOT: {{.}}

// RUN: not usmp-opt %s --workspace-pools=sram,my-pool 2>&1 | filecheck %s --check-prefix=NAME
// NAME-NOT: Traceback
// NAME: {{^}}usmp-opt: error: --workspace-pools: pool name 'my-pool' is not an identifier ([A-Za-z_][A-Za-z0-9_]*){{$}}
// NAME-NOT: {{.}}

// RUN: not usmp-opt %s --workspace-pools=sram, 2>&1 | filecheck %s --check-prefix=EMPTY
// EMPTY-NOT: Traceback
// EMPTY: {{^}}usmp-opt: error: --workspace-pools has an empty item{{$}}
// EMPTY-NOT: {{.}}

// A pool the input declares too (here @flash, in the second chunk).
// RUN: not usmp-opt %s --split-input-file --constant-pools=flash 2>&1 \
// RUN: | filecheck %s --check-prefix=CLASH
// CLASH-NOT: Traceback
// CLASH: {{^}}usmp-opt: error: {{.*}}pool-flag-errors.mlir (chunk starting at line {{[0-9]+}}): pool @flash of --constant-pools is also declared in the input (by 'pool.constant'){{$}}
// CLASH-NOT: {{.}}

// With --verify-diagnostics the clash is a diagnostic of its chunk: printed, exit code 0, and
// the other chunks are still processed.
// RUN: usmp-opt %s --split-input-file --verify-diagnostics --constant-pools=flash \
// RUN: | filecheck %s --check-prefix=CLASH-DIAG
// CLASH-DIAG:      pool.constant @flash {targets = ["c"]}
// CLASH-DIAG-NEXT: func.func @main()
// CLASH-DIAG:      pool @flash of --constant-pools is also declared in the input (by 'pool.constant')

func.func @main() {
  func.return
}

// -----

pool.constant @flash {targets = ["c"]}
