"""Models through the whole pipeline: plan, print C, compile, run, compare with numpy exactly."""

import shutil
import subprocess
from io import StringIO
from pathlib import Path

import numpy as np
import pytest
from xdsl.parser import Parser

from usmp_dialect.models import Model, build
from usmp_dialect.testing.harness import STRICT_FLAGS
from usmp_dialect.tools.usmp_opt import UsmpOptMain

PIPELINE = "usmp-import-memref,convert-linalg-to-loops,usmp"

HARNESS = r"""
#include <stdio.h>
#include <stdlib.h>
#include <stdint.h>
#include "usmp_default.h"

/* model INPUT OUTPUT INPUT_BYTES OUTPUT_BYTES: runs the model on raw int8 files */
int main(int argc, char** argv) {
  if (argc != 5) return 3;
  long input_bytes = atol(argv[3]), output_bytes = atol(argv[4]);
  int8_t* input = malloc(input_bytes);
  int8_t* output = malloc(output_bytes);
  FILE* file = fopen(argv[1], "rb");
  if (!file || fread(input, 1, input_bytes, file) != (size_t)input_bytes) return 2;
  fclose(file);
  struct usmp_default_inputs inputs = { input };
  struct usmp_default_outputs outputs = { output };
  int32_t status = usmp_default_run(&inputs, &outputs);
  file = fopen(argv[2], "wb");
  fwrite(output, 1, output_bytes, file);
  fclose(file);
  return status;
}
"""


def _compile(model: Model, directory: Path) -> Path:
    """Runs the pipeline once, prints the C source and header, compiles them with a harness."""
    driver = UsmpOptMain(args=["-p", PIPELINE])
    module = Parser(driver.ctx, model.mlir).parse_module()
    driver.apply_passes(module)
    for target, name in (("c", "model.c"), ("c-header", "usmp_default.h")):
        text = StringIO()
        driver.available_targets[target]()().emit(driver.ctx, module, text)
        (directory / name).write_text(text.getvalue())
    (directory / "harness.c").write_text(HARNESS)
    binary = directory / "model"
    subprocess.run(
        [
            *("gcc", "-O1", *STRICT_FLAGS, "-c", str(directory / "model.c")),
            *("-o", str(directory / "model.o")),
        ],
        check=True,
    )
    subprocess.run(
        [
            *("gcc", "-O1", "-std=c11", "-Wall", "-Wextra", "-Werror", "-o", str(binary)),
            *(str(directory / "model.o"), str(directory / "harness.c")),
        ],
        check=True,
    )
    return binary


@pytest.mark.skipif(shutil.which("gcc") is None, reason="needs gcc")
# Between them every layer kind: padded, strided, depthwise and pointwise convolutions, residual
# add, average pooling, fully connected.
@pytest.mark.parametrize(
    ("name", "accumulator"),
    [("ad", "row"), ("kws", "row"), ("kws", "tensor"), ("resnet8", "row")],
)
def test_generated_c_is_bit_exact(name: str, accumulator: str, tmp_path: Path) -> None:
    model = build(name, seed=2, accumulator=accumulator)
    binary = _compile(model, tmp_path)
    output_bytes = int(np.prod(model.output_shape))
    for seed in range(2):
        x = model.random_input(seed)
        x.tofile(tmp_path / "input.bin")
        subprocess.run(
            [
                *(str(binary), str(tmp_path / "input.bin"), str(tmp_path / "output.bin")),
                *(str(x.size), str(output_bytes)),
            ],
            check=True,
        )
        got = np.fromfile(tmp_path / "output.bin", dtype=np.int8).reshape(model.output_shape)
        np.testing.assert_array_equal(got, model.reference(x))
