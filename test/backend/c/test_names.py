"""C identifiers from SSA names (`backend/c/names.py`): valid, unique, and at most 63
characters whatever the hint (C11's significant initial characters)."""

from __future__ import annotations

from usmp_dialect.backend.c.names import MAX_IDENTIFIER_CHARS, NameTable, shortened


def test_short_hints_are_kept() -> None:
    names = NameTable()
    assert names.fresh("conv_out") == "conv_out"
    assert names.fresh("conv_out") == "conv_out_1"
    assert names.fresh("int8_t") == "int8_t_1"  # reserved C names are never taken


def test_long_hints_are_cut_with_a_stable_hash() -> None:
    names = NameTable()
    base = "a_tensor_name_far_longer_than_any_c_compiler_is_obliged_to_tell_apart"
    first, second = names.fresh(base + "_left"), names.fresh(base + "_right")
    assert len(first) == len(second) == MAX_IDENTIFIER_CHARS
    assert first != second
    assert first == shortened(base + "_left", MAX_IDENTIFIER_CHARS)  # same input, same name
    assert NameTable().fresh(base + "_left") == first
    assert names.fresh(base + "_left") != first  # a clash still gets a suffix...
    assert len(names.fresh(base + "_left")) <= MAX_IDENTIFIER_CHARS  # ...within the limit


def test_limit_and_children() -> None:
    names = NameTable(limit=32)
    field = names.fresh("x" * 40)
    assert len(field) == 32 and "__" not in field
    child = names.child()
    assert child.limit == 32 and field in child.taken
