"""The instruction cost model of fused row streaming (`usmp_dialect/graph/stream_cost.py`)
against measured instructions on the emulated Cortex-M4F.

Run by hand, from the checkout with the virtualenv active, after two runs of
`benchmarks/firmware.py` (QEMU `-icount`, exact):

    python benchmarks/firmware.py --models kws,str_ww,vww --flags=--fuse=none \\
        --save-json none.json --output none.md
    python benchmarks/firmware.py --models kws,str_ww,vww --save-json rows.json --output rows.md
    python benchmarks/stream_cost.py --unfused none.json --fused rows.json

Per model: the groups the import chooses (no size hint), their shifted bytes and row calls,
the instructions the model predicts they add, and the measured difference.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

ROOT = Path(__file__).parents[1]
sys.path.insert(0, str(ROOT))

from usmp_dialect.frontends.tflite import ops  # noqa: E402, F401  (registers the handlers)
from usmp_dialect.frontends.tflite.importer import TfliteImporter  # noqa: E402
from usmp_dialect.frontends.tflite.reader import read_graph  # noqa: E402
from usmp_dialect.frontends.tflite.streaming import stream_graph  # noqa: E402
from usmp_dialect.graph.selection import choose_stream_groups  # noqa: E402
from usmp_dialect.graph.stream_cost import group_cost  # noqa: E402

MODELS = {"kws": "kws_ref_model", "vww": "vww_96_int8", "str_ww": "str_ww_ref_model"}


def model_path(name: str) -> Path:
    """The MLPerf Tiny model `benchmarks/firmware.py` calls `name`."""
    return ROOT / "examples" / "mlperf_tiny" / f"{MODELS.get(name, name)}.tflite"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--unfused", type=Path, required=True, help="firmware.py JSON, --fuse=none")
    parser.add_argument("--fused", type=Path, required=True, help="firmware.py JSON, default")
    arguments = parser.parse_args()
    unfused = json.loads(arguments.unfused.read_text())
    fused = json.loads(arguments.fused.read_text())
    print("| model | groups | shifted bytes | row calls | predicted added | measured added |")
    print("| --- | --- | ---: | ---: | ---: | ---: |")
    for key in sorted(set(unfused) & set(fused)):
        name = unfused[key]["model"]
        path = model_path(name)
        graph = read_graph(path.read_bytes(), str(path))
        stream = stream_graph(TfliteImporter(graph))
        groups = choose_stream_groups(stream).groups
        costs = [group_cost(stream, group.operators) for group in groups]
        names = ", ".join(
            f"{stream.operators[g.operators[0]].name} .. {stream.operators[g.operators[-1]].name}"
            for g in groups
        )
        before, after = unfused[key]["instructions"], fused[key]["instructions"]
        print(
            f"| {name} | {names} | {sum(c.shifted_bytes for c in costs):,} | "
            f"{sum(c.row_calls for c in costs):,} | {sum(c.instructions for c in costs):,} | "
            f"{after - before:,} ({before:,} -> {after:,}) |"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
