"""`memref.alloc`/`alloca` in newer MLIR's `alignment = N` form parse into xDSL's own ops, so
passes and xDSL's interpreter (keyed by the exact op class) treat them as ordinary
allocations."""

from __future__ import annotations

import pytest
from xdsl.context import Context
from xdsl.dialects import memref
from xdsl.dialects.builtin import IntegerAttr, ModuleOp
from xdsl.interpreter import Interpreter
from xdsl.interpreters.arith import ArithFunctions
from xdsl.interpreters.func import FuncFunctions
from xdsl.interpreters.memref import MemRefFunctions
from xdsl.parser import Parser
from xdsl.universe import Universe

KEYWORD = """
func.func @f() -> f32 {
  %c0 = arith.constant 0 : index
  %v = arith.constant 2.5 : f32
  %a = memref.alloc() alignment = 64 : memref<3xf32>
  %b = memref.alloc() alignment = 16 {foo = 1 : i64} : memref<3xf32>
  memref.store %v, %a[%c0] : memref<3xf32>
  %w = memref.load %a[%c0] : memref<3xf32>
  memref.store %w, %b[%c0] : memref<3xf32>
  %x = memref.load %b[%c0] : memref<3xf32>
  func.return %x : f32
}
"""

ALLOCA = """
func.func @g() {
  %c = memref.alloca() alignment = 32 : memref<3xf32>
  func.return
}
"""

GENERIC = """
"func.func"() <{sym_name = "f", function_type = () -> ()}> ({
  %a = "memref.alloc"() <{alignment = 64 : i64, operandSegmentSizes = array<i32: 0, 0>}> \
: () -> memref<3xf32>
  "func.return"() : () -> ()
}) : () -> ()
"""


def _parse(text: str) -> ModuleOp:
    ctx = Context()
    for name, factory in Universe.get_multiverse().all_dialects.items():
        ctx.register_dialect(name, factory)
    module = Parser(ctx, text).parse_module()
    module.verify()
    return module


def _allocations(module: ModuleOp) -> list[memref.AllocOp | memref.AllocaOp]:
    return [op for op in module.walk() if isinstance(op, memref.AllocOp | memref.AllocaOp)]


def test_keyword_form_parses_into_xdsl_ops_with_their_alignment() -> None:
    first, second = _allocations(_parse(KEYWORD))
    assert type(first) is memref.AllocOp and type(second) is memref.AllocOp
    assert first.alignment == IntegerAttr(64, 64)
    assert second.alignment == IntegerAttr(16, 64)
    assert second.attributes["foo"] == IntegerAttr(1, 64)
    (alloca,) = _allocations(_parse(ALLOCA))
    assert type(alloca) is memref.AllocaOp
    assert alloca.alignment == IntegerAttr(32, 64)


def test_generic_form_parses_into_xdsl_op() -> None:
    (alloc,) = _allocations(_parse(GENERIC))
    assert type(alloc) is memref.AllocOp
    assert alloc.alignment == IntegerAttr(64, 64)


def test_xdsl_interpreter_runs_the_keyword_form() -> None:
    interpreter = Interpreter(_parse(KEYWORD))
    for functions in (ArithFunctions(), FuncFunctions(), MemRefFunctions()):
        interpreter.register_implementations(functions)
    (result,) = interpreter.call_op("f", ())
    assert result == pytest.approx(2.5)
