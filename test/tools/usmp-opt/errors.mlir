// Command-line and input errors: one line on stderr, exit code 1, no traceback.

// RUN: not usmp-opt %s -p usmp-no-such-pass 2>&1 | filecheck %s --check-prefix=UNKNOWN-PASS
// UNKNOWN-PASS-NOT: Traceback
// UNKNOWN-PASS: {{^}}usmp-opt: error: invalid -p 'usmp-no-such-pass': Unrecognized passes: ['usmp-no-such-pass']{{$}}
// UNKNOWN-PASS-NOT: {{.}}

// RUN: not usmp-opt %s -p 'canonicalize{no-such-option=1}' 2>&1 \
// RUN: | filecheck %s --check-prefix=UNKNOWN-OPTION
// UNKNOWN-OPTION-NOT: Traceback
// UNKNOWN-OPTION: {{^}}usmp-opt: error: invalid -p 'canonicalize{no-such-option=1}': Provided arguments ["no_such_option"] not found in expected arguments []{{$}}
// UNKNOWN-OPTION-NOT: {{.}}

// RUN: not usmp-opt %s -p 'canonicalize{' 2>&1 | filecheck %s --check-prefix=PIPELINE-SYNTAX
// PIPELINE-SYNTAX-NOT: Traceback
// PIPELINE-SYNTAX: {{^}}usmp-opt: error: invalid -p 'canonicalize{' at column 14: Expected argument name here{{$}}
// PIPELINE-SYNTAX-NOT: {{.}}

// RUN: not usmp-opt %s -t no-such-target 2>&1 | filecheck %s --check-prefix=UNKNOWN-TARGET
// UNKNOWN-TARGET-NOT: Traceback
// UNKNOWN-TARGET: {{^}}usmp-opt: error: argument -t/--target: invalid choice: 'no-such-target' (choose from {{.*}}c, c-header{{.*}}){{$}}
// UNKNOWN-TARGET-NOT: {{.}}

// RUN: not usmp-opt %s -t 'mlir{no_such_option=1}' 2>&1 | filecheck %s --check-prefix=TARGET-OPTION
// TARGET-OPTION-NOT: Traceback
// TARGET-OPTION: {{^}}usmp-opt: error: invalid -t 'mlir{no_such_option=1}': Provided arguments ["no_such_option"] not found in expected arguments [{{.*}}]{{$}}
// TARGET-OPTION-NOT: {{.}}

// RUN: not usmp-opt %s --no-such-flag 2>&1 | filecheck %s --check-prefix=UNKNOWN-FLAG
// UNKNOWN-FLAG-NOT: Traceback
// UNKNOWN-FLAG: {{^}}usmp-opt: error: unrecognized arguments: --no-such-flag{{$}}
// UNKNOWN-FLAG-NOT: {{.}}

// RUN: not usmp-opt %S/Inputs/no-such-file.mlir 2>&1 | filecheck %s --check-prefix=NO-FILE
// NO-FILE-NOT: Traceback
// NO-FILE: {{^}}usmp-opt: error: cannot read input file '{{.*}}Inputs/no-such-file.mlir': No such file or directory{{$}}
// NO-FILE-NOT: {{.}}

// Parse errors give file:line:col and the message, also inside a later --split-input-file chunk.
// RUN: not usmp-opt %S/Inputs/parse-error.mlir 2>&1 | filecheck %s --check-prefix=PARSE
// PARSE-NOT: Traceback
// PARSE: {{^}}usmp-opt: error: {{.*}}Inputs/parse-error.mlir:3:3: Expected '>' after builtin parameter list{{$}}
// PARSE-NOT: {{.}}

// RUN: not usmp-opt %S/Inputs/parse-error-split.mlir --split-input-file 2>&1 \
// RUN: | filecheck %s --check-prefix=PARSE-SPLIT
// PARSE-SPLIT-NOT: Traceback
// PARSE-SPLIT: {{^}}usmp-opt: error: {{.*}}Inputs/parse-error-split.mlir:9:3: Expected '>' after builtin parameter list{{$}}
// PARSE-SPLIT-NOT: {{.}}

// With --parsing-diagnostics the parse error goes to stdout and the exit code is 0.
// RUN: usmp-opt %S/Inputs/parse-error-split.mlir --split-input-file --parsing-diagnostics \
// RUN: | filecheck %s --check-prefix=PARSE-DIAG
// PARSE-DIAG: func.func @first()
// PARSE-DIAG: parse-error-split.mlir:9:3
// PARSE-DIAG: Expected '>' after builtin parameter list

// A verifier failure names the input (and the chunk).
// RUN: not usmp-opt %S/Inputs/verify-error.mlir --split-input-file 2>&1 \
// RUN: | filecheck %s --check-prefix=VERIFY
// VERIFY-NOT: Traceback
// VERIFY: {{^}}usmp-opt: error: {{.*}}Inputs/verify-error.mlir (chunk starting at line 5): pool @sram: alignment 3 is not a power of two{{$}}
// VERIFY-NOT: {{.}}

// With --verify-diagnostics it goes to stdout and the exit code is 0.
// RUN: usmp-opt %S/Inputs/verify-error.mlir --split-input-file --verify-diagnostics \
// RUN: | filecheck %s --check-prefix=VERIFY-DIAG
// VERIFY-DIAG: func.func @main()
// VERIFY-DIAG: pool @sram: alignment 3 is not a power of two
// VERIFY-DIAG: Operation does not verify: pool @sram: alignment 3 is not a power of two

// A pass failure (xDSL's transform-interpreter without a transform script).
// RUN: not usmp-opt %s -p transform-interpreter 2>&1 | filecheck %s --check-prefix=PASS-FAILED
// PASS-FAILED-NOT: Traceback
// PASS-FAILED: {{^}}usmp-opt: error: {{.*}}errors.mlir: {{.*}} could not find a nested named sequence with name: __transform_main{{$}}
// PASS-FAILED-NOT: {{.}}

// -o is written only when everything succeeded: a failure in the second chunk neither creates
// the file nor overwrites an existing one.
// RUN: rm -f %t.mlir
// RUN: not usmp-opt %S/Inputs/verify-error.mlir --split-input-file -o %t.mlir
// RUN: not cat %t.mlir
// RUN: echo "previous output" > %t.mlir
// RUN: not usmp-opt %S/Inputs/verify-error.mlir --split-input-file -o %t.mlir
// RUN: filecheck %s --check-prefix=KEPT --input-file %t.mlir
// KEPT: {{^}}previous output{{$}}
// RUN: usmp-opt %s --workspace-pools=sram -o %t.mlir
// RUN: filecheck %s --check-prefix=WRITTEN --input-file %t.mlir
// WRITTEN:      pool.workspace @sram {targets = ["c"]}
// WRITTEN-NEXT: func.func @main()

// An output file in a directory that does not exist.
// RUN: not usmp-opt %s -o %t.no-such-dir/out.mlir 2>&1 | filecheck %s --check-prefix=NO-DIR
// NO-DIR-NOT: Traceback
// NO-DIR: {{^}}usmp-opt: error: cannot write output file '{{.*}}no-such-dir/out.mlir': No such file or directory{{$}}
// NO-DIR-NOT: {{.}}

func.func @main() {
  func.return
}
