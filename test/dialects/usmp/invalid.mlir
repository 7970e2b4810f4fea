// RUN: USMP_VERIFY_DIAG | filecheck %s

// Every diagnostic of the usmp dialect, one chunk each.

%a = usmp.allocate : memref<?x4xi8>
// CHECK: Operation does not verify: buffer type memref<?x4xi8> has a dynamic shape

// -----

%a = usmp.allocate : memref<4x4xi8, strided<[8, 1]>>
// CHECK: Operation does not verify: buffer type memref<4x4xi8, strided<[8, 1]>> must have the identity layout

// -----

%a = usmp.allocate : memref<4xi8, affine_map<(d0) -> (d0 + 1)>>
// CHECK: Operation does not verify: buffer type memref<4xi8, affine_map<(d0) -> ((d0 + 1))>> must have the identity layout

// -----

%a = usmp.allocate : tensor<4xi8>
// CHECK: Operation does not verify: a buffer must be a memref, got tensor<4xi8>

// -----

%a = "usmp.allocate"() : () -> i32
// CHECK: Operation does not verify: a buffer must be a memref, got i32

// -----

%a = usmp.allocate : memref<2xcomplex<f32>>
// CHECK: Operation does not verify: buffer type memref<2xcomplex<f32>>: unsupported element type complex<f32>

// -----

%a = usmp.allocate {alignment = 3 : i64} : memref<4xi8>
// CHECK: Operation does not verify: alignment 3 is not a power of two

// -----

%a = usmp.allocate {alignment = 0 : i64} : memref<4xi8>
// CHECK: Operation does not verify: alignment must be positive, got 0

// -----

%a = usmp.allocate {alignment = -16 : i64} : memref<4xi8>
// CHECK: Operation does not verify: alignment must be positive, got -16

// -----

%a = usmp.allocate {alignment = "x"} : memref<4xi8>
// CHECK: Operation does not verify: 'alignment' must be an integer of type i64 (e.g. 64 : i64), got "x"

// -----

%a = usmp.allocate {alignment = 16 : i32} : memref<4xi8>
// CHECK: Operation does not verify: 'alignment' must be an integer of type i64 (e.g. 64 : i64), got 16 : i32

// -----

%a = usmp.allocate {pools = @sram} : memref<4xi8>
// CHECK: Operation does not verify: 'pools' must be an array of pool symbols (e.g. [@sram]), got @sram

// -----

%a = usmp.allocate {pools = ["sram"]} : memref<4xi8>
// CHECK: Operation does not verify: 'pools' must be an array of pool symbols (e.g. [@sram]), got ["sram"]

// -----

%a = usmp.allocate {pool = "sram", offset = 0 : i64} : memref<4xi8>
// CHECK: Operation does not verify: 'pool' must be a pool symbol (e.g. @sram), got "sram"

// -----

pool.workspace @sram
%a = usmp.allocate {pool = @sram, offset = 1.0 : f32} : memref<4xi8>
// CHECK: Operation does not verify: 'offset' must be an integer of type i64 (e.g. 64 : i64), got 1.000000e+00 : f32

// -----

%a = usmp.allocate {pools = []} : memref<4xi8>
// CHECK: Operation does not verify: 'pools' must list at least one candidate pool

// -----

pool.workspace @sram
%a = usmp.allocate {pools = [@sram, @sram]} : memref<4xi8>
// CHECK: Operation does not verify: candidate pool @sram is listed twice in 'pools'

// -----

%a = usmp.allocate {offset = 0 : i64} : memref<4xi8>
// CHECK: Operation does not verify: 'offset' is given without 'pool'

// -----

pool.workspace @sram
%a = usmp.allocate {pool = @sram, offset = -16 : i64} : memref<4xi8>
// CHECK: Operation does not verify: offset -16 is negative

// -----

pool.workspace @sram
%a = usmp.allocate {pool = @sram, offset = 8 : i64} : memref<4xi8>
// CHECK: Operation does not verify: offset 8 is not a multiple of the alignment 16

// -----

pool.workspace @sram
%a = usmp.allocate {alignment = 64 : i64, pool = @sram, offset = 32 : i64} : memref<4xi8>
// CHECK: Operation does not verify: offset 32 is not a multiple of the alignment 64

// -----

pool.workspace @sram
%a = usmp.allocate {pools = [@sram, @nope]} : memref<4xi8>
// CHECK: Operation does not verify: candidate pool @nope does not name a pool

// -----

pool.workspace @sram
%a = usmp.allocate {pool = @nope, offset = 0 : i64} : memref<4xi8>
// CHECK: Operation does not verify: pool @nope does not name a pool

// -----

func.func @main() {
  %a = usmp.allocate {pools = [@main]} : memref<4xi8>
  func.return
}
// CHECK: Operation does not verify: candidate pool @main is not a pool (it is a 'func.func')

// -----

func.func @main() {
  %a = usmp.allocate {pool = @main, offset = 0 : i64} : memref<4xi8>
  func.return
}
// CHECK: Operation does not verify: pool @main is not a pool (it is a 'func.func')

// -----

pool.workspace @sram
%a = usmp.allocate {pools = [@sram::@inner]} : memref<4xi8>
// CHECK: Operation does not verify: candidate pool @sram::@inner must be a flat symbol reference like @sram

// -----

// A pool declared in an outer module is not visible from a nested module.
pool.workspace @sram
builtin.module {
  %a = usmp.allocate {pools = [@sram]} : memref<4xi8>
}
// CHECK: Operation does not verify: candidate pool @sram does not name a pool

// -----

pool.workspace @sram
pool.constant @flash
%a = usmp.allocate {pools = [@sram, @flash]} : memref<4xi8>
// CHECK: Operation does not verify: candidate pool @flash is a constant pool, but 'usmp.allocate' needs a workspace pool

// -----

pool.constant @flash
%a = usmp.allocate {pool = @flash, offset = 0 : i64} : memref<4xi8>
// CHECK: Operation does not verify: pool @flash is a constant pool, but 'usmp.allocate' needs a workspace pool

// -----

pool.workspace @sram
%w = usmp.allocate_const {pools = [@sram]} dense<[1, 2]> : memref<2xi8>
// CHECK: Operation does not verify: candidate pool @sram is a workspace pool, but 'usmp.allocate_const' needs a constant pool

// -----

pool.workspace @sram
%w = usmp.allocate_const {pool = @sram, offset = 0 : i64} dense<[1, 2]> : memref<2xi8>
// CHECK: Operation does not verify: pool @sram is a workspace pool, but 'usmp.allocate_const' needs a constant pool

// -----

pool.workspace @sram
pool.workspace @dram
%a = usmp.allocate {pools = [@sram], pool = @dram, offset = 0 : i64} : memref<4xi8>
// CHECK: Operation does not verify: pool @dram is not one of the candidate pools [@sram]

// -----

pool.workspace @sram {size_bytes = 64 : i64}
%a = usmp.allocate {pool = @sram, offset = 48 : i64} : memref<8xf32>
// CHECK: Operation does not verify: buffer ends at byte 80, beyond the size_bytes 64 of pool @sram

// -----

pool.workspace @sram {size_hint_bytes = 1024 : i64}
%a = usmp.allocate {pool = @sram, offset = 1024 : i64} : memref<1xi8>
// CHECK: Operation does not verify: buffer ends at byte 1025, beyond the size_hint_bytes 1024 of pool @sram

// -----

pool.constant @flash {size_bytes = 8 : i64}
%w = usmp.allocate_const {pool = @flash, offset = 0 : i64} dense<[1, 2, 3]> : memref<3xi32>
// CHECK: Operation does not verify: buffer ends at byte 12, beyond the size_bytes 8 of pool @flash

// -----

%w = usmp.allocate_const dense<[1, 2, 3]> : tensor<3xi32>
// CHECK: Operation does not verify: a buffer must be a memref, got tensor<3xi32>

// -----

%w = "usmp.allocate_const"() <{value = dense<[1, 2, 3]> : tensor<3xi32>}> : () -> memref<3xi32>
// CHECK: Operation does not verify: the data of usmp.allocate_const must be typed by its memref type memref<3xi32>, got tensor<3xi32>

// -----

%w = "usmp.allocate_const"() <{value = dense<[1, 2, 3]> : memref<3xi32>}> : () -> memref<3xi16>
// CHECK: Operation does not verify: data of element type i32 does not match the element type of memref<3xi16>

// -----

%w = "usmp.allocate_const"() <{value = dense<[1.0, 2.0]> : memref<2xf32>}> : () -> memref<2xi32>
// CHECK: Operation does not verify: data of element type f32 does not match the element type of memref<2xi32>

// -----

%w = "usmp.allocate_const"() <{value = dense<[1, 2, 3]> : memref<3xi32>}> : () -> memref<4xi32>
// CHECK: Operation does not verify: data holds 3 elements but memref<4xi32> needs 4

// -----

%w = "usmp.allocate_const"() <{value = dense<[[1, 2], [3, 4]]> : memref<2x2xi32>}> : () -> memref<4xi32>
// CHECK: Operation does not verify: data typed memref<2x2xi32> does not match the result type memref<4xi32>

// -----

%w = "usmp.allocate_const"() <{value = [1, 2]}> : () -> memref<2xi32>
// CHECK: Operation does not verify: 'value' must be a dense literal typed by the buffer (e.g. dense<[1, 2]> : memref<2xi32>), got [1 : i64, 2 : i64]

// -----

%w = "usmp.allocate_const"() : () -> memref<2xi32>
// CHECK: Operation does not verify: property 'value' expected in operation 'usmp.allocate_const'

// -----

%w = usmp.allocate_const {value = dense<[1, 2]> : memref<2xi32>} dense<[1, 2]> : memref<2xi32>
// CHECK: the data of usmp.allocate_const is the dense literal after the attribute dictionary, not a 'value' entry

// -----

%w = usmp.allocate_const 5 : i32
// CHECK: expected a dense literal typed by the buffer's memref type, e.g. dense<[1, 2]> : memref<2xi32>

// -----

// Element type mismatch in the custom form: the literal is parsed with the memref's type.
%w = usmp.allocate_const dense<[1.5, 2.0]> : memref<2xi32>
// CHECK: Expected integer value

// -----

// Element count mismatch in the custom form.
%w = usmp.allocate_const dense<[1, 2, 3]> : memref<4xi32>
// CHECK: Shape mismatch in dense literal. Expected [4] shape from the type, but got [3] shape.

// -----

// A state buffer goes to state pools only.
builtin.module {
  pool.workspace @sram
  %s = usmp.allocate_state {pools = [@sram]} dense<0> : memref<2xi16>
}
// CHECK: candidate pool @sram is a workspace pool, but 'usmp.allocate_state' needs a state pool

// -----

builtin.module {
  pool.state @persist
  %a = usmp.allocate {pools = [@persist]} : memref<2xi16>
}
// CHECK: candidate pool @persist is a state pool, but 'usmp.allocate' needs a workspace pool
