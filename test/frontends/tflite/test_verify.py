"""The structural verification of `.tflite` flatbuffers (`frontends/tflite/verify.py`): valid
models pass; seeded corruptions of the MLPerf Tiny keyword-spotting model's structure (offsets,
vtables, lengths, truncations) that TensorFlow Lite Micro's loader rejects are rejected too,
with the one-line error, and no corruption gives anything but an import or that error."""

from __future__ import annotations

from pathlib import Path

import pytest

from usmp_dialect.frontends.errors import ModelImportError
from usmp_dialect.frontends.tflite import import_tflite
from usmp_dialect.frontends.tflite.verify import VerificationError, structure, verify_model
from usmp_dialect.testing import tflm
from usmp_dialect.testing.corruptions import corruptions, tflm_accepts
from usmp_dialect.testing.import_errors import assert_refused_in_one_line

ROOT = Path(__file__).resolve().parents[3]
MODELS = sorted((ROOT / "examples").rglob("*.tflite"))
KWS = ROOT / "examples" / "mlperf_tiny" / "kws_ref_model.tflite"
CORRUPTIONS = 80


@pytest.mark.parametrize("model", MODELS, ids=lambda path: path.name)
def test_valid_models_verify(model: Path) -> None:
    verify_model(model.read_bytes())


def test_out_of_bounds_offset_names_the_field() -> None:
    data = bytearray(KWS.read_bytes())
    data[36:40] = (len(data) * 2).to_bytes(4, "little")  # Model.operator_codes
    with pytest.raises(
        VerificationError, match=r"outside the file's .* \(at Model.OperatorCodes\)"
    ):
        verify_model(bytes(data))


def test_string_without_terminating_zero() -> None:
    data = bytearray(KWS.read_bytes())
    name = b"functional_1/"  # in the tensor names
    end = data.index(b"\x00", data.index(name))
    data[end] = ord("x")
    with pytest.raises(VerificationError, match="has no terminating zero"):
        verify_model(bytes(data))


def test_structure_lists_offsets_vtables_and_lengths() -> None:
    places = structure(KWS.read_bytes())
    assert places[0] == (0, 4)  # the root offset
    assert len(places) == len(set(places)) > 500


@pytest.mark.skipif(not tflm.available(), reason="needs tflite-micro")
def test_corruptions_that_tflm_rejects_are_rejected(tmp_path: Path) -> None:
    """80 seeded corruptions of kws: each one TFLM's loader rejects (or crashes on) is a
    `ModelImportError` here; the others import or are such an error, nothing else. The
    first rejected one also goes through `usmp-opt`: one line, exit 1, no output."""
    cases = corruptions(KWS.read_bytes(), CORRUPTIONS, seed=0)
    paths = []
    for index, case in enumerate(cases):
        path = tmp_path / f"corrupted{index:03d}.tflite"
        path.write_bytes(case.data)
        paths.append(path)
    accepted = tflm_accepts(paths)
    rejected_by_both = []
    for case, path in zip(cases, paths, strict=True):
        try:
            import_tflite(case.data, str(path))
        except ModelImportError as error:
            assert "\n" not in str(error)
            if not accepted[path]:
                rejected_by_both.append(path)
        else:
            assert accepted[path], f"TFLM rejects, we import: {case.name}"
    assert len(rejected_by_both) == sum(not verdict for verdict in accepted.values())
    assert len(rejected_by_both) >= CORRUPTIONS // 2  # the corpus does exercise the loader
    assert_refused_in_one_line(rejected_by_both[0], "")


@pytest.mark.parametrize("cut", [7, 25304, 53900])
def test_truncated_files_fail_in_one_line(cut: int, tmp_path: Path) -> None:
    path = tmp_path / "model.tflite"
    path.write_bytes(KWS.read_bytes()[:cut])
    expected = "not a TFLite model" if cut < 8 else "malformed or truncated TFLite file"
    assert_refused_in_one_line(path, expected)
