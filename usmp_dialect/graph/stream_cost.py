"""The instructions fused row streaming adds to a group (plain data): the cost side of the
choice in `graph.selection`.

A fused group computes every row its operators compute unfused, with the same inner loops
(`kernels.streaming` calls the operators' own kernels on row windows), so its multiply-adds
cost what they cost before. What it adds is counted on the group's steps (`graph.streaming
.schedule`):

* **shifts**: before a layer computes a row it moves the rows of its line buffer that later
  windows still read to the buffer's start (`memmove`): `shifted_bytes` per inference;
* **row calls**: one call of a row function per computed row (its arguments, the subview
  offsets, the prologue and the loop setup of the kernel's outer loops), and one reduction
  step per row a global reducer adds up;
* **row functions**: the distinct window shapes (the borders' partial windows, the interior):
  code size, not instructions; reported, not priced.

`instructions` weighs them with constants measured on the emulated Cortex-M4F
(`benchmarks/firmware.py`, QEMU `-icount`); DESIGN "Fused row streaming" quotes predicted
against measured added instructions. The estimate orders choices (among selections of equal
peak the cheaper one wins); it is not a promise of speed.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from usmp_dialect.graph.streaming import Compute, Reduce, Schedule, Shift, StreamGraph, schedule

SHIFT_INSTRUCTIONS_PER_BYTE = 0.25
"""newlib's word-aligned `memmove` on the M4: about one load and one store per 4 bytes, plus
loop control, unrolled by 4 words."""
ROW_CALL_INSTRUCTIONS = 900
"""One call of a row function: arguments and subview offsets, prologue and epilogue, and the
setup of the kernel's loop nests (a nest per column segment, the requantisation constants of
each channel block) that an unfused call pays once per row segment. Measured: kws's group adds
239,600 instructions for 225 calls and 58,880 shifted bytes, vww's 159,480 for 168 calls and
52,992 bytes (about 1,000 and 870 per call once the shifts are taken off)."""
REDUCE_STEP_INSTRUCTIONS = 8
"""One reduction step beyond the adds themselves (the unfused reducer sums the same values)."""


@dataclass(frozen=True)
class GroupCost:
    """What fused row streaming adds to a group, counted on its steps."""

    shifted_bytes: int
    row_calls: int
    reduce_steps: int
    row_functions: int

    @property
    def instructions(self) -> int:
        return round(
            SHIFT_INSTRUCTIONS_PER_BYTE * self.shifted_bytes
            + ROW_CALL_INSTRUCTIONS * self.row_calls
            + REDUCE_STEP_INSTRUCTIONS * self.reduce_steps
        )


def group_cost(graph: StreamGraph, group: Sequence[int], plan: Schedule | None = None) -> GroupCost:
    """The added work of fusing `group` (operator indices, a chain in program order); `plan`:
    its schedule, when already computed."""
    shifted = calls = reduces = 0
    shapes: set[tuple[int, int, int, int]] = set()
    plan = schedule(graph, group) if plan is None else plan
    for step in plan.steps:
        if isinstance(step, Shift):
            tensor = plan.buffer_tensors[step.layer - 1]  # the line buffer's tensor
            shifted += step.rows * graph.tensors[tensor].row_bytes
        elif isinstance(step, Compute):
            calls += 1
            shapes.add((step.layer, step.top_pad, step.rows, step.out_rows))
        elif isinstance(step, Reduce):
            reduces += 1
    return GroupCost(shifted, calls, reduces, len(shapes))


__all__ = [
    "ROW_CALL_INSTRUCTIONS",
    "SHIFT_INSTRUCTIONS_PER_BYTE",
    "GroupCost",
    "group_cost",
]
