"""Every unsupported construct of a model in one message (SPEC §9).

The importers scan the whole graph before building any IR and collect a `Finding` per
unsupported operator and per activation tensor of a type no kernel computes with; `report`
groups them by kind, so one run tells the user everything the model needs, e.g.
`model.tflite: unsupported: operator SVDF (operators 3, 7), activation type int16 (tensors
'x', 'y' of operators 1, 2)`.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from usmp_dialect.frontends.errors import ModelImportError


@dataclass(frozen=True)
class Finding:
    """One unsupported construct: its kind (`operator SVDF`, `activation type int16`), the
    operator (or node) where it is, and for a type the tensor that has it."""

    kind: str
    operator: int | None  # None: a model input or output no operator touches
    operator_name: str = ""  # ONNX node name, shown after the index
    tensor: str | None = None
    hint: str = ""  # what to do instead, after the locations


def _plural(word: str, count: int) -> str:
    return word if count == 1 else f"{word}s"


def _located(findings: list[Finding], unit: str) -> str:
    """`kind (operators 3, 7)` or `kind (tensors 'x', 'y' of operators 1, 2)`."""
    operators: dict[int, str] = {}
    for finding in findings:
        if finding.operator is not None:
            operators.setdefault(finding.operator, finding.operator_name)
    indices = ", ".join(
        f"{index} '{name}'" if name else str(index) for index, name in sorted(operators.items())
    )
    where = f"{_plural(unit, len(operators))} {indices}" if operators else ""
    tensors = list(dict.fromkeys(f.tensor for f in findings if f.tensor is not None))
    if tensors:
        named = ", ".join(f"'{tensor}'" for tensor in tensors)
        where = f"{_plural('tensor', len(tensors))} {named}" + (f" of {where}" if where else "")
    hint = next((finding.hint for finding in findings if finding.hint), "")
    return f"{findings[0].kind} ({where}{'; ' + hint if hint else ''})"


def report(path: str, findings: Iterable[Finding], unit: str = "operator") -> None:
    """Raises one `ModelImportError` naming every finding, grouped by kind in the order the
    kinds were first found; does nothing when there is none. `unit` names what the indices
    count (`operator` for TFLite, `node` for ONNX)."""
    kinds: dict[str, list[Finding]] = {}
    for finding in findings:
        kinds.setdefault(finding.kind, []).append(finding)
    if kinds:
        listed = ", ".join(_located(group, unit) for group in kinds.values())
        raise ModelImportError(f"{path}: unsupported: {listed}")
