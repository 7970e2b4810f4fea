"""The one-rounding form of TFLite's double-rounding `MultiplyByQuantizedMultiplier`
(`fixed_point.emit_multiply_shift_high`), on Python integers: the high word of `value *
multiplier + high * 2**32 + (value < 0 ? -2**30 : 2**30)`, shifted right by `e - 1`, is the
reference (SRDHM, then RoundingDivideByPOT) plus the zero point folded into `high`, including
the ties of both roundings; and the form is refused where its sum could leave int64."""

from __future__ import annotations

import numpy as np

from usmp_dialect.kernels.fixed_point import (
    INT32_MAX,
    INT32_MIN,
    multiply_by_quantized_multiplier_reference,
    rounding_high_word,
)


def one_rounding(value: int, multiplier: int, right_shift: int, high: int) -> int:
    """What the emitted IR computes, in int64 arithmetic wrapped as C wraps it."""
    half = (1 << 30) if value >= 0 else -(1 << 30)
    total = (value * multiplier + (high << 32) + half + 2**63) % 2**64 - 2**63
    return (total >> 32) >> (right_shift - 1)


def test_one_rounding_equals_the_double_rounding() -> None:
    rng = np.random.default_rng(0)
    for _ in range(20000):
        right_shift = int(rng.integers(2, 32))
        zero_point = int(rng.integers(-128, 128))
        high = rounding_high_word(right_shift, zero_point)
        if high is None:
            continue
        multiplier = int(rng.choice([1 << 30, INT32_MAX, int(rng.integers(1 << 30, 1 << 31))]))
        value = int(rng.choice([rng.integers(INT32_MIN, INT32_MAX), rng.integers(-70000, 70000)]))
        expected = multiply_by_quantized_multiplier_reference(value, multiplier, -right_shift)
        assert one_rounding(value, multiplier, right_shift, high) == expected + zero_point


def test_ties_of_both_roundings() -> None:
    # multiplier 2**30: SRDHM halves the value (its ties at odd values), then every residue
    # modulo 2**e meets RoundingDivideByPOT's ties, for both signs
    for right_shift in range(2, 9):
        high = rounding_high_word(right_shift, -5)
        assert high is not None
        for value in range(-3000, 3000):
            for multiplier in (1 << 30, (1 << 30) + 1, 3 << 29):
                expected = multiply_by_quantized_multiplier_reference(
                    value, multiplier, -right_shift
                )
                assert one_rounding(value, multiplier, right_shift, high) == expected - 5


def test_refused_where_it_does_not_apply() -> None:
    assert rounding_high_word(0) is None and rounding_high_word(1) is None
    assert rounding_high_word(2) == 1
    assert rounding_high_word(31, 0) == 1 << 29
    assert rounding_high_word(31, 1) is None  # the high word leaves int32
    assert rounding_high_word(25, 100) is None  # the sum could leave int64
