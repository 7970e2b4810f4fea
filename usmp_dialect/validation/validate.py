"""The check behind `usmp-validate`: a model's generated C against a reference runtime.

`validate` compiles the model with the README's pipeline (`usmp-opt MODEL -p
'usmp-import-memref,convert-linalg-to-loops,usmp' -t c`, `-t c-header`), builds it on the host
with the C compiler, runs it and the model's reference runtime (`oracles.load`) on the same
inputs (seeded random ones, or the user's arrays), and compares every output over all inputs:
integer outputs must be equal bit for bit; float outputs within `tolerance` of the largest
reference magnitude (the largest absolute difference divided by the largest absolute
reference value, over all inputs). It also plans the model both ways (inputs and outputs
outside and inside the workspace) and, when the reference is TFLM, reads TFLM's arena.

Everything a user can get wrong (an unreadable model, an unsupported operator, a missing
package or compiler, inputs of the wrong shape) is a `ValidationError` with one line.
"""

from __future__ import annotations

import json
import math
import os
import shutil
import tempfile
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from usmp_dialect.validation import host, oracles, tflm

DEFAULT_INPUTS = 10
DEFAULT_SEED = 0
DEFAULT_TOLERANCE = 1e-5
MODEL_EXTENSIONS = ("tflite", "onnx")


class ValidationError(Exception):
    """A user error (one line): the model, the inputs or the environment."""


@dataclass(frozen=True)
class OutputCheck:
    """One output compared over every input: how many values differ, the largest absolute
    difference and the largest absolute reference value."""

    name: str
    dtype: np.dtype
    shape: tuple[int, ...]
    values: int
    differing: int
    max_abs_error: float
    reference_magnitude: float
    tolerance: float
    problem: str = ""
    """Why the outputs could not be compared at all (e.g. the reference's shape differs)."""

    @property
    def integer(self) -> bool:
        """Compared bit for bit: integer and bool outputs."""
        return self.dtype.kind in "iub"

    @property
    def max_rel_error(self) -> float:
        """The largest absolute difference relative to the largest reference magnitude."""
        if self.reference_magnitude > 0:
            return self.max_abs_error / self.reference_magnitude
        return 0.0 if self.max_abs_error == 0 else math.inf

    @property
    def passed(self) -> bool:
        if self.problem:
            return False
        if self.integer:
            return self.differing == 0
        return self.max_rel_error <= self.tolerance

    def line(self) -> str:
        shape = "x".join(str(extent) for extent in self.shape) or "scalar"
        head = f"output {self.name} ({self.dtype.name} {shape}): "
        if self.problem:
            return head + f"{self.problem}: FAIL"
        if self.integer:
            if self.differing == 0:
                return head + "bit-exact"
            return head + (
                f"{self.differing} of {self.values} values differ "
                f"(max difference {self.max_abs_error:g}): FAIL"
            )
        verdict = "pass" if self.passed else "FAIL"
        return head + (
            f"max abs error {self.max_abs_error:.3g}, max rel error {self.max_rel_error:.3g}: "
            f"{verdict} (tolerance {self.tolerance:g})"
        )


def compare_outputs(
    ports: Sequence[host.Port],
    ours: Sequence[Sequence[np.ndarray]],
    theirs: Sequence[Sequence[np.ndarray]],
    tolerance: float,
) -> list[OutputCheck]:
    """One check per output of `ports`; `ours[i]`/`theirs[i]` are the outputs for input i."""
    checks = []
    for position, port in enumerate(ports):
        values = differing = 0
        max_abs_error = reference_magnitude = 0.0
        problem = ""
        for mine_all, reference_all in zip(ours, theirs, strict=True):
            if position >= len(reference_all):
                problem = f"the reference has only {len(reference_all)} outputs"
                break
            mine, reference = np.asarray(mine_all[position]), np.asarray(reference_all[position])
            if mine.size != reference.size:
                problem = f"{mine.size} values, the reference has {reference.size}"
                break
            mine = mine.reshape(-1).astype(np.float64)
            reference = reference.reshape(-1).astype(np.float64)
            same_nan = np.isnan(mine) & np.isnan(reference)
            error = np.where(same_nan, 0.0, np.abs(mine - reference))
            values += mine.size
            differing += int(np.count_nonzero(error != 0))
            # np.max, not max(): a NaN difference must stay NaN (and fail).
            max_abs_error = float(np.max(error, initial=max_abs_error))
            finite = reference[np.isfinite(reference)]
            reference_magnitude = max(
                reference_magnitude, float(np.max(np.abs(finite), initial=0.0))
            )
        checks.append(
            OutputCheck(
                port.name,
                port.dtype,
                port.shape,
                values,
                differing,
                max_abs_error,
                reference_magnitude,
                tolerance,
                problem,
            )
        )
    return checks


@dataclass(frozen=True)
class Workspace:
    """Our planned workspace with the inputs and outputs outside it and inside it (U4), and
    TFLM's arena (head: planned tensors, inputs and outputs included; total: head plus the
    persistent tail) when TFLM is the reference."""

    outside_bytes: int
    inside_bytes: int
    arena: tflm.Arena | None

    def line(self) -> str:
        text = (
            f"workspace: {self.outside_bytes:,} B (inputs and outputs outside), "
            f"{self.inside_bytes:,} B (inside)"
        )
        if self.arena is not None:
            text += (
                f"; TFLM arena: head {self.arena.head_bytes:,} B, "
                f"total {self.arena.total_bytes:,} B"
            )
        return text


@dataclass(frozen=True)
class Validation:
    """The outcome of `validate`."""

    model: Path
    reference: str
    reference_note: str
    inputs: str
    checks: tuple[OutputCheck, ...]
    workspace: Workspace

    @property
    def passed(self) -> bool:
        return all(check.passed for check in self.checks)

    def lines(self) -> list[str]:
        """What `usmp-validate` prints: the setting, one line per output, the workspace and
        the verdict."""
        reference = self.reference + (f" ({self.reference_note})" if self.reference_note else "")
        failed = sum(not check.passed for check in self.checks)
        verdict = (
            "PASS"
            if self.passed
            else f"FAIL: {failed} of {len(self.checks)} outputs differ from the reference"
        )
        return [
            f"{self.model.name}: {self.inputs}; reference {reference}",
            *(check.line() for check in self.checks),
            self.workspace.line(),
            verdict,
        ]


def find_compiler(cc: str | None = None) -> str:
    """The C compiler: `cc`, else `$CC`, else gcc or cc on the PATH."""
    wanted = cc or os.environ.get("CC")
    if wanted:
        found = shutil.which(wanted)
        if found is None:
            raise ValidationError(f"the C compiler '{wanted}' (CC) is not found")
        return found
    for name in ("gcc", "cc"):
        found = shutil.which(name)
        if found is not None:
            return found
    raise ValidationError("no C compiler found: install gcc or set CC")


def _given_samples(
    ports: Sequence[host.Port], given: Mapping[str, np.ndarray]
) -> list[list[np.ndarray]]:
    """The user's arrays as samples (one list of inputs per sample). An array of the input's
    shape is one sample; one with an extra leading axis holds several."""
    names = [port.name for port in ports]
    unknown = sorted(set(given) - set(names))
    if unknown:
        raise ValidationError(
            f"--input {unknown[0]}: the model has no input of that name (inputs: "
            f"{', '.join(names)})"
        )
    missing = [name for name in names if name not in given]
    if missing:
        raise ValidationError(f"--input: no values for input {missing[0]} (give every input)")
    columns = []
    for port in ports:
        array = np.asarray(given[port.name])
        if array.shape == port.shape:
            array = array[np.newaxis]
        elif array.shape[1:] != port.shape:
            expected = "x".join(str(extent) for extent in port.shape)
            raise ValidationError(
                f"--input {port.name}: shape {'x'.join(map(str, array.shape))}, the input is "
                f"{expected} (or N x {expected} for N inputs)"
            )
        columns.append(_as_dtype(array, port))
    counts = {len(column) for column in columns}
    if len(counts) != 1:
        raise ValidationError("--input: the files hold different numbers of inputs")
    return [list(sample) for sample in zip(*columns, strict=True)]


def _as_dtype(array: np.ndarray, port: host.Port) -> np.ndarray:
    if array.dtype == port.dtype:
        return array
    if not np.can_cast(array.dtype, port.dtype, "same_kind"):
        raise ValidationError(
            f"--input {port.name}: {array.dtype} values, the input is {port.dtype}"
        )
    if port.dtype.kind in "iu" and array.size:
        limits = np.iinfo(port.dtype)
        if array.min() < limits.min or array.max() > limits.max:
            raise ValidationError(f"--input {port.name}: values outside the range of {port.dtype}")
    return array.astype(port.dtype)


def _build_error(error: host.ModelBuildError) -> ValidationError:
    """usmp-opt's error line as ours (its prefix dropped), or the compiler's gist."""
    return ValidationError(error.diagnostic.removeprefix("usmp-opt: error: "))


def validate(
    model: Path,
    inputs: int = DEFAULT_INPUTS,
    seed: int = DEFAULT_SEED,
    given: Mapping[str, np.ndarray] | None = None,
    workspace_io: bool = False,
    tolerance: float = DEFAULT_TOLERANCE,
    cc: str | None = None,
    log: Callable[[str], None] = lambda message: None,
) -> Validation:
    """Compiles `model`'s C, runs it and the reference on `inputs` seeded random inputs (or the
    `given` arrays, by input name: one input, or several along a leading axis) and compares
    the outputs. `workspace_io`: the C built with its inputs and outputs in the workspace."""
    extension = model.suffix.lstrip(".")
    if extension not in MODEL_EXTENSIONS:
        raise ValidationError(f"{model}: not a .tflite or .onnx model")
    try:
        with model.open("rb"):
            pass
    except OSError as error:
        raise ValidationError(f"cannot read model file '{model}': {error.strerror}") from None
    if inputs < 1:
        raise ValidationError("--inputs must be at least 1")
    try:
        oracles.check_installed(extension)
    except oracles.OracleMissing as error:
        raise ValidationError(str(error)) from None
    compiler = find_compiler(cc)
    started = time.perf_counter()

    def step(message: str) -> None:
        log(f"[{time.perf_counter() - started:6.1f} s] {message}")

    with tempfile.TemporaryDirectory(prefix="usmp-validate-") as scratch:
        directory = Path(scratch)
        step(f"compiling {model} with usmp-opt and {compiler}")
        built_report = directory / "plan_built.json"
        try:
            compiled = host.compile_model(
                model, directory, workspace_io=workspace_io, cc=compiler, report=built_report
            )
        except host.ModelBuildError as error:
            raise _build_error(error) from None
        if given:
            samples = _given_samples(compiled.inputs, given)
            described = f"{len(samples)} input{'s' if len(samples) != 1 else ''} from .npy files"
        else:
            rng = np.random.default_rng(seed)
            samples = [tflm.random_inputs(compiled.inputs, rng) for _ in range(inputs)]
            described = f"{inputs} random input{'s' if inputs != 1 else ''} (seed {seed})"
        step("loading the reference runtime")
        try:
            oracle = oracles.load(model)
        except oracles.OracleMissing as error:
            raise ValidationError(str(error)) from None
        ours, theirs = [], []
        for index, sample in enumerate(samples):
            step(f"input {index}: our C, then {oracle.name}")
            try:
                outputs, _ = compiled.run(sample)
            except host.ModelBuildError as error:
                message = f"input {index}: {error.diagnostic}"
                raise ValidationError(message) from None
            ours.append(outputs)
            theirs.append(oracle.run(sample))
        checks = compare_outputs(compiled.outputs, ours, theirs, tolerance)
        step("planning the other way round (inputs and outputs inside/outside)")
        built = host.workspace_bytes(json.loads(built_report.read_text()))
        try:
            other = host.workspace_bytes(host.plan(model, directory, not workspace_io))
        except host.ModelBuildError as error:
            raise _build_error(error) from None
        outside, inside = (other, built) if workspace_io else (built, other)
        arena = None
        if oracle.is_tflm:
            step("reading TFLM's arena")
            arena = tflm.arena(model)
        step("done")
    return Validation(
        model,
        oracle.name,
        oracle.note,
        described,
        tuple(checks),
        Workspace(outside, inside, arena),
    )
