"""The model builders: IR that parses, verifies and lowers; a numpy reference that is right."""

from pathlib import Path

import numpy as np
import pytest
from xdsl.dialects import memref
from xdsl.dialects.builtin import ModuleOp
from xdsl.parser import Parser

from usmp_dialect.models import MODELS, build
from usmp_dialect.models.__main__ import main as models_main
from usmp_dialect.models.layers import (
    Conv2D,
    FullyConnected,
    GlobalAvgPool,
    Network,
    Requantize,
    folded_bias,
    quantize_multiplier,
    requantize,
    shift_table,
)
from usmp_dialect.models.reference import conv2d, dequantized_float_layer, run_network
from usmp_dialect.tools.usmp_opt import UsmpOptMain

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"

# Every model, at sizes small enough for CI (the image models shrunk by their options).
SMALL_MODELS: dict[str, dict[str, float]] = {
    "ad": {},
    "kws": {},
    "mobilenetv2": {"resolution": 32, "width_multiplier": 0.35},
    "resnet8": {},
    "vww": {"resolution": 32},
}

LOWERED_DIALECTS = {"builtin", "func", "scf", "arith", "memref", "math", "usmp"}


def _lower(module: ModuleOp, passes: str) -> ModuleOp:
    """Runs `passes` as usmp-opt does (verifying after each) on a copy of `module`."""
    driver = UsmpOptMain(args=["-p", passes])
    lowered = module.clone()
    driver.apply_passes(lowered)
    return lowered


def _op_names(module: ModuleOp) -> set[str]:
    return {op.name for op in module.walk()}


@pytest.fixture(scope="module", params=sorted(SMALL_MODELS))
def small_model(request: pytest.FixtureRequest):
    return build(request.param, seed=1, **SMALL_MODELS[request.param])


def test_every_model_has_a_small_configuration() -> None:
    assert sorted(SMALL_MODELS) == sorted(MODELS)


@pytest.fixture(scope="module")
def parsed(small_model) -> ModuleOp:
    """The model's IR parsed and verified by usmp-opt's context."""
    module = Parser(UsmpOptMain(args=[]).ctx, small_model.mlir).parse_module()
    module.verify()
    return module


def test_ir_imports_and_lowers_to_loops(parsed: ModuleOp) -> None:
    """`usmp-import-memref,convert-linalg-to-loops` leaves scf/arith/memref/func/usmp only:
    no linalg and no affine (every indexing map is a projection)."""
    module = _lower(parsed, "usmp-import-memref,convert-linalg-to-loops")
    names = _op_names(module)
    assert {name.split(".")[0] for name in names} <= LOWERED_DIALECTS, sorted(names)
    assert "scf.for" in names and "memref.load" in names
    assert not names & {"memref.alloc", "memref.dealloc", "memref.get_global"}
    assert {"usmp.allocate", "usmp.allocate_const"} <= names


def test_program_structure(small_model, parsed: ModuleOp) -> None:
    """main(input, output) allocates the activations and calls one function per layer."""
    network: Network = small_model.network
    functions = {op.sym_name.data: op for op in parsed.ops if op.name == "func.func"}
    main = functions.pop("main")
    assert [str(t) for t in main.function_type.inputs] == [
        f"memref<{'x'.join(map(str, shape))}xi8>"
        for shape in (small_model.input_shape, small_model.output_shape)
    ]
    calls = [op.callee.string_value() for op in main.walk() if op.name == "func.call"]
    assert calls == [layer.name for layer in network.layers]
    assert sorted(functions) == sorted(calls)
    allocs = [op for op in main.walk() if isinstance(op, memref.AllocOp)]
    assert len(allocs) == len(network.layers) - 1  # every activation but the output
    deallocs = [op for op in main.walk() if isinstance(op, memref.DeallocOp)]
    assert len(deallocs) == len(allocs)
    for layer in network.layers:
        body = list(functions[layer.name].walk())
        scratch = [op for op in body if isinstance(op, memref.AllocOp)]
        if isinstance(layer, Conv2D):
            assert len(scratch) == (2 if any(layer.padding) else 1)
        elif isinstance(layer, FullyConnected | GlobalAvgPool):
            assert len(scratch) == 1
        else:
            assert not scratch


@pytest.mark.parametrize("accumulator", ["row", "tensor"])
def test_convolution_accumulator_shapes(accumulator: str) -> None:
    """A convolution's int32 scratch holds one output row (default) or the whole output."""
    model = build("kws", accumulator=accumulator)
    module = Parser(UsmpOptMain(args=[]).ctx, model.mlir).parse_module()
    functions = {op.sym_name.data: op for op in module.ops if op.name == "func.func"}
    for layer in model.network.layers:
        if not isinstance(layer, Conv2D):
            continue
        _, height, width, channels = model.network.tensors[layer.output].shape
        allocs = [op for op in functions[layer.name].walk() if isinstance(op, memref.AllocOp)]
        shapes = [tuple(op.memref.type.get_shape()) for op in allocs]
        rows = 1 if accumulator == "row" else height
        assert (1, rows, width, channels) in shapes, layer.name
        loops = [op for op in functions[layer.name].walk() if op.name == "scf.for"]
        assert len(loops) == (1 if accumulator == "row" else 0)


def test_ir_weights_are_the_reference_weights(small_model, parsed: ModuleOp) -> None:
    """The constant data in the IR is exactly what the numpy reference computes with."""
    globals_ = {op.sym_name.data: op for op in parsed.ops if isinstance(op, memref.GlobalOp)}
    expected = {}
    for layer in small_model.network.layers:
        if isinstance(layer, Conv2D | FullyConnected):
            expected[f"{layer.name}_weights"] = layer.weights
            expected[f"{layer.name}_bias"] = folded_bias(layer)
            expected[f"{layer.name}_multiplier"] = layer.requantize.multiplier
            expected[f"{layer.name}_shift"] = shift_table(layer.requantize)
    assert sorted(globals_) == sorted(expected)
    for name, array in expected.items():
        values = np.array(globals_[name].initial_value.get_values())
        np.testing.assert_array_equal(values, array.ravel(), err_msg=name)


def test_reference_matches_float_computation_layer_by_layer(small_model) -> None:
    """Each int8 layer equals the float64 computation on the same (dequantised) inputs,
    rounded: at most half an output step away (ties and the 31-bit multiplier aside)."""
    network: Network = small_model.network
    values = run_network(network, small_model.random_input(seed=7))
    for layer in network.layers:
        exact = dequantized_float_layer(layer, network, values)
        params = getattr(layer, "requantize", Requantize(np.zeros(0), np.zeros(0), 0, -128, 127))
        expected = np.clip(exact, params.activation_min, params.activation_max)
        error = np.abs(values[layer.output].astype(np.float64) - expected)
        assert error.max() <= 0.5 + 1e-4, layer.name


def test_activations_use_the_int8_range(small_model) -> None:
    """Calibration keeps every layer alive: no tensor is constant (dead or saturated)."""
    values = run_network(small_model.network, small_model.random_input(seed=3))
    for name, array in values.items():
        assert len(np.unique(array)) > 1, name


def test_requantize_hand_computed() -> None:
    # multiplier / 2**shift == 0.5: round half up after scaling
    half = (1 << 30, 31)
    assert quantize_multiplier(0.5) == half
    values = np.array([100, 3, -3, -4, 5], dtype=np.int32)
    np.testing.assert_array_equal(requantize(values, *half), [50, 2, -1, -2, 3])
    # 0.75 == 3 * 2**30 / 2**32
    assert quantize_multiplier(0.75) == (3 << 29, 31)
    np.testing.assert_array_equal(requantize(np.array([4, -4, 2]), 3 << 29, 31), [3, -3, 2])


def test_conv2d_hand_computed() -> None:
    """3x3 input, 3x3 kernel of ones, SAME padding: each output is its neighbourhood sum."""
    x = np.arange(9, dtype=np.int8).reshape(1, 3, 3, 1) + 10  # 10..18, zero point 10
    layer = Conv2D(
        name="conv2d_0",
        input="input",
        output="output",
        weights=np.ones((1, 3, 3, 1), dtype=np.int8),
        bias=np.array([1], dtype=np.int32),
        stride=(1, 1),
        padding=(1, 1, 1, 1),
        input_zero_point=10,
        requantize=Requantize(
            np.array([1 << 30], dtype=np.int32), np.array([30], dtype=np.int32), -5, -128, 20
        ),
    )
    # centred input 0..8; neighbourhood sums + bias 1, times 1.0, minus 5, clamped at 20
    sums = np.array([[8, 15, 12], [21, 36, 27], [20, 33, 24]]) + 1
    expected = np.minimum(sums - 5, 20)
    np.testing.assert_array_equal(conv2d(layer, x)[0, :, :, 0], expected)


def test_strided_depthwise_hand_computed() -> None:
    x = np.arange(16, dtype=np.int8).reshape(1, 4, 4, 1)
    layer = Conv2D(
        name="depthwise_conv2d_0",
        input="input",
        output="output",
        weights=np.array([[1, 0, 0], [0, 0, 0], [0, 0, 2]], dtype=np.int8).reshape(3, 3, 1),
        bias=np.zeros(1, dtype=np.int32),
        stride=(2, 2),
        padding=(0, 1, 0, 1),  # TensorFlow SAME for 4 -> 2 with a 3x3 kernel
        input_zero_point=0,
        requantize=Requantize(
            np.array([1 << 30], dtype=np.int32), np.array([30], dtype=np.int32), 0, -128, 127
        ),
        depthwise=True,
    )
    # out[i, j] = x[2i, 2j] + 2 * x[2i + 2, 2j + 2] (zero beyond the edge)
    expected = np.array([[0 + 2 * 10, 2 + 0], [8 + 0, 10 + 0]])
    np.testing.assert_array_equal(conv2d(layer, x)[0, :, :, 0], expected)


def test_true_shapes() -> None:
    shapes = {name: build(name) for name in ("kws", "ad", "resnet8")}
    assert shapes["kws"].input_shape == (1, 49, 10, 1)
    assert shapes["kws"].output_shape == (1, 12)
    first = shapes["kws"].network.layers[0]
    assert first.weights.shape == (64, 10, 4, 1) and first.stride == (2, 2)
    assert shapes["kws"].network.tensors[first.output].shape == (1, 25, 5, 64)
    assert shapes["ad"].input_shape == shapes["ad"].output_shape == (1, 640)
    widths = [layer.weights.shape[0] for layer in shapes["ad"].network.layers]
    assert widths == [128] * 4 + [8] + [128] * 4 + [640]
    assert shapes["resnet8"].input_shape == (1, 32, 32, 3)
    channels = sorted({t.shape[-1] for t in shapes["resnet8"].network.tensors.values()})
    assert channels == [3, 10, 16, 32, 64]


def test_deterministic_by_seed() -> None:
    assert build("kws", seed=4).mlir == build("kws", seed=4).mlir
    assert build("kws", seed=4).mlir != build("kws", seed=5).mlir


def test_reference_rejects_wrong_input() -> None:
    model = build("ad")
    with pytest.raises(ValueError, match="input must be int8"):
        model.reference(np.zeros(model.input_shape, dtype=np.float32))


def test_unknown_model() -> None:
    with pytest.raises(ValueError, match="unknown model 'lenet'"):
        build("lenet")


def test_command_line(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    target = tmp_path / "kws.mlir"
    assert models_main(["kws", "-o", str(target), "--seed", "2"]) == 0
    assert target.read_text() == build("kws", seed=2).mlir
    assert models_main(["--list"]) == 0
    assert sorted(line.split(":")[0] for line in capsys.readouterr().out.splitlines()) == sorted(
        MODELS
    )
    assert models_main(["lenet"]) == 1
    assert "unknown model 'lenet'" in capsys.readouterr().err
    assert models_main(["kws", "--accumulator", "tensor", "-o", str(target)]) == 0
    assert target.read_text() == build("kws", accumulator="tensor").mlir
    assert models_main(["kws", "--resolution", "32"]) == 1
    assert "model 'kws' has no option 'resolution'" in capsys.readouterr().err


@pytest.mark.parametrize("name", ["ad", "kws", "resnet8", "vww"])
def test_examples_are_up_to_date(name: str) -> None:
    """examples/NAME.mlir is `python -m usmp_dialect.models NAME` (seed 0)."""
    assert (EXAMPLES / f"{name}.mlir").read_text() == build(name).mlir
