"""Seeded corruptions of a `.tflite` flatbuffer's structure, and TFLite Micro's verdict on
each: the corpus of the verifier's mutation test (`test/frontends/tflite/test_verify.py`).

Each corruption changes one structural field the verifier reads (an offset, a vtable entry,
a vector or string length, a union's type; `verify.structure`) — to random bytes, an extreme
value, a nearby value, or with one bit flipped — or truncates the file. TFLM may crash on
such files, so its loader runs in a child process that reports file by file and is restarted
after a crash.
"""

from __future__ import annotations

import random
import struct
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

from usmp_dialect.frontends.tflite.verify import structure
from usmp_dialect.validation.tflm import ARENA_SIZE_BYTES

_FORMATS = {1: "<B", 2: "<H", 4: "<I"}


@dataclass(frozen=True)
class Corruption:
    name: str  # what was changed, e.g. "offset at byte 28 := 4294967295"
    data: bytes


def corruptions(data: bytes, count: int, seed: int = 0, truncations: int = 8) -> list[Corruption]:
    """`count` corruptions of the valid model `data`: `count - truncations` changed
    structural fields, then `truncations` cuts spread over the file."""
    rng = random.Random(seed)
    places = structure(data)
    result: list[Corruption] = []
    while len(result) < count - truncations:
        position, size = rng.choice(places)
        (value,) = struct.unpack_from(_FORMATS[size], data, position)
        limit = 2 ** (8 * size)
        mode = rng.choice(("random", "extreme", "nearby", "bit"))
        if mode == "random":
            changed = rng.randrange(limit)
        elif mode == "extreme":
            changed = rng.choice((0, limit - 1, limit // 2 - 1, limit // 2, limit - 4))
        elif mode == "nearby":
            changed = (value + rng.choice((-1, 1)) * rng.randint(1, 64)) % limit
        else:
            changed = value ^ (1 << rng.randrange(8 * size))
        if changed == value:
            continue
        mutated = bytearray(data)
        struct.pack_into(_FORMATS[size], mutated, position, changed)
        name = f"{mode}: {size}-byte field at byte {position} {value} -> {changed}"
        result.append(Corruption(name, bytes(mutated)))
    for cut in range(1, truncations + 1):
        length = len(data) * cut // (truncations + 1)
        result.append(Corruption(f"truncated to {length} bytes", data[:length]))
    return result


_TFLM_SCRIPT = """
import sys
from tflite_micro.python.tflite_micro import runtime
for path in sys.argv[2:]:
    print("start", path, flush=True)
    try:
        runtime.Interpreter.from_bytes(open(path, "rb").read(), arena_size=int(sys.argv[1]))
    except Exception:
        print("rejected", path, flush=True)
    else:
        print("accepted", path, flush=True)
"""


def tflm_accepts(paths: list[Path]) -> dict[Path, bool]:
    """Whether TFLM's loader (`Interpreter.from_bytes`) accepts each model file; a crash of
    the loader counts as a rejection."""
    verdicts: dict[Path, bool] = {}
    remaining = list(paths)
    while remaining:
        ran = subprocess.run(
            [sys.executable, "-c", _TFLM_SCRIPT, str(ARENA_SIZE_BYTES), *map(str, remaining)],
            capture_output=True,
            text=True,
            check=False,
        )
        started: Path | None = None
        for line in ran.stdout.splitlines():
            verdict, _, name = line.partition(" ")
            if verdict == "start":
                started = Path(name)
            elif verdict in ("accepted", "rejected"):
                verdicts[Path(name)] = verdict == "accepted"
                started = None
        if started is not None:  # the loader crashed on this file
            verdicts[started] = False
        elif ran.returncode != 0 and len(verdicts) < len(paths):
            raise RuntimeError(f"TFLM's loader failed: {ran.stderr[-500:]}")
        remaining = [path for path in paths if path not in verdicts]
    return verdicts
