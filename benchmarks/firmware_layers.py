"""Instructions per operator of one example model on the emulated Cortex-M4F.

Run by hand, from the checkout with the virtualenv active (the tools of
`scripts/install_firmware_tools.sh`):

    python benchmarks/firmware_layers.py kws            # kws_ref_model, m4f
    python benchmarks/firmware_layers.py vww --cpu m3

Lowers the model as `benchmarks/firmware.py` does, then wraps every operator call of
`<p>_run` in the generated C with SysTick reads (the harness's `usmp_ticks`, QEMU
`-icount shift=0`, 40-instruction resolution) and prints, per call, the instructions, the
multiply-accumulates of the operator (convolutions, fully connected layers, from the TFLite
graph in order) and their ratio. The timing calls cost a few dozen instructions per
operator; the total is therefore a little above `benchmarks/firmware.py`'s.
"""

from __future__ import annotations

import argparse
import re
import sys
import tempfile
from dataclasses import replace
from pathlib import Path

import numpy as np

ROOT = Path(__file__).parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "benchmarks"))

from firmware import model_path  # noqa: E402

from usmp_dialect.frontends.tflite.reader import read_graph  # noqa: E402
from usmp_dialect.testing import firmware  # noqa: E402

PROBE = """
uint64_t usmp_ticks(void);
uint32_t usmp_ticks_to_instructions(uint64_t ticks);
void usmp_write(const char* text);
static void usmp_layer(const char* name, uint64_t ticks) {
  char text[96];
  char digits[24];
  size_t length = 0, count = 0;
  uint32_t value = usmp_ticks_to_instructions(ticks);
  text[length++] = '#';
  text[length++] = ' ';
  text[length++] = 'L';
  text[length++] = ' ';
  while (*name && length < 60) text[length++] = *name++;
  text[length++] = ' ';
  do {
    digits[count++] = (char)('0' + (int)(value % 10u));
    value /= 10u;
  } while (value);
  while (count) text[length++] = digits[--count];
  text[length++] = '\\n';
  text[length] = 0;
  usmp_write(text);
}
"""


def operator_macs(name: str) -> list[tuple[str, int]]:
    path = model_path(name)
    graph = read_graph(path.read_bytes(), str(path))
    rows: list[tuple[str, int]] = []
    for index, op in enumerate(graph.operators):
        output = graph.tensors[op.outputs[0]].shape
        macs = 0
        if op.opcode in ("CONV_2D", "DEPTHWISE_CONV_2D"):
            filters = graph.tensors[op.inputs[1]].shape
            taps = filters[1] * filters[2] * (filters[3] if op.opcode == "CONV_2D" else 1)
            macs = int(np.prod(output)) * taps
        elif op.opcode == "FULLY_CONNECTED":
            macs = int(np.prod(output)) * graph.tensors[op.inputs[1]].shape[-1]
        rows.append((f"{op.opcode.lower()}_{index}", macs))
    return rows


def instrument(source: str, prefix: str) -> str:
    """Wraps every `name(...);` statement of `<prefix>_run` in tick reads."""
    start = source.index(f"int32_t {prefix}_run(")
    end = source.index("\n}\n", start)
    body = source[start:end]
    call = re.compile(r"^(  )([a-z_0-9]+)\((.*)\);$", re.M)

    def wrap(match: re.Match[str]) -> str:
        indent, callee = match.group(1), match.group(2)
        return (
            f"{indent}{{ uint64_t usmp_t0 = usmp_ticks(); {match.group(0).strip()} "
            f'usmp_layer("{callee}", usmp_ticks() - usmp_t0); }}'
        )

    body = call.sub(wrap, body)
    prototype = re.search(r"^static (?:USMP_NOINLINE )?void ", source, re.M)
    assert prototype is not None, "no operator function"
    first = prototype.start()
    return source[:first] + PROBE + source[first:start] + body + source[end:]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("model")
    parser.add_argument("--cpu", default="m4f")
    args = parser.parse_args()
    model = firmware.model_from_file(model_path(args.model))
    model = replace(model, source=instrument(model.source, model.prefix))
    macs = dict(operator_macs(args.model))
    with tempfile.TemporaryDirectory() as directory:
        built = firmware.build_firmware(model, Path(directory), firmware.CPUS[args.cpu])
        output = firmware.run_firmware(built)
    total = total_macs = 0
    print("| operator | instructions | MACs | per MAC |\n|---|---:|---:|---:|")
    for line in output.splitlines():
        if not line.startswith("# L "):
            continue
        _, _, callee, count = line.split()
        instructions = int(count)
        mac = macs.get(callee, 0)
        total += instructions
        total_macs += mac
        ratio = f"{instructions / mac:.2f}" if mac else "-"
        print(f"| {callee} | {instructions:,} | {mac:,} | {ratio} |")
    print(f"| total | {total:,} | {total_macs:,} | {total / max(total_macs, 1):.2f} |")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
