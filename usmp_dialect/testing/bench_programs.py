"""Generated programs for the speed benchmark of the whole `usmp` flow.

Used by benchmarks/pipeline_speed.py.

A program of N operator calls has N operator functions `@op0 ... @op{N-1}`, each with one
scratch buffer (`usmp.allocate`) and an `scf.for` loop that copies its input through the
scratch into its output, and a `@main` that chains them: `%input -> %t1 -> ... -> %tN`, each
intermediate a `usmp.allocate` in `@main` placed just before the call that writes it, and a
final `memref.copy %tN, %output`. So the program has 2 x N allocations (N scratch buffers and N
intermediates): 5,000 calls give 10,000 allocations. Buffer sizes are drawn from a seeded
generator, so the same arguments always give the same text.
"""

from __future__ import annotations

import random

__all__ = ["operator_chain"]


def _memref(size: int) -> str:
    return f"memref<{size}xi8>"


def operator_chain(calls: int, seed: int = 0) -> str:
    """The MLIR text of a program with `calls` operator calls (see the module doc)."""
    if calls < 1:
        raise ValueError("a program needs at least one operator call")
    rng = random.Random(seed)
    # sizes[0] is the input, sizes[i] the output of operator i - 1
    sizes = [rng.choice((64, 128, 256, 512, 1024, 2048, 4096)) for _ in range(calls + 1)]
    scratch = [rng.choice((32, 64, 128, 256, 512)) for _ in range(calls)]
    lines: list[str] = []
    for i in range(calls):
        in_type, out_type, s_type = _memref(sizes[i]), _memref(sizes[i + 1]), _memref(scratch[i])
        count = min(sizes[i], sizes[i + 1], scratch[i])
        lines += [
            f"func.func @op{i}(%in: {in_type}, %out: {out_type}) {{",
            f"  %scratch{i} = usmp.allocate : {s_type}",
            "  %c0 = arith.constant 0 : index",
            "  %c1 = arith.constant 1 : index",
            f"  %n = arith.constant {count} : index",
            "  scf.for %j = %c0 to %n step %c1 {",
            f"    %x = memref.load %in[%j] : {in_type}",
            f"    memref.store %x, %scratch{i}[%j] : {s_type}",
            f"    %y = memref.load %scratch{i}[%j] : {s_type}",
            f"    memref.store %y, %out[%j] : {out_type}",
            "  }",
            "  func.return",
            "}",
        ]
    lines.append(
        f"func.func @main(%input: {_memref(sizes[0])}, %output: {_memref(sizes[calls])}) {{"
    )
    previous = "%input"
    for i in range(calls):
        in_type, out_type = _memref(sizes[i]), _memref(sizes[i + 1])
        lines += [
            f"  %t{i + 1} = usmp.allocate : {out_type}",
            f"  func.call @op{i}({previous}, %t{i + 1}) : ({in_type}, {out_type}) -> ()",
        ]
        previous = f"%t{i + 1}"
    last = _memref(sizes[calls])
    lines += [
        f'  "memref.copy"({previous}, %output) : ({last}, {last}) -> ()',
        "  func.return",
        "}",
    ]
    return "\n".join(lines) + "\n"
