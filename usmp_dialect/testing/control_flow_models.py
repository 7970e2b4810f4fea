"""Small TFLite models with control flow (IF, WHILE) for the tests, written with
`tflite_writer`: what `tf.cond` and `tf.while_loop` export, on tensors of one element where
TensorFlow would use scalars, except `scalar_loop` (scalars as TensorFlow writes them).

* `int8_if`: `y = cond ? x + x : CONV_2D(x)` (int8, the branches requantise differently).
* `float_if`: `y = cond ? x + [1, 2, 3, 4] : x * x` (float32; the then branch's constant).
* `if_in_line`: an IF on a constant condition (false: `y = x * x`) and an IF running one
  subgraph either way (`z = relu(x)`): each runs one branch, in line.
* `float_while`: `i = 0; while (i < n) { i += 1; x += x }` (float32 throughout, the
  data-dependent bound n too; i starts from a constant).
* `nested`: `float_while`'s loop whose body doubles x while `i < 2` and squares it after: an IF
  inside the WHILE body.
* `variable_in_loop`: `float_while`'s loop whose body adds x to a resource variable `acc`
  (VAR_HANDLE, READ_VARIABLE, ADD, ASSIGN_VARIABLE) each turn; `acc` starts as
  [1, 2, 3, 4] (a CALL_ONCE init subgraph) and is read after the loop (the second output).
* `swap_loop`: a body swapping two loop variables through RESHAPEs (its outputs are views of
  its inputs): `while (i < n) { i += 1; (p, q) = (q, p) }`.
* `scalar_loop`: as TensorFlow exports a loop: scalar (rank-0) counter, bound and predicates;
  `i = 0; while (i < n) { i += 1; x = sum(x) > 0 ? x * 0.5 : x + x }` (the IF nested in the
  body, on a scalar SUM compared with a scalar); `int32_loop` the same with an int32 counter
  and bound, as `tf.while_loop` over a Python `int` exports it.
* Refused: `while_changing_shape` (the body's output has another shape than its loop
  variable), `unreferenced_subgraph` (a subgraph nothing runs), `custom_in_branch` (an
  unsupported operator inside a branch).
"""

from __future__ import annotations

import numpy as np
import tflite

from usmp_dialect.testing.tflite_writer import OperatorSpec, SubgraphSpec, TensorSpec, write_model

F32 = np.float32


def _if(cond: int, inputs: list[int], outputs: list[int], then: int, other: int) -> OperatorSpec:
    fields = {"ThenSubgraphIndex": then, "ElseSubgraphIndex": other}
    return OperatorSpec("IF", [cond, *inputs], outputs, "IfOptions", fields)


def _while(inputs: list[int], outputs: list[int], cond: int, body: int) -> OperatorSpec:
    fields = {"CondSubgraphIndex": cond, "BodySubgraphIndex": body}
    return OperatorSpec("WHILE", inputs, outputs, "WhileOptions", fields)


def int8_if() -> bytes:
    x = {"scales": [0.05], "zero_points": [-3]}
    y = {"scales": [0.1], "zero_points": [2]}
    tensors = [
        TensorSpec("cond", np.bool_, [1]),
        TensorSpec("x", np.int8, [1, 4, 4, 2], **x),
        TensorSpec("y", np.int8, [1, 4, 4, 2], **y),
    ]
    then = SubgraphSpec(
        [TensorSpec("a", np.int8, [1, 4, 4, 2], **x), TensorSpec("b", np.int8, [1, 4, 4, 2], **y)],
        [OperatorSpec("ADD", [0, 0], [1], "AddOptions")],
        [0],
        [1],
    )
    rng = np.random.default_rng(7)
    weights = rng.integers(-127, 128, size=(2, 3, 3, 2), dtype=np.int8)
    bias = np.array([100, -250], dtype=np.int32)
    other = SubgraphSpec(
        [
            TensorSpec("a", np.int8, [1, 4, 4, 2], **x),
            TensorSpec("w", np.int8, [2, 3, 3, 2], weights, [0.01, 0.02], [0, 0], axis=0),
            TensorSpec("bias", np.int32, [2], bias, [0.0005, 0.001], [0, 0]),
            TensorSpec("b", np.int8, [1, 4, 4, 2], **y),
        ],
        [
            OperatorSpec(
                "CONV_2D",
                [0, 1, 2],
                [3],
                "Conv2DOptions",
                {"Padding": 0, "StrideH": 1, "StrideW": 1, "FusedActivationFunction": 1},
            )
        ],
        [0],
        [3],
    )
    operators = [_if(0, [1], [2], 1, 2)]
    return write_model(tensors, operators, [0, 1], [2], more_subgraphs=[then, other])


def float_if() -> bytes:
    tensors = [
        TensorSpec("cond", np.bool_, [1]),
        TensorSpec("x", F32, [1, 4]),
        TensorSpec("y", F32, [1, 4]),
    ]
    then = SubgraphSpec(
        [
            TensorSpec("a", F32, [1, 4]),
            TensorSpec("c", F32, [1, 4], np.array([[1, 2, 3, 4]], F32)),
            TensorSpec("b", F32, [1, 4]),
        ],
        [OperatorSpec("ADD", [0, 1], [2], "AddOptions")],
        [0],
        [2],
    )
    other = SubgraphSpec(
        [TensorSpec("a", F32, [1, 4]), TensorSpec("b", F32, [1, 4])],
        [OperatorSpec("MUL", [0, 0], [1], "MulOptions")],
        [0],
        [1],
    )
    return write_model(tensors, [_if(0, [1], [2], 1, 2)], [0, 1], [2], more_subgraphs=[then, other])


def if_in_line() -> bytes:
    tensors = [
        TensorSpec("cond", np.bool_, [1]),
        TensorSpec("x", F32, [1, 4]),
        TensorSpec("y", F32, [1, 4]),
        TensorSpec("z", F32, [1, 4]),
        TensorSpec("no", np.bool_, [1], np.array([False])),
    ]
    then = SubgraphSpec(
        [TensorSpec("a", F32, [1, 4]), TensorSpec("b", F32, [1, 4])],
        [OperatorSpec("ADD", [0, 0], [1], "AddOptions")],
        [0],
        [1],
    )
    other = SubgraphSpec(
        [TensorSpec("a", F32, [1, 4]), TensorSpec("b", F32, [1, 4])],
        [OperatorSpec("MUL", [0, 0], [1], "MulOptions")],
        [0],
        [1],
    )
    either = SubgraphSpec(
        [TensorSpec("a", F32, [1, 4]), TensorSpec("b", F32, [1, 4])],
        [OperatorSpec("RELU", [0], [1])],
        [0],
        [1],
    )
    operators = [_if(4, [1], [2], 1, 2), _if(0, [1], [3], 3, 3)]
    more = [then, other, either]
    return write_model(tensors, operators, [0, 1], [2, 3], more_subgraphs=more)


def _loop_tensors() -> list[TensorSpec]:
    return [TensorSpec("i", F32, [1]), TensorSpec("x", F32, [1, 4]), TensorSpec("n", F32, [1])]


def _cond() -> SubgraphSpec:
    """`i < n` on the loop variables (i, x, n)."""
    tensors = [*_loop_tensors(), TensorSpec("go", np.bool_, [1])]
    return SubgraphSpec(tensors, [OperatorSpec("LESS", [0, 2], [3])], [0, 1, 2], [3])


def _main_loop(body: SubgraphSpec, more: list[SubgraphSpec], x_shape: list[int]) -> bytes:
    tensors = [
        TensorSpec("zero", F32, [1], np.array([0], F32)),
        TensorSpec("x", F32, [1, 4]),
        TensorSpec("n", F32, [1]),
        TensorSpec("count", F32, [1]),
        TensorSpec("y", F32, x_shape),
        TensorSpec("n_out", F32, [1]),
    ]
    operators = [_while([0, 1, 2], [3, 4, 5], 1, 2)]
    return write_model(tensors, operators, [1, 2], [3, 4], more_subgraphs=[_cond(), body, *more])


def float_while() -> bytes:
    body = SubgraphSpec(
        [
            *_loop_tensors(),
            TensorSpec("one", F32, [1], np.array([1], F32)),
            TensorSpec("i1", F32, [1]),
            TensorSpec("x1", F32, [1, 4]),
        ],
        [
            OperatorSpec("ADD", [0, 3], [4], "AddOptions"),
            OperatorSpec("ADD", [1, 1], [5], "AddOptions"),
        ],
        [0, 1, 2],
        [4, 5, 2],  # n passes through
    )
    return _main_loop(body, [], [1, 4])


def nested() -> bytes:
    body = SubgraphSpec(
        [
            *_loop_tensors(),
            TensorSpec("one", F32, [1], np.array([1], F32)),
            TensorSpec("two", F32, [1], np.array([2], F32)),
            TensorSpec("i1", F32, [1]),
            TensorSpec("early", np.bool_, [1]),
            TensorSpec("x1", F32, [1, 4]),
        ],
        [
            OperatorSpec("ADD", [0, 3], [5], "AddOptions"),
            OperatorSpec("LESS", [0, 4], [6]),
            _if(6, [1], [7], 3, 4),
        ],
        [0, 1, 2],
        [5, 7, 2],
    )
    double = SubgraphSpec(
        [TensorSpec("a", F32, [1, 4]), TensorSpec("b", F32, [1, 4])],
        [OperatorSpec("ADD", [0, 0], [1], "AddOptions")],
        [0],
        [1],
    )
    square = SubgraphSpec(
        [TensorSpec("a", F32, [1, 4]), TensorSpec("b", F32, [1, 4])],
        [OperatorSpec("MUL", [0, 0], [1], "MulOptions")],
        [0],
        [1],
    )
    return _main_loop(body, [double, square], [1, 4])


def variable_in_loop() -> bytes:
    resource = tflite.TensorType.RESOURCE
    tensors = [
        TensorSpec("zero", F32, [1], np.array([0], F32)),
        TensorSpec("x", F32, [1, 4]),
        TensorSpec("n", F32, [1]),
        TensorSpec("count", F32, [1]),
        TensorSpec("y", F32, [1, 4]),
        TensorSpec("n_out", F32, [1]),
        TensorSpec("handle", np.int32, [], type_code=resource),
        TensorSpec("acc", F32, [1, 4]),
    ]
    operators = [
        OperatorSpec("CALL_ONCE", [], [], "CallOnceOptions", {"InitSubgraphIndex": 3}),
        _while([0, 1, 2], [3, 4, 5], 1, 2),
        OperatorSpec("VAR_HANDLE", [], [6], "VarHandleOptions", {"SharedName": "acc"}),
        OperatorSpec("READ_VARIABLE", [6], [7]),
    ]
    body = SubgraphSpec(
        [
            *_loop_tensors(),
            TensorSpec("one", F32, [1], np.array([1], F32)),
            TensorSpec("i1", F32, [1]),
            TensorSpec("handle", np.int32, [], type_code=resource),
            TensorSpec("read", F32, [1, 4]),
            TensorSpec("sum", F32, [1, 4]),
        ],
        [
            OperatorSpec("ADD", [0, 3], [4], "AddOptions"),
            OperatorSpec("VAR_HANDLE", [], [5], "VarHandleOptions", {"SharedName": "acc"}),
            OperatorSpec("READ_VARIABLE", [5], [6]),
            OperatorSpec("ADD", [6, 1], [7], "AddOptions"),
            OperatorSpec("ASSIGN_VARIABLE", [5, 7], []),
        ],
        [0, 1, 2],
        [4, 1, 2],
    )
    init = SubgraphSpec(
        [
            TensorSpec("handle", np.int32, [], type_code=resource),
            TensorSpec("value", F32, [1, 4], np.array([[1, 2, 3, 4]], F32)),
        ],
        [
            OperatorSpec("VAR_HANDLE", [], [0], "VarHandleOptions", {"SharedName": "acc"}),
            OperatorSpec("ASSIGN_VARIABLE", [0, 1], []),
        ],
    )
    more = [_cond(), body, init]
    return write_model(tensors, operators, [1, 2], [3, 7], more_subgraphs=more)


def swap_loop() -> bytes:
    def loop() -> list[TensorSpec]:
        return [
            TensorSpec("i", F32, [1]),
            TensorSpec("p", F32, [1, 4]),
            TensorSpec("q", F32, [1, 4]),
            TensorSpec("n", F32, [1]),
        ]

    tensors = [
        TensorSpec("zero", F32, [1], np.array([0], F32)),
        TensorSpec("p", F32, [1, 4]),
        TensorSpec("q", F32, [1, 4]),
        TensorSpec("n", F32, [1]),
        TensorSpec("count", F32, [1]),
        TensorSpec("p_out", F32, [1, 4]),
        TensorSpec("q_out", F32, [1, 4]),
        TensorSpec("n_out", F32, [1]),
    ]
    cond = SubgraphSpec(
        [*loop(), TensorSpec("go", np.bool_, [1])],
        [OperatorSpec("LESS", [0, 3], [4])],
        [0, 1, 2, 3],
        [4],
    )
    body = SubgraphSpec(
        [
            *loop(),
            TensorSpec("one", F32, [1], np.array([1], F32)),
            TensorSpec("i1", F32, [1]),
            TensorSpec("shape", np.int32, [2], np.array([1, 4], np.int32)),
            TensorSpec("p1", F32, [1, 4]),
            TensorSpec("q1", F32, [1, 4]),
        ],
        [
            OperatorSpec("ADD", [0, 4], [5], "AddOptions"),
            OperatorSpec("RESHAPE", [2, 6], [7]),
            OperatorSpec("RESHAPE", [1, 6], [8]),
        ],
        [0, 1, 2, 3],
        [5, 7, 8, 3],
    )
    operators = [_while([0, 1, 2, 3], [4, 5, 6, 7], 1, 2)]
    return write_model(tensors, operators, [1, 2, 3], [4, 5, 6], more_subgraphs=[cond, body])


def scalar_loop() -> bytes:
    return _scalar_loop(F32)


def int32_loop() -> bytes:
    return _scalar_loop(np.int32)


def _scalar_loop(counter: type) -> bytes:
    """`scalar_loop` with its counter, bound and one of type `counter`."""

    def loop() -> list[TensorSpec]:
        return [
            TensorSpec("i", counter, []),
            TensorSpec("x", F32, [1, 4]),
            TensorSpec("n", counter, []),
        ]

    tensors = [
        TensorSpec("zero", counter, [], np.array(0, counter)),
        TensorSpec("x", F32, [1, 4]),
        TensorSpec("n", counter, []),
        TensorSpec("count", counter, []),
        TensorSpec("y", F32, [1, 4]),
        TensorSpec("n_out", counter, []),
    ]
    cond = SubgraphSpec(
        [*loop(), TensorSpec("go", np.bool_, [])],
        [OperatorSpec("LESS", [0, 2], [3])],
        [0, 1, 2],
        [3],
    )
    body = SubgraphSpec(
        [
            *loop(),
            TensorSpec("one", counter, [], np.array(1, counter)),
            TensorSpec("i1", counter, []),
            TensorSpec("axes", np.int32, [2], np.array([0, 1], np.int32)),
            TensorSpec("total", F32, []),
            TensorSpec("zero", F32, [], np.array(0, F32)),
            TensorSpec("positive", np.bool_, []),
            TensorSpec("x1", F32, [1, 4]),
        ],
        [
            OperatorSpec("ADD", [0, 3], [4], "AddOptions"),
            OperatorSpec("SUM", [1, 5], [6], "ReducerOptions", {"KeepDims": False}),
            OperatorSpec("GREATER", [6, 7], [8]),
            _if(8, [1], [9], 3, 4),
        ],
        [0, 1, 2],
        [4, 9, 2],
    )
    half = SubgraphSpec(
        [
            TensorSpec("a", F32, [1, 4]),
            TensorSpec("half", F32, [], np.array(0.5, F32)),
            TensorSpec("b", F32, [1, 4]),
        ],
        [OperatorSpec("MUL", [0, 1], [2], "MulOptions")],
        [0],
        [2],
    )
    double = SubgraphSpec(
        [TensorSpec("a", F32, [1, 4]), TensorSpec("b", F32, [1, 4])],
        [OperatorSpec("ADD", [0, 0], [1], "AddOptions")],
        [0],
        [1],
    )
    operators = [_while([0, 1, 2], [3, 4, 5], 1, 2)]
    more = [cond, body, half, double]
    return write_model(tensors, operators, [1, 2], [3, 4], more_subgraphs=more)


def while_changing_shape() -> bytes:
    """The body concatenates x with itself: its output x has 8 elements, the loop variable 4."""
    body = SubgraphSpec(
        [*_loop_tensors(), TensorSpec("x2", F32, [1, 8])],
        [OperatorSpec("CONCATENATION", [1, 1], [3], "ConcatenationOptions", {"Axis": 1})],
        [0, 1, 2],
        [0, 3, 2],
    )
    return _main_loop(body, [], [1, 4])


def unreferenced_subgraph() -> bytes:
    tensors = [TensorSpec("x", F32, [1, 4]), TensorSpec("y", F32, [1, 4])]
    spare = SubgraphSpec(
        [TensorSpec("a", F32, [1, 4]), TensorSpec("b", F32, [1, 4])],
        [OperatorSpec("RELU", [0], [1])],
        [0],
        [1],
    )
    operators = [OperatorSpec("RELU", [0], [1])]
    return write_model(tensors, operators, [0], [1], more_subgraphs=[spare])


def custom_in_branch() -> bytes:
    tensors = [
        TensorSpec("cond", np.bool_, [1]),
        TensorSpec("x", F32, [1, 4]),
        TensorSpec("y", F32, [1, 4]),
    ]
    then = SubgraphSpec(
        [TensorSpec("a", F32, [1, 4]), TensorSpec("b", F32, [1, 4])],
        [OperatorSpec("CUSTOM", [0], [1], custom_code="Mystery")],
        [0],
        [1],
    )
    other = SubgraphSpec(
        [TensorSpec("a", F32, [1, 4]), TensorSpec("b", F32, [1, 4])],
        [OperatorSpec("RELU", [0], [1])],
        [0],
        [1],
    )
    return write_model(tensors, [_if(0, [1], [2], 1, 2)], [0, 1], [2], more_subgraphs=[then, other])


MODELS = {
    "int8_if": int8_if,
    "float_if": float_if,
    "if_in_line": if_in_line,
    "float_while": float_while,
    "nested": nested,
    "variable_in_loop": variable_in_loop,
    "scalar_loop": scalar_loop,
    "int32_loop": int32_loop,
    "swap_loop": swap_loop,
}
