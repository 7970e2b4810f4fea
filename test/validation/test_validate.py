"""The comparison and input handling behind `usmp-validate`, on hand-made arrays."""

from __future__ import annotations

import math

import numpy as np
import pytest

from usmp_dialect.validation.host import Port
from usmp_dialect.validation.validate import (
    ValidationError,
    _given_samples,
    compare_outputs,
    find_compiler,
)

INT8 = Port("y", np.dtype(np.int8), (1, 4))
FLOAT = Port("z", np.dtype(np.float32), (2,))


def test_integer_outputs_count_differing_values_over_all_inputs() -> None:
    ours = [[np.array([[1, 2, 3, 4]], np.int8)], [np.array([[1, 2, 3, 9]], np.int8)]]
    theirs = [[np.array([[1, 2, 3, 4]], np.int8)], [np.array([[1, 0, 3, 4]], np.int8)]]
    (check,) = compare_outputs([INT8], ours, theirs, 1e-5)
    assert (check.values, check.differing, check.max_abs_error) == (8, 2, 5.0)
    assert not check.passed
    assert check.line() == "output y (int8 1x4): 2 of 8 values differ (max difference 5): FAIL"
    (same,) = compare_outputs([INT8], theirs, theirs, 0.0)
    assert same.passed and same.line() == "output y (int8 1x4): bit-exact"


def test_float_error_is_relative_to_the_largest_reference_magnitude() -> None:
    ours = [[np.array([1.0, 100.0005], np.float32)]]
    theirs = [[np.array([1.0, 100.0], np.float32)]]
    (check,) = compare_outputs([FLOAT], ours, theirs, 1e-5)
    assert check.reference_magnitude == 100.0
    assert check.max_rel_error == pytest.approx(check.max_abs_error / 100.0)
    assert check.passed  # 5e-6 of the largest, although 1.0 would allow only 1e-5 of itself
    (strict,) = compare_outputs([FLOAT], ours, theirs, 1e-6)
    assert not strict.passed
    assert strict.line().endswith(": FAIL (tolerance 1e-06)")


def test_nan_where_the_reference_has_none_fails_and_shared_nan_passes() -> None:
    (check,) = compare_outputs(
        [FLOAT], [[np.array([np.nan, 1.0], np.float32)]], [[np.array([0.5, 1.0])]], 1.0
    )
    assert not check.passed and math.isnan(check.max_abs_error)
    (same,) = compare_outputs(
        [FLOAT], [[np.array([np.nan, 1.0], np.float32)]], [[np.array([np.nan, 1.0])]], 0.0
    )
    assert same.passed


def test_a_zero_reference_needs_zero_output() -> None:
    (check,) = compare_outputs([FLOAT], [[np.array([0.0, 1e-9])]], [[np.zeros(2)]], 1e-5)
    assert check.max_rel_error == math.inf and not check.passed


def test_outputs_that_cannot_be_compared_fail() -> None:
    (short,) = compare_outputs([FLOAT], [[np.zeros(2)]], [[np.zeros(3)]], 1.0)
    assert short.line() == "output z (float32 2): 2 values, the reference has 3: FAIL"
    (missing,) = compare_outputs([FLOAT], [[np.zeros(2)]], [[]], 1.0)
    assert missing.line() == "output z (float32 2): the reference has only 0 outputs: FAIL"


def test_given_arrays_are_one_input_or_a_stack() -> None:
    one = np.arange(4, dtype=np.int8).reshape(1, 4)
    (sample,) = _given_samples([INT8], {"y": one})
    np.testing.assert_array_equal(sample[0], one)
    stacked = _given_samples([INT8], {"y": np.stack([one, one + 1])})
    assert len(stacked) == 2 and stacked[1][0].dtype == np.int8
    wider = _given_samples([INT8], {"y": one.astype(np.int64)})  # in range: converted
    assert wider[0][0].dtype == np.int8


@pytest.mark.parametrize(
    ("given", "message"),
    [
        ({"q": np.zeros((1, 4), np.int8)}, "--input q: the model has no input of that name"),
        ({}, "--input: no values for input y (give every input)"),
        ({"y": np.zeros((4,), np.int8)}, "--input y: shape 4, the input is 1x4 (or N x 1x4"),
        ({"y": np.full((1, 4), 300)}, "--input y: values outside the range of int8"),
        ({"y": np.zeros((1, 4), np.float32)}, "--input y: float32 values, the input is int8"),
    ],
)
def test_wrong_given_arrays_are_one_line(given: dict[str, np.ndarray], message: str) -> None:
    with pytest.raises(ValidationError) as error:
        _given_samples([INT8], given)
    assert str(error.value).startswith(message)


def test_no_c_compiler(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("CC", raising=False)
    monkeypatch.setenv("PATH", "")
    with pytest.raises(ValidationError, match=r"^no C compiler found: install gcc or set CC$"):
        find_compiler()
