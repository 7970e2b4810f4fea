"""Writes an `.mlir` program whose buffers have the live intervals of a minimalloc CSV.

    python make_interval_program.py problem.csv > program.mlir

Every buffer is a `usmp.allocate` in `@main`, written at its `lower` time and read at its
`upper` time; at equal times reads come first, so the half-open intervals `[lower, upper)` of
the CSV give exactly the conflicts of the program. Used to hand the planner of `usmp-opt` a
problem it cannot solve optimally within a tiny time limit.
"""

from __future__ import annotations

import csv
import sys
from pathlib import Path


def interval_program(csv_text: str) -> str:
    rows = list(csv.DictReader(csv_text.splitlines()))
    memrefs = {row["id"]: f"memref<{row['size']}xi8>" for row in rows}
    lines = [
        "func.func @main() {",
        "  %c0 = arith.constant 0 : index",
        "  %v = arith.constant 1 : i8",
    ]
    lines += [f"  %b{name} = usmp.allocate : {memref}" for name, memref in memrefs.items()]
    events: list[tuple[int, int, str]] = []
    for row in rows:
        events.append((int(row["lower"]), 1, row["id"]))  # write: the buffer starts
        events.append((int(row["upper"]), 0, row["id"]))  # read: the buffer ends
    for _, starts, name in sorted(events, key=lambda event: (event[0], event[1], int(event[2]))):
        if starts:
            lines.append(f"  memref.store %v, %b{name}[%c0] : {memrefs[name]}")
        else:
            lines.append(f"  %r{name} = memref.load %b{name}[%c0] : {memrefs[name]}")
    lines += ["  func.return", "}"]
    return "\n".join(lines) + "\n"


if __name__ == "__main__":
    sys.stdout.write(interval_program(Path(sys.argv[1]).read_text()))
