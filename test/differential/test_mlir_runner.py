"""Generated programs through upstream MLIR: planned with `usmp` and `convert-pool-to-memref`,
lowered by LLVM's `mlir-opt` and run by `mlir-runner`, each planner's build prints what the
no_reuse build (no buffer shares bytes) prints. Independent of our C printer; a fixed batch of
U1 and U3 programs (U4's inputs live inside the pool, which the upstream interface does not
expose), with internal and external, workspace and constant pools (an external constant pool
is filled from its `@<pool>_data` global)."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import replace
from io import StringIO

import pytest
from xdsl.dialects.builtin import ModuleOp
from xdsl.printer import Printer

from usmp_dialect.testing.generator import GeneratedProgram, GeneratorConfig, generate_program
from usmp_dialect.testing.harness import (
    REFERENCE_ALGORITHM,
    parse,
    pipeline_context,
    planner_algorithms,
    rotate,
)
from usmp_dialect.testing.mlir_runner import (
    SKIP_REASON,
    entry_signature,
    mlir_opt_path,
    mlir_runner_path,
    parse_module,
    run_entry,
)

pytestmark = pytest.mark.skipif(
    mlir_opt_path() is None or mlir_runner_path() is None, reason=SKIP_REASON
)

BATCH_SEEDS = tuple(range(300, 306))
BATCH_CONFIG = GeneratorConfig(main_steps=(2, 4), max_operators=2, use_cases=("U1", "U3"))
ENTRY = "model"
"""The generated entry `@main` is renamed: the runner's driver is `@main`."""


def program(seed: int) -> GeneratedProgram:
    generated = generate_program(seed, BATCH_CONFIG)
    text = generated.text.replace("func.func @main(", f"func.func @{ENTRY}(")
    return replace(generated, text=text)


def upstream_text(generated: GeneratedProgram, algorithm: str) -> str:
    """The program planned with `algorithm` and converted to upstream MLIR, printed."""
    from usmp_dialect.passes.convert_pool_to_memref import ConvertPoolToMemrefPass
    from usmp_dialect.passes.usmp import UsmpPass

    module: ModuleOp = parse(generated)
    ctx = pipeline_context()
    UsmpPass(algorithm=algorithm, entry=ENTRY, time_limit=2.0).apply(ctx, module)
    ConvertPoolToMemrefPass(entry=ENTRY).apply(ctx, module)
    module.verify()
    output = StringIO()
    Printer(stream=output).print_op(module)
    return output.getvalue()


def run(generated: GeneratedProgram, algorithm: str) -> str:
    text = upstream_text(generated, algorithm)
    printed = len(generated.inputs) + len(generated.outputs)
    return run_entry(text, ENTRY, entry_signature(parse_module(text), ENTRY, printed))


@pytest.fixture(scope="module")
def batch() -> Iterator[list[GeneratedProgram]]:
    yield [program(seed) for seed in BATCH_SEEDS]


def test_batch_covers_pool_kinds(batch: list[GeneratedProgram]) -> None:
    assert {p.use_case for p in batch} == {"U1", "U3"}
    pools = [pool for p in batch for pool in p.pools]
    assert any(not pool.internal and pool.kind == "workspace" for pool in pools)
    assert any(not pool.internal and pool.kind == "constant" for pool in pools)
    assert any(pool.internal for pool in pools)


@pytest.mark.parametrize("index", range(len(BATCH_SEEDS)))
def test_planned_program_runs_like_the_unshared_one(
    batch: list[GeneratedProgram], index: int
) -> None:
    generated = batch[index]
    reference = run(generated, REFERENCE_ALGORITHM)
    assert reference.strip(), "the driver printed nothing"
    for algorithm in rotate(planner_algorithms(), index, 2):
        assert run(generated, algorithm) == reference, (generated.seed, algorithm)
