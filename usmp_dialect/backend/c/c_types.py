"""How MLIR scalar types and constants are written in C.

Integers are signless in MLIR. A value of type `iN` lives in a C variable of the signed type
`intN_t` (`i1` in a `uint8_t` holding 0 or 1, `index` in `int64_t`); each op converts to the
unsigned types where its semantics are unsigned or where C signed arithmetic could overflow.
"""

from __future__ import annotations

import math
import struct

from xdsl.dialects.builtin import Float32Type, Float64Type, IndexType, IntegerType
from xdsl.ir import Attribute
from xdsl.utils.exceptions import DiagnosticException

INTEGER_WIDTHS = (1, 8, 16, 32, 64)


def is_integer(type_: Attribute) -> bool:
    return isinstance(type_, IntegerType | IndexType)


def is_float(type_: Attribute) -> bool:
    return isinstance(type_, Float32Type | Float64Type)


def width(type_: Attribute) -> int:
    """Bit width of an integer (index: 64) or float type."""
    if isinstance(type_, IndexType):
        return 64
    if isinstance(type_, IntegerType):
        return type_.width.data
    if isinstance(type_, Float32Type):
        return 32
    if isinstance(type_, Float64Type):
        return 64
    raise DiagnosticException(f"C backend: unsupported type {type_}")


def check_scalar(type_: Attribute) -> None:
    """Raises a diagnostic for scalar types C cannot hold exactly (i4, f16, ...)."""
    if isinstance(type_, IntegerType) and type_.width.data not in INTEGER_WIDTHS:
        raise DiagnosticException(
            f"C backend: unsupported integer type {type_} (supported: i1, i8, i16, i32, i64, index)"
        )
    if not (is_integer(type_) or is_float(type_)):
        raise DiagnosticException(
            f"C backend: unsupported type {type_} (supported: i1, i8, i16, i32, i64, index, "
            "f32, f64)"
        )


def c_type(type_: Attribute) -> str:
    """The C type of a scalar value (and of a memref element)."""
    check_scalar(type_)
    if isinstance(type_, Float32Type):
        return "float"
    if isinstance(type_, Float64Type):
        return "double"
    bits = width(type_)
    return "uint8_t" if bits == 1 else f"int{bits}_t"


def unsigned_type(type_: Attribute) -> str:
    """The unsigned C type of the same width (for unsigned semantics)."""
    bits = width(type_)
    return "uint8_t" if bits == 1 else f"uint{bits}_t"


def wide_unsigned_type(type_: Attribute) -> str:
    """An unsigned type at least as wide as `int`, for wrap-around arithmetic without UB."""
    return "uint64_t" if width(type_) > 32 else "uint32_t"


def normalize_int(value: int, bits: int) -> int:
    """`value` as the two's complement signed number of `bits` bits (i1: 0 or 1)."""
    value &= (1 << bits) - 1
    if bits == 1:
        return value
    if value >= 1 << (bits - 1):
        value -= 1 << bits
    return value


def int_literal(value: int, type_: Attribute) -> str:
    """A C literal of integer type `type_` (wrapped in parentheses when negative)."""
    bits = width(type_)
    value = normalize_int(value, bits)
    if bits == 1:
        return str(value)
    if value == -(1 << (bits - 1)) and bits >= 32:
        return f"INT{bits}_MIN"
    fits_int = -(2**31) < value < 2**31
    text = str(value) if bits < 64 or fits_int else f"INT64_C({value})"
    return f"({text})" if value < 0 else text


def float_literal(value: float, type_: Attribute) -> str:
    """A C literal of float type `type_`, exact for the value the attribute holds."""
    is_f32 = isinstance(type_, Float32Type)
    if math.isnan(value):
        return "NAN" if is_f32 else "(double)NAN"
    if math.isinf(value):
        sign = "-" if value < 0 else ""
        return f"({sign}INFINITY)" if is_f32 else f"({sign}(double)INFINITY)"
    if is_f32:
        value = struct.unpack("<f", struct.pack("<f", value))[0]
        text = f"{value:.9g}"
    else:
        text = repr(value)
    if not any(c in text for c in ".en"):
        text += ".0"
    if is_f32:
        text += "f"
    return f"({text})" if text.startswith("-") else text
