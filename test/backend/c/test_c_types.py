"""How scalar types, constants and names are written in C."""

from __future__ import annotations

import pytest
from xdsl.dialects.builtin import Float16Type, IndexType, IntegerType, f32, f64, i1, i8, i32, i64
from xdsl.utils.exceptions import DiagnosticException

from usmp_dialect.backend.c import c_types
from usmp_dialect.backend.c.names import NameTable, sanitize


@pytest.mark.parametrize(
    ("type_", "expected"),
    [
        (i1, "uint8_t"),
        (i8, "int8_t"),
        (IntegerType(16), "int16_t"),
        (i32, "int32_t"),
        (i64, "int64_t"),
        (IndexType(), "int64_t"),
        (f32, "float"),
        (f64, "double"),
    ],
)
def test_c_type(type_: object, expected: str) -> None:
    assert c_types.c_type(type_) == expected  # type: ignore[arg-type]


@pytest.mark.parametrize("type_", [IntegerType(4), IntegerType(128), Float16Type()])
def test_unsupported_types_are_diagnostics(type_: object) -> None:
    with pytest.raises(DiagnosticException, match="C backend: unsupported"):
        c_types.c_type(type_)  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("value", "type_", "expected"),
    [
        (5, i32, "5"),
        (-5, i32, "(-5)"),
        (255, i8, "(-1)"),  # signless bits read as the signed storage type
        (-1, i1, "1"),
        (-(2**31), i32, "INT32_MIN"),
        (-(2**63), i64, "INT64_MIN"),
        (5_000_000_000, i64, "INT64_C(5000000000)"),
        (2**64 - 1, IndexType(), "(-1)"),
    ],
)
def test_int_literal(value: int, type_: object, expected: str) -> None:
    assert c_types.int_literal(value, type_) == expected  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("value", "type_", "expected"),
    [
        (1.0, f32, "1.0f"),
        (0.1, f32, "0.100000001f"),  # the f32 value the attribute holds, exactly
        (-2.5, f64, "(-2.5)"),
        (1e-5, f64, "1e-05"),
        (float("inf"), f32, "(INFINITY)"),
        (float("-inf"), f64, "(-(double)INFINITY)"),
        (float("nan"), f32, "NAN"),
    ],
)
def test_float_literal(value: float, type_: object, expected: str) -> None:
    assert c_types.float_literal(value, type_) == expected  # type: ignore[arg-type]


def test_names_are_unique_and_never_shadow_c() -> None:
    names = NameTable()
    assert [names.fresh(h) for h in ("x", "x", "x_1", "int", "expf", "0a", "a.b")] == [
        "x",
        "x_1",
        "x_1_1",
        "int_1",
        "expf_1",
        "v0a",
        "a_b",
    ]
    child = names.child()
    assert child.fresh("x") == "x_2"
    assert names.fresh("y") == "y"  # a child scope does not take names from its parent
    assert sanitize("__reserved") == "__reserved"
    assert NameTable().fresh("__reserved") == "v__reserved"
