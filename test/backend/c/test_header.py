"""The self-describing header (SPEC §7, §14) on real models: an application written only
against the macros (`<P>_INPUT_<FIELD>_SIZE`, `_ELEMENTS`, `_RANK`, `_SHAPE`, `_DTYPE`,
`_SCALE`, `_ZERO_POINT`, the counts and pool totals) compiles under the strict warning set,
its values are the `.tflite` file's as LiteRT's interpreter reads them, and the model it runs
computes what TensorFlow Lite Micro computes. Every identifier in the C and the header of the
nine MLPerf Tiny models has at most 63 characters, and the interface is plain data."""

from __future__ import annotations

import hashlib
import json
import re
import shutil
import subprocess
from pathlib import Path

import numpy as np
import pytest

from usmp_dialect.backend.c.program import build_interface, interface_dict, scale_literal
from usmp_dialect.testing import tflm
from usmp_dialect.testing.harness import STRICT_FLAGS
from usmp_dialect.validation.host import PREFIX, generate_c

ROOT = Path(__file__).resolve().parents[3]
MODELS = sorted((ROOT / "examples" / "mlperf_tiny").glob("*.tflite"))
KWS = ROOT / "examples" / "mlperf_tiny" / "kws_ref_model.tflite"
P = PREFIX.upper()

needs_gcc = pytest.mark.skipif(shutil.which("gcc") is None, reason="gcc is not installed")
needs_tflm = pytest.mark.skipif(not tflm.available(), reason="tflite-micro is not installed")


def _struct_fields(header: str, struct: str) -> list[str]:
    match = re.search(rf"struct {struct} {{(.*?)}};", header, re.DOTALL)
    assert match is not None, f"no struct {struct}"
    return re.findall(r"void\* (\w+);", match.group(1))


def _litert_details(model: Path) -> tuple[list[dict], list[dict]]:
    from ai_edge_litert.interpreter import Interpreter

    interpreter = Interpreter(model_path=str(model))
    return interpreter.get_input_details(), interpreter.get_output_details()


def _pattern(count: int) -> np.ndarray:
    """The input the C application writes: `(i * 37) % 256 - 128`."""
    return ((np.arange(count, dtype=np.int64) * 37) % 256 - 128).astype(np.int8)


def _application(inputs: list[str], outputs: list[str]) -> str:
    """A C program using only the header's macros: buffers sized by `_ELEMENTS` of `_DTYPE`
    (checked against `_SIZE`), every macro printed, the model run on a pattern input and the
    output bytes printed."""
    lines = [
        f'#include "{PREFIX}.h"',
        "#include <stdio.h>",
        "#include <stdint.h>",
        "",
    ]
    for kind, fields in (("INPUT", inputs), ("OUTPUT", outputs)):
        for field in fields:
            stem = f"{P}_{kind}_{field.upper()}"
            lines += [
                f"static {stem}_DTYPE {field}_buffer[{stem}_ELEMENTS];",
                f'_Static_assert(sizeof({field}_buffer) == {stem}_SIZE, "{stem}_SIZE");',
            ]
    lines += ["", "int main(void) {"]
    lines.append(f"  struct {PREFIX}_inputs inputs;")
    lines.append(f"  struct {PREFIX}_outputs outputs;")
    lines.append(
        f'  printf("counts %d %d sizes %ld %ld\\n", {P}_INPUTS_COUNT, {P}_OUTPUTS_COUNT, '
        f"(long){P}_WORKSPACE_SIZE, (long){P}_CONSTANTS_SIZE);"
    )
    for kind, fields in (("INPUT", inputs), ("OUTPUT", outputs)):
        struct = "inputs" if kind == "INPUT" else "outputs"
        for field in fields:
            stem = f"{P}_{kind}_{field.upper()}"
            lines += [
                "  {",
                f"    static const int32_t shape[{stem}_RANK] = {stem}_SHAPE;",
                f'    printf("{kind} {field} %ld %ld %d", (long){stem}_SIZE, '
                f"(long){stem}_ELEMENTS, {stem}_RANK);",
                f'    for (int d = 0; d < {stem}_RANK; ++d) printf(" %ld", (long)shape[d]);',
                f'    printf(" scale %.9g zero %ld\\n", (double){stem}_SCALE, '
                f"(long){stem}_ZERO_POINT);",
                "  }",
                f"  {struct}.{field} = {field}_buffer;",
            ]
    for field in inputs:
        stem = f"{P}_INPUT_{field.upper()}"
        lines += [
            f"  for (long i = 0; i < {stem}_ELEMENTS; ++i) {{",
            f"    {field}_buffer[i] = ({stem}_DTYPE)((i * 37) % 256 - 128);",
            "  }",
        ]
    lines.append(f"  if ({PREFIX}_run(&inputs, &outputs) != 0) return 1;")
    for field in outputs:
        stem = f"{P}_OUTPUT_{field.upper()}"
        lines += [
            f'  printf("bytes {field}");',
            f'  for (long i = 0; i < {stem}_ELEMENTS; ++i) printf(" %d", {field}_buffer[i]);',
            '  printf("\\n");',
        ]
    lines += ["  return 0;", "}", ""]
    return "\n".join(lines)


@needs_gcc
@needs_tflm
def test_kws_application_uses_the_macros(tmp_path: Path) -> None:
    source = generate_c(KWS, tmp_path)
    header = (tmp_path / f"{PREFIX}.h").read_text()
    inputs = _struct_fields(header, f"{PREFIX}_inputs")
    outputs = _struct_fields(header, f"{PREFIX}_outputs")
    application = tmp_path / "application.c"
    application.write_text(_application(inputs, outputs))
    executable = tmp_path / "application"
    command = ["gcc", *STRICT_FLAGS, "-O1", "-I", str(tmp_path), str(source), str(application)]
    subprocess.run([*command, "-o", str(executable), "-lm"], check=True)
    printed = subprocess.run(
        [str(executable)], capture_output=True, text=True, check=True
    ).stdout.splitlines()

    input_details, output_details = _litert_details(KWS)
    counts = printed[0].split()
    assert counts[1:3] == [str(len(input_details)), str(len(output_details))]
    assert int(counts[4]) == 5696  # the planned workspace, kws streamed (README, SPEC)
    assert int(counts[5]) > 0
    described = {line.split()[1]: line.split() for line in printed[1:] if "scale" in line}
    for kind, fields, details in (
        ("INPUT", inputs, input_details),
        ("OUTPUT", outputs, output_details),
    ):
        for field, detail in zip(fields, details, strict=True):
            words = described[field]
            assert words[0] == kind
            size, elements, rank = map(int, words[2:5])
            shape = [int(word) for word in words[5 : 5 + rank]]
            assert shape == list(detail["shape"])
            assert elements == int(np.prod(detail["shape"]))
            assert size == elements * np.dtype(detail["dtype"]).itemsize
            scale, zero_point = detail["quantization"]
            assert np.float32(float(words[-3])) == np.float32(scale)
            assert int(words[-1]) == zero_point

    # The buffers the macros sized hold what TFLM computes on the same input.
    (detail,) = input_details
    value = _pattern(int(np.prod(detail["shape"]))).reshape(detail["shape"])
    expected = tflm.run(KWS.read_bytes(), [value], len(output_details))
    ours = [line.split()[2:] for line in printed if line.startswith("bytes ")]
    for got, want in zip(ours, expected, strict=True):
        assert [int(word) for word in got] == want.reshape(-1).tolist()


def test_kws_interface_as_plain_data() -> None:
    from usmp_dialect.frontends.tflite.importer import import_tflite

    data = KWS.read_bytes()
    module = import_tflite(data, str(KWS))
    interface = build_interface(module, "kws", "main")
    plain = json.loads(json.dumps(interface_dict(interface)))
    assert plain["model"] == {
        "name": "kws_ref_model",
        "source": "kws_ref_model.tflite",
        "sha256": hashlib.sha256(data).hexdigest(),
    }
    input_details, output_details = _litert_details(KWS)
    for entries, details in ((plain["inputs"], input_details), (plain["outputs"], output_details)):
        for entry, detail in zip(entries, details, strict=True):
            assert entry["tensor"] == detail["name"]
            assert entry["shape"] == list(detail["shape"])
            assert entry["dtype"] == np.dtype(detail["dtype"]).name
            assert entry["c_type"] == "int8_t"
            assert entry["size_bytes"] == entry["elements"] * np.dtype(detail["dtype"]).itemsize
            assert np.float32(entry["scale"]) == np.float32(detail["quantization"][0])
            assert entry["zero_point"] == detail["quantization"][1]
            assert entry["pool"] is None and entry["offset"] is None


@pytest.mark.parametrize("scale", [0.58470290899276733, 3.90625e-03, 1e-10, 123456.789, 2.0])
def test_scale_literal_round_trips_the_float32(scale: float) -> None:
    literal = scale_literal(scale)
    assert literal.endswith("f")
    assert np.float32(float(literal[:-1])) == np.float32(scale)


_IDENTIFIER = re.compile(r"\b[A-Za-z_][A-Za-z0-9_]*\b")
_COMMENTS = re.compile(r"/\*.*?\*/|//[^\n]*", re.DOTALL)


@pytest.mark.parametrize("model", MODELS, ids=lambda path: path.stem)
def test_mlperf_tiny_identifiers_fit_c(model: Path, tmp_path: Path) -> None:
    """C11 guarantees 63 significant characters in an identifier: no longer one, and (so the
    names stay readable) no generated identifier from a model tensor beyond that either."""
    source = generate_c(model, tmp_path)
    for path in (source, tmp_path / f"{PREFIX}.h"):
        code = _COMMENTS.sub(" ", path.read_text())
        longest = max(_IDENTIFIER.findall(code), key=len)
        assert len(longest) <= 63, f"{path.name}: {longest}"
