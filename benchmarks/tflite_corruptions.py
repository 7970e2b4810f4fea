"""Seeded corruptions of a `.tflite` file through TFLite Micro's loader and `usmp-opt`: how many
TFLM rejects, how many we reject, and that none TFLM rejects gets through and none ends in a
traceback (exit 2). The test (`test/frontends/tflite/test_verify.py`) checks 80 of them on the
import alone; this runs each through the whole `usmp-opt` pipeline to C.

Run by hand (not in CI), from the checkout with the virtualenv active:

    python benchmarks/tflite_corruptions.py                        # kws, 80 corruptions, seed 0
    python benchmarks/tflite_corruptions.py --count 200 --seed 1 --model examples/...tflite

Writes a Markdown summary to benchmarks/results/tflite_corruptions.md (or `--output`).
"""

from __future__ import annotations

import argparse
import collections
import subprocess
import sys
import tempfile
from pathlib import Path

from usmp_dialect.testing.corruptions import corruptions, tflm_accepts

ROOT = Path(__file__).resolve().parent.parent
KWS = ROOT / "examples" / "mlperf_tiny" / "kws_ref_model.tflite"
RESULTS = ROOT / "benchmarks" / "results" / "tflite_corruptions.md"
PIPELINE = "usmp-import-memref,convert-linalg-to-loops,usmp"
USMP_OPT = [sys.executable, "-m", "usmp_dialect.tools.usmp_opt"]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", type=Path, default=KWS)
    parser.add_argument("--count", type=int, default=80)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--output", type=Path, default=RESULTS)
    arguments = parser.parse_args()
    cases = corruptions(arguments.model.read_bytes(), arguments.count, arguments.seed)
    outcomes: collections.Counter[str] = collections.Counter()
    failures: list[str] = []
    with tempfile.TemporaryDirectory() as directory:
        paths = []
        for index, case in enumerate(cases):
            path = Path(directory) / f"corrupted{index:03d}.tflite"
            path.write_bytes(case.data)
            paths.append(path)
        accepted = tflm_accepts(paths)
        for case, path in zip(cases, paths, strict=True):
            output = path.with_suffix(".c")
            ran = subprocess.run(
                [*USMP_OPT, str(path), "-p", PIPELINE, "-t", "c", "-o", str(output)],
                capture_output=True,
                text=True,
                check=False,
            )
            one_line = len(ran.stderr.strip().splitlines()) == 1 and "Traceback" not in ran.stderr
            tflm = "TFLM accepts" if accepted[path] else "TFLM rejects"
            ours = {0: "we compile", 1: "we reject"}.get(ran.returncode, f"exit {ran.returncode}")
            outcomes[f"{tflm}, {ours}"] += 1
            bad = ran.returncode not in (0, 1) or (ran.returncode == 1 and not one_line)
            bad = bad or (not accepted[path] and ran.returncode != 1)
            bad = bad or (ran.returncode == 1 and (output.exists() or ran.stdout))
            if bad:
                failures.append(f"{case.name}: exit {ran.returncode}: {ran.stderr.strip()[-300:]}")
            print(f"{case.name}: {tflm}, {ours}", flush=True)
    lines = [
        f"# Corrupted `{arguments.model.name}` through TFLM's loader and `usmp-opt`",
        "",
        f"`python benchmarks/tflite_corruptions.py --count {arguments.count} --seed "
        f"{arguments.seed}`: {len(cases)} corruptions (changed offsets, vtable entries and "
        "lengths, union types, truncations), each through `usmp-opt -p '" + PIPELINE + "' -t c`.",
        "",
        "| outcome | files |",
        "| --- | ---: |",
        *(f"| {outcome} | {count} |" for outcome, count in sorted(outcomes.items())),
        "",
        f"Failures (TFLM rejects and we do not, exit 2, or more than one line): {len(failures)}",
        *(f"* {failure}" for failure in failures),
    ]
    arguments.output.write_text("\n".join(lines) + "\n")
    print("\n".join(lines))
    sys.exit(1 if failures else 0)


if __name__ == "__main__":
    main()
