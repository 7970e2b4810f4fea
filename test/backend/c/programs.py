"""Test programs for the C backend: MLIR text (before planning) and their numpy meaning.

The MLIR of each program is in `Inputs/programs/<name>.mlir` (`$name` marks data filled in
here). Each program is an entry function `@main` whose memref arguments are the model's inputs and
outputs, calling operator functions written with `linalg` (lowered by xDSL's
`convert-linalg-to-loops`) or with `scf`/`arith`/`math` loops. Weights are
`usmp.allocate_const` (they land in a constant pool), intermediate and scratch buffers are
`usmp.allocate`. Random data is seeded.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from string import Template

import numpy as np
from numpy.typing import NDArray

Array = NDArray[np.generic]

MLIR_ELEMENT = {
    np.dtype(np.float32): "f32",
    np.dtype(np.float64): "f64",
    np.dtype(np.int8): "i8",
    np.dtype(np.int16): "i16",
    np.dtype(np.int32): "i32",
    np.dtype(np.int64): "i64",
}


@dataclass(frozen=True)
class Program:
    """A model: its IR, sample inputs, output shapes, and what it computes (numpy)."""

    name: str
    mlir: str
    inputs: dict[str, Array]
    outputs: dict[str, tuple[tuple[int, ...], np.dtype[np.generic]]]
    reference: Callable[[dict[str, Array]], dict[str, Array]]


def dense(values: Array) -> str:
    """An MLIR dense literal for `values` (exact for float32)."""
    if values.dtype.kind == "f":
        flat = [repr(float(v)) for v in values.reshape(-1)]
    else:
        flat = [str(int(v)) for v in values.reshape(-1)]

    def nest(items: list[str], shape: tuple[int, ...]) -> str:
        if not shape:
            return items[0]
        if len(shape) == 1:
            return "[" + ", ".join(items) + "]"
        step = len(items) // shape[0]
        return (
            "["
            + ", ".join(nest(items[i : i + step], shape[1:]) for i in range(0, len(items), step))
            + "]"
        )

    return f"dense<{nest(flat, values.shape)}>"


def memref(shape: tuple[int, ...], dtype: np.dtype[np.generic] | type) -> str:
    return f"memref<{'x'.join(str(d) for d in shape)}x{MLIR_ELEMENT[np.dtype(dtype)]}>"


PROGRAMS_DIR = Path(__file__).parent / "Inputs" / "programs"


def _template(name: str) -> str:
    """The MLIR text of a program, with `$name` placeholders for its data."""
    return (PROGRAMS_DIR / f"{name}.mlir").read_text()


def _render(text: str, **values: object) -> str:
    return Template(text).substitute({k: str(v) for k, v in values.items()})


# ---- elementwise: bias + tanh (linalg.generic), then a chain of math/arith ops (loops) -------


def elementwise(rng: np.random.Generator) -> Program:
    x = rng.uniform(-2.0, 2.0, (2, 8)).astype(np.float32)
    bias = rng.uniform(-1.0, 1.0, (8,)).astype(np.float32)
    mlir = _render(
        _template("elementwise"),
        bias=dense(bias),
    )

    def reference(inputs: dict[str, Array]) -> dict[str, Array]:
        v = inputs["x"].astype(np.float64)
        w = np.tanh(v + bias.astype(np.float64))
        a = np.abs(v)
        a1 = a + 1
        fc = np.where(v < 0, np.floor(v * 3), np.ceil(v * 3))
        m = v * np.exp(-a) + np.sqrt(a)
        y = (1 / np.sqrt(a1) + np.log(a1)) + (a1**1.5 - m)
        y = y + (fc / a1 + np.maximum(w, 0)) + np.minimum(v, w)
        return {"y": y}

    return Program("elementwise", mlir, {"x": x}, {"y": ((2, 8), np.dtype(np.float32))}, reference)


# ---- matmul: fill + linalg.matmul with constant weights, then relu ---------------------------


def matmul(rng: np.random.Generator) -> Program:
    x = rng.uniform(-1, 1, (4, 16)).astype(np.float32)
    weights = rng.uniform(-1, 1, (16, 8)).astype(np.float32)
    mlir = _render(
        _template("matmul"),
        weights=dense(weights),
    )

    def reference(inputs: dict[str, Array]) -> dict[str, Array]:
        product = inputs["x"].astype(np.float64) @ weights.astype(np.float64)
        return {"y": np.maximum(product, 0)}

    return Program("matmul", mlir, {"x": x}, {"y": ((4, 8), np.dtype(np.float32))}, reference)


# ---- conv 2D (NHWC, HWCF) with constant weights, then bias + relu ----------------------------


def conv2d(rng: np.random.Generator) -> Program:
    x = rng.uniform(-1, 1, (1, 8, 8, 3)).astype(np.float32)
    weights = rng.uniform(-1, 1, (3, 3, 3, 4)).astype(np.float32)
    bias = rng.uniform(-1, 1, (4,)).astype(np.float32)
    mlir = _render(
        _template("conv2d"),
        weights=dense(weights),
        bias=dense(bias),
    )

    def reference(inputs: dict[str, Array]) -> dict[str, Array]:
        image = inputs["x"].astype(np.float64)
        kernel = weights.astype(np.float64)
        out = np.zeros((1, 6, 6, 4))
        for kh in range(3):
            for kw in range(3):
                out += np.einsum(
                    "nhwc,cf->nhwf", image[:, kh : kh + 6, kw : kw + 6, :], kernel[kh, kw]
                )
        return {"y": np.maximum(out + bias, 0)}

    return Program("conv2d", mlir, {"x": x}, {"y": ((1, 6, 6, 4), np.dtype(np.float32))}, reference)


# ---- pooling: 2x2 stride-2 max and average pooling (scf.for with iter_args) -------------------


def pooling(rng: np.random.Generator) -> Program:
    x = rng.uniform(-1, 1, (1, 6, 6, 4)).astype(np.float32)
    mlir = _template("pooling")

    def reference(inputs: dict[str, Array]) -> dict[str, Array]:
        windows = inputs["x"].astype(np.float64).reshape(1, 3, 2, 3, 2, 4)
        return {"y_max": windows.max(axis=(2, 4)), "y_avg": windows.mean(axis=(2, 4))}

    shape = ((1, 3, 3, 4), np.dtype(np.float32))
    return Program("pooling", mlir, {"x": x}, {"y_max": shape, "y_avg": shape}, reference)


# ---- residual block: 1x1 conv + relu (scratch inside), 1x1 conv, add skip, relu --------------


def residual(rng: np.random.Generator) -> Program:
    x = rng.uniform(-1, 1, (1, 6, 6, 4)).astype(np.float32)
    w1 = rng.uniform(-1, 1, (1, 1, 4, 4)).astype(np.float32)
    w2 = rng.uniform(-1, 1, (1, 1, 4, 4)).astype(np.float32)
    t = "memref<1x6x6x4xf32>"
    w = "memref<1x1x4x4xf32>"
    mlir = _render(
        _template("residual"),
        t=t,
        w=w,
        w1=dense(w1),
        w2=dense(w2),
    )

    def reference(inputs: dict[str, Array]) -> dict[str, Array]:
        image = inputs["x"].astype(np.float64)
        t1 = np.maximum(image @ w1[0, 0].astype(np.float64), 0)
        t2 = t1 @ w2[0, 0].astype(np.float64)
        return {"y": np.maximum(t2 + image, 0)}

    return Program(
        "residual", mlir, {"x": x}, {"y": ((1, 6, 6, 4), np.dtype(np.float32))}, reference
    )


# ---- int8 requantisation: i8 x i8 -> i32 accumulate, bias, fixed-point scale, clamp ----------

REQUANT_MULTIPLIER = 1518500250  # ~0.7071 in Q31
REQUANT_SHIFT = 38  # total right shift: Q31 plus 7
REQUANT_ZERO_POINT = -3


def int8_requant(rng: np.random.Generator) -> Program:
    x = rng.integers(-128, 128, (4, 16), dtype=np.int8)
    weights = rng.integers(-128, 128, (16, 8), dtype=np.int8)
    bias = rng.integers(-5000, 5000, (8,), dtype=np.int32)
    mlir = _render(
        _template("int8_requant"),
        multiplier=REQUANT_MULTIPLIER,
        shift=REQUANT_SHIFT,
        round=1 << (REQUANT_SHIFT - 1),
        zero_point=REQUANT_ZERO_POINT,
        weights=dense(weights),
        bias=dense(bias),
    )

    def reference(inputs: dict[str, Array]) -> dict[str, Array]:
        acc = inputs["x"].astype(np.int64) @ weights.astype(np.int64) + bias.astype(np.int64)
        scaled = (acc * REQUANT_MULTIPLIER + (1 << (REQUANT_SHIFT - 1))) >> REQUANT_SHIFT
        out = np.clip(scaled + REQUANT_ZERO_POINT, -128, 127)
        return {"y": out.astype(np.int8)}

    return Program("int8_requant", mlir, {"x": x}, {"y": ((4, 8), np.dtype(np.int8))}, reference)


# ---- integer semantics: signed/unsigned division, shifts, comparisons, wrap-around ----------

INT_OPS = (
    "divsi",
    "remsi",
    "divui",
    "remui",
    "floordivsi",
    "ceildivsi",
    "shrsi",
    "shrui",
    "shli",
    "minui",
    "maxsi",
    "muli",
    "ult_select",
    "i8_wrap_add",
    "i1_slt_extsi",
)


def int_ops(rng: np.random.Generator) -> Program:
    n = 64
    a = rng.integers(-(2**31), 2**31, n, dtype=np.int64).astype(np.int32)
    b = rng.integers(-(2**15), 2**15, n, dtype=np.int64).astype(np.int32)
    b[b == 0] = 7
    rows = len(INT_OPS)
    mlir = _render(
        _template("int_ops"),
        rows=rows,
    )

    def reference(inputs: dict[str, Array]) -> dict[str, Array]:
        x = inputs["a"].astype(np.int64)
        y = inputs["b"].astype(np.int64)
        ux, uy = x & 0xFFFFFFFF, y & 0xFFFFFFFF
        shift = y & 31
        trunc_div = np.sign(x) * np.sign(y) * (np.abs(x) // np.abs(y))
        results = {
            "divsi": trunc_div,
            "remsi": x - trunc_div * y,
            "divui": ux // uy,
            "remui": ux % uy,
            "floordivsi": x // y,
            "ceildivsi": -((-x) // y),
            "shrsi": x >> shift,
            "shrui": ux >> shift,
            "shli": (ux << shift) & 0xFFFFFFFF,
            "minui": np.where(ux < uy, x, y),
            "maxsi": np.maximum(x, y),
            "muli": (x * y) & 0xFFFFFFFF,
            "ult_select": np.where(ux < uy, x, y),
            "i8_wrap_add": (x + y) & 0xFF,
            "i1_slt_extsi": np.where(x < y, -1, 0),
        }
        out = np.stack([results[name] for name in INT_OPS])
        return {"out": (out & 0xFFFFFFFF).astype(np.uint32).view(np.int32)}

    return Program(
        "int_ops",
        mlir,
        {"a": a, "b": b},
        {"out": ((rows, n), np.dtype(np.int32))},
        reference,
    )


# ---- other element types: f64, i16, i64 and i1 buffers, unsigned conversions ---------------


def mixed_types(rng: np.random.Generator) -> Program:
    a = rng.uniform(-3.0, 3.0, 16)
    b = rng.integers(-(2**15), 2**15, 16, dtype=np.int16)
    b[0] = -(2**15)  # absi of the minimum wraps to itself
    flags = rng.integers(0, 2, 16).astype(np.bool_)

    def reference(inputs: dict[str, Array]) -> dict[str, Array]:
        x = inputs["a"]
        n = inputs["b"].astype(np.int64)
        f = inputs["flags"]
        pick = np.where(f, np.sqrt(np.abs(x)), np.sin(x))
        ugt = ~(x <= 0.5)
        pick2 = np.where(ugt, n.astype(np.float64), (n & 0xFFFF).astype(np.float64))
        absolute = np.abs(n) & 0xFFFF
        wide = np.trunc(x).astype(np.int64) * 4000000000
        return {"of": pick + pick2, "o64": wide + absolute - f.astype(np.int64)}

    return Program(
        "mixed_types",
        _template("mixed_types"),
        {"a": a, "b": b, "flags": flags},
        {"o64": ((16,), np.dtype(np.int64)), "of": ((16,), np.dtype(np.float64))},
        reference,
    )


# ---- unused buffers: operators holding buffers they never touch, a function never called ----
# Their pools are no C parameters and the uncalled function is not printed (gcc -Werror).


def unused_buffers(rng: np.random.Generator) -> Program:
    x = rng.integers(-100, 100, (8,), dtype=np.int32)
    k = rng.integers(-100, 100, (8,), dtype=np.int32)
    unused = rng.integers(-100, 100, (8,), dtype=np.int32)
    mlir = _render(_template("unused_buffers"), k=dense(k), unused=dense(unused))

    def reference(inputs: dict[str, Array]) -> dict[str, Array]:
        return {"y": inputs["x"].astype(np.int64) * k * k}

    return Program("unused_buffers", mlir, {"x": x}, {"y": ((8,), np.dtype(np.int32))}, reference)


ALL_PROGRAMS: dict[str, Callable[[np.random.Generator], Program]] = {
    "elementwise": elementwise,
    "matmul": matmul,
    "conv2d": conv2d,
    "pooling": pooling,
    "residual": residual,
    "int8_requant": int8_requant,
    "int_ops": int_ops,
    "mixed_types": mixed_types,
    "unused_buffers": unused_buffers,
}
