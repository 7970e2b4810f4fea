"""The reference runtimes `usmp-validate` and the tests compare our C with: TensorFlow Lite
Micro for `.tflite` (LiteRT's reference kernels for the models TFLM refuses, e.g. hybrid ones,
or does not compute as TensorFlow Lite does: tensors of dynamic shape), onnxruntime for
`.onnx`. Each is an optional package of the `validate` extra, imported only
when a model of its kind is checked."""

from __future__ import annotations

import importlib.metadata
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from importlib import import_module
from pathlib import Path

import numpy as np

from usmp_dialect.validation import tflm

EXTRA = "pip install 'usmp-dialect[validate]'"

Runner = Callable[[Sequence[np.ndarray]], list[np.ndarray]]
"""Runs the model once on its inputs (in model order) and returns its outputs."""


class OracleMissing(Exception):
    """A package that checking this kind of model needs is not installed."""


@dataclass(frozen=True)
class Oracle:
    """A loaded reference runtime: its name (with the package version), a runner, and why it
    was chosen when it is not the first choice."""

    name: str
    run: Runner
    note: str = ""

    @property
    def is_tflm(self) -> bool:
        return self.name.startswith("TFLM")


# model file extension -> (module, PyPI distribution) that must be importable to check it:
# the frontend's reader and the reference runtime.
_NEEDS: dict[str, tuple[tuple[str, str], ...]] = {
    "tflite": (("tflite", "tflite"), ("tflite_micro.python.tflite_micro.runtime", "tflite-micro")),
    "onnx": (("onnx", "onnx"), ("onnxruntime", "onnxruntime")),
}


def check_installed(extension: str) -> None:
    """Raises `OracleMissing` naming the first missing package for models of `extension`."""
    for module, distribution in _NEEDS.get(extension, ()):
        try:
            import_module(module)
        except ImportError:
            raise OracleMissing(
                f"checking a .{extension} model needs {distribution}, which is not installed: "
                f"{EXTRA}"
            ) from None


def _version(distribution: str) -> str:
    try:
        return importlib.metadata.version(distribution)
    except importlib.metadata.PackageNotFoundError:
        return "unknown version"


def tflm_runner(model: bytes) -> Runner:
    """TFLM's interpreter for `model` (raises `tflm.ModelRefused`)."""
    import tflite

    interpreter = tflm.load(model)
    root = tflite.Model.GetRootAsModel(model, 0)
    graph = root.Subgraphs(0)
    output_count = graph.OutputsLength()
    stateful = root.SubgraphsLength() > 1 or any(
        graph.Tensors(i).IsVariable() for i in range(graph.TensorsLength())
    )
    if stateful:
        # Each input runs from the model's initial state, as each run of the compiled C does
        # (a fresh interpreter: TFLM's reset() does not rerun CALL_ONCE).
        return lambda inputs: tflm.run_with(tflm.load(model), inputs, output_count)
    return lambda inputs: tflm.run_with(interpreter, inputs, output_count)


def litert_runner(model: bytes) -> Runner:
    """LiteRT with TensorFlow Lite's reference kernels (`BUILTIN_REF`, the kernels TFLM's are
    ported from; the default optimised ones sum in other orders)."""
    try:
        from ai_edge_litert.interpreter import Interpreter, OpResolverType
    except ImportError:
        raise OracleMissing(
            f"TFLM refuses this model and LiteRT (ai-edge-litert) is not installed: {EXTRA}"
        ) from None
    interpreter = Interpreter(
        model_content=model, experimental_op_resolver_type=OpResolverType.BUILTIN_REF
    )
    interpreter.allocate_tensors()

    def run(inputs: Sequence[np.ndarray]) -> list[np.ndarray]:
        for detail, array in zip(interpreter.get_input_details(), inputs, strict=True):
            interpreter.set_tensor(detail["index"], array)
        interpreter.invoke()
        return [interpreter.get_tensor(d["index"]).copy() for d in interpreter.get_output_details()]

    return run


def litert_outputs(model: bytes, inputs: Sequence[np.ndarray]) -> list[np.ndarray]:
    """LiteRT's reference kernels on `inputs` (for operators TFLite Micro lacks, e.g. RANGE)."""
    return litert_runner(model)(inputs)


def onnxruntime_runner(model: bytes) -> Runner:
    """onnxruntime on the CPU, one thread, inputs fed by position in the graph's order."""
    import onnxruntime

    options = onnxruntime.SessionOptions()
    options.intra_op_num_threads = 1
    options.log_severity_level = 3
    session = onnxruntime.InferenceSession(model, options, providers=["CPUExecutionProvider"])
    names = [value.name for value in session.get_inputs()]
    return lambda inputs: list(session.run(None, dict(zip(names, inputs, strict=True))))


def onnxruntime_outputs(model: bytes, inputs: Sequence[np.ndarray]) -> list[np.ndarray]:
    """onnxruntime's outputs for `inputs`."""
    return onnxruntime_runner(model)(inputs)


def _has_dynamic_shapes(model: bytes) -> bool:
    """Whether a tensor of any subgraph has a shape signature dynamic beyond its batch."""
    import tflite

    from usmp_dialect.frontends.tflite.reader import dynamic_signature

    root = tflite.Model.GetRootAsModel(model, 0)
    graphs = (root.Subgraphs(s) for s in range(root.SubgraphsLength()))
    return any(
        dynamic_signature(graph.Tensors(t)) is not None
        for graph in graphs
        for t in range(graph.TensorsLength())
    )


def load(model: Path) -> Oracle:
    """The reference runtime for `model`, by its extension: TFLM, LiteRT where TFLM refuses
    the model or cannot compute it (tensors of dynamic shape), onnxruntime."""
    extension = model.suffix.lstrip(".")
    check_installed(extension)
    data = model.read_bytes()
    if extension == "onnx":
        return Oracle(f"onnxruntime {_version('onnxruntime')}", onnxruntime_runner(data))
    if _has_dynamic_shapes(data):
        return Oracle(
            f"LiteRT {_version('ai-edge-litert')} reference kernels",
            litert_runner(data),
            note="the model has tensors of dynamic shape (a TensorList written in a loop), "
            "with which TFLM's outputs differ from TensorFlow Lite's",
        )
    try:
        return Oracle(f"TFLM (tflite-micro {_version('tflite-micro')})", tflm_runner(data))
    except tflm.ModelRefused as refusal:
        return Oracle(
            f"LiteRT {_version('ai-edge-litert')} reference kernels",
            litert_runner(data),
            note=f"TFLM refuses the model: {refusal}",
        )
