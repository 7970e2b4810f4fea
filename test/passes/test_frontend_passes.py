"""Behaviour of the front-end passes that lit output alone cannot show.

* `usmp-parallel-to-serial` keeps the meaning of loops with reductions (run with xDSL's
  interpreter before and after, against numpy).
* `usmp-import-memref` output parses back to the same text (dense data re-typed to memrefs,
  splats and hex blobs included) and a second run changes nothing.
* `usmp-assign-pools` is idempotent and leaves a module that verifies.
"""

from __future__ import annotations

from io import StringIO

import numpy as np
import pytest
from xdsl.context import Context
from xdsl.dialects.builtin import ModuleOp
from xdsl.interpreter import Interpreter
from xdsl.interpreters.arith import ArithFunctions
from xdsl.interpreters.func import FuncFunctions
from xdsl.interpreters.memref import MemRefFunctions
from xdsl.interpreters.scf import ScfFunctions
from xdsl.interpreters.shaped_array import ShapedArray
from xdsl.interpreters.utils.ptr import TypedPtr
from xdsl.parser import Parser
from xdsl.passes import ModulePass
from xdsl.printer import Printer
from xdsl.universe import Universe

from usmp_dialect.dialects.usmp import AllocateConstOp
from usmp_dialect.passes.assign_pools import UsmpAssignPoolsPass
from usmp_dialect.passes.import_memref import UsmpImportMemrefPass
from usmp_dialect.passes.parallel_to_serial import UsmpParallelToSerialPass


def _context() -> Context:
    ctx = Context()
    for name, factory in Universe.get_multiverse().all_dialects.items():
        ctx.register_dialect(name, factory)
    return ctx


def _parse(text: str) -> ModuleOp:
    module = Parser(_context(), text).parse_module()
    module.verify()
    return module


def _print(module: ModuleOp) -> str:
    out = StringIO()
    Printer(stream=out).print_op(module)
    return out.getvalue()


def _run(pass_: ModulePass, text: str) -> str:
    module = _parse(text)
    pass_.apply(_context(), module)
    module.verify()
    return _print(module)


REDUCTION = """
func.func @reduce(%in: memref<3x5xf32>) -> (f32, f32) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c2 = arith.constant 2 : index
  %c3 = arith.constant 3 : index
  %c5 = arith.constant 5 : index
  %zero = arith.constant 0.0 : f32
  %low = arith.constant -1000.0 : f32
  %s:2 = "scf.parallel"(%c0, %c1, %c3, %c5, %c1, %c2, %zero, %low)
      <{operandSegmentSizes = array<i32: 2, 2, 2, 2>}> ({
  ^bb0(%i: index, %j: index):
    %scratch = memref.alloc() : memref<1xf32>
    %v = memref.load %in[%i, %j] : memref<3x5xf32>
    memref.store %v, %scratch[%c0] : memref<1xf32>
    %w = memref.load %scratch[%c0] : memref<1xf32>
    "scf.reduce"(%w, %w) ({
    ^bb1(%lhs: f32, %rhs: f32):
      %sum = arith.addf %lhs, %rhs : f32
      scf.reduce.return %sum : f32
    }, {
    ^bb2(%lhs2: f32, %rhs2: f32):
      %max = arith.maximumf %lhs2, %rhs2 : f32
      scf.reduce.return %max : f32
    }) : (f32, f32) -> ()
  }) : (index, index, index, index, index, index, f32, f32) -> (f32, f32)
  func.return %s#0, %s#1 : f32, f32
}
"""


def test_parallel_reductions_keep_their_meaning() -> None:
    serial = _run(UsmpParallelToSerialPass(), REDUCTION)
    assert "scf.parallel" not in serial
    module = _parse(serial)
    interpreter = Interpreter(module)
    for functions in (ArithFunctions(), FuncFunctions(), MemRefFunctions(), ScfFunctions()):
        interpreter.register_implementations(functions)
    data = np.random.default_rng(seed=7).uniform(-10, 10, size=(3, 5)).astype(np.float32)
    array = ShapedArray(TypedPtr.new_float32([float(x) for x in data.flat]), [3, 5])
    total, maximum = interpreter.call_op("reduce", (array,))
    # The loops cover rows 0..2 and columns 1, 3 (lower bound 1, step 2).
    covered = data[:, 1:5:2]
    assert total == pytest.approx(float(covered.sum(dtype=np.float32)), rel=1e-5)
    assert maximum == pytest.approx(float(covered.max()))


IMPORT = """
"memref.global"() <{sym_name = "splat", sym_visibility = "private", type = memref<2x3xf32>, \
initial_value = dense<2.5> : tensor<2x3xf32>, constant}> : () -> ()
"memref.global"() <{sym_name = "ints", sym_visibility = "private", type = memref<2x2xi16>, \
initial_value = dense<[[1, -2], [3, 4]]> : tensor<2x2xi16>, constant, alignment = 32 : i64}> \
: () -> ()
"memref.global"() <{sym_name = "blob", sym_visibility = "private", type = memref<200xi8>, \
initial_value = dense<5> : tensor<200xi8>, constant}> : () -> ()
func.func @f() {
  %a = memref.alloc() {alignment = 8 : i64} : memref<4x4xf32>
  %s = memref.get_global @splat : memref<2x3xf32>
  %i = memref.get_global @ints : memref<2x2xi16>
  %b = memref.get_global @blob : memref<200xi8>
  memref.dealloc %a : memref<4x4xf32>
  func.return
}
"""


def test_import_output_round_trips_and_is_stable() -> None:
    imported = _run(UsmpImportMemrefPass(), IMPORT)
    assert "memref.global" not in imported
    assert "memref.dealloc" not in imported
    assert _print(_parse(imported)) == imported
    assert _run(UsmpImportMemrefPass(), imported) == imported


def test_imported_constants_keep_their_values() -> None:
    module = _parse(IMPORT)
    UsmpImportMemrefPass().apply(_context(), module)
    values = {
        op.memref.name_hint: (op.value.get_values(), str(op.value.type), op.alignment_bytes)
        for op in module.walk()
        if isinstance(op, AllocateConstOp)
    }
    assert values["s"] == ((2.5,) * 6, "memref<2x3xf32>", 16)
    assert values["i"] == ((1, -2, 3, 4), "memref<2x2xi16>", 32)
    assert values["b"] == ((5,) * 200, "memref<200xi8>", 16)


POOLS = """
pool.workspace @sram {targets = ["c"]}
func.func @main() {
  %a = usmp.allocate : memref<16xi8>
  %w = usmp.allocate_const dense<[1, 2]> : memref<2xi8>
  func.return
}
func.func @kernel() attributes {usmp.target = "accel"} {
  %p = usmp.allocate {pools = [@sram]} : memref<16xi8>
  func.return
}
"""


def test_assign_pools_is_idempotent() -> None:
    once = _run(UsmpAssignPoolsPass(), POOLS)
    assert _run(UsmpAssignPoolsPass(), once) == once
    assert "pool.constant @global_constant {internal}" in once
    assert "pool.workspace @global_workspace" not in once
