"""The middle end is safe: after planning, no buffer's contents are clobbered before their last
use. Checked by running the planned program on an abstract machine independent of the analysis
(every loop body runs twice, each scf.if once per branch choice): a write to a buffer destroys
every other buffer overlapping it in the same pool, and reading a destroyed buffer is an error.
"""

from __future__ import annotations

import random
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

import pytest
from xdsl.context import Context
from xdsl.dialects import arith, func, memref, scf
from xdsl.dialects.builtin import IndexType, IntegerAttr, MemRefType, ModuleOp, i8
from xdsl.ir import Block, Operation, Region, SSAValue
from xdsl.parser import Parser

from usmp_dialect.analysis.buffer_info import ALIAS_OPS, buffer_names, extract_buffer_info
from usmp_dialect.dialects.usmp import AllocateOp, AllocationOp
from usmp_dialect.passes.plan import UsmpPlanPass
from usmp_dialect.planning import ALGORITHMS

TEST_DIR = Path(__file__).parent


def make_context() -> Context:
    from xdsl.universe import Universe

    context = Context()
    for name, factory in Universe.get_multiverse().all_dialects.items():
        context.register_dialect(name, factory)
    return context


def parse(text: str) -> ModuleOp:
    return Parser(make_context(), text).parse_module()


class Clobbered(AssertionError):
    pass


@dataclass
class Machine:
    """Per buffer: None (never written), True (holds its value) or False (destroyed)."""

    extent: dict[str, tuple[str, int, int]]
    state: dict[str, bool | None] = field(default_factory=dict)
    then_first: bool = True

    def write(self, name: str) -> None:
        pool, start, end = self.extent[name]
        for other, (other_pool, other_start, other_end) in self.extent.items():
            if (
                other != name
                and other_pool == pool
                and other_start < end
                and start < other_end
                and self.state.get(other)
            ):
                self.state[other] = False
        self.state[name] = True

    def read(self, name: str, where: Operation) -> None:
        if self.state.get(name) is False:
            raise Clobbered(f"buffer '{name}' read after being overwritten, at {where.name}")


def run(module: ModuleOp, entry: str, then_first: bool) -> Machine:
    names = buffer_names(module)
    extent: dict[str, tuple[str, int, int]] = {}
    inputs: list[str] = []
    outputs: list[str] = []
    for op, name in names.items():
        if op.pool is None or op.offset is None:
            continue
        offset = op.offset.value.data
        extent[name] = (op.pool.root_reference.data, offset, offset + op.size_bytes)
        kind = op.attributes.get("usmp.io")
        if kind is not None and getattr(kind, "data", None) == "input":
            inputs.append(name)
        if kind is not None and getattr(kind, "data", None) == "output":
            outputs.append(name)
    machine = Machine(extent, then_first=then_first)
    for name in inputs:
        machine.write(name)  # the application writes every input before the run
    functions = {f.sym_name.data: f for f in module.ops if isinstance(f, func.FuncOp)}
    seen_allocations: set[AllocationOp] = set()

    def execute_block(block: Block, env: dict[SSAValue, str]) -> None:
        for op in block.ops:
            execute(op, env)

    def execute_region(region: Region, env: dict[SSAValue, str]) -> None:
        for block in region.blocks:
            execute_block(block, env)

    def execute(op: Operation, env: dict[SSAValue, str]) -> None:
        if isinstance(op, AllocationOp):
            name = names[op]
            env[op.memref] = name
            seen_allocations.add(op)
            if isinstance(op, AllocateOp):
                if op.attributes.get("usmp.io") is None:
                    machine.state[name] = None  # fresh contents on every execution
            elif name not in machine.state:
                machine.write(name)  # constants hold their data from the start
            return
        if isinstance(op, func.CallOp):
            callee = functions[op.callee.root_reference.data]
            if callee.is_declaration:
                for operand in op.operands:
                    if operand in env:
                        machine.read(env[operand], op)
                        machine.write(env[operand])
                return
            callee_env = {
                arg: env[operand]
                for operand, arg in zip(op.operands, callee.args, strict=False)
                if operand in env
            }
            execute_region(callee.body, callee_env)
            return
        if op.name in ALIAS_OPS and op.operands and op.operands[0] in env:
            for result in op.results:
                env[result] = env[op.operands[0]]
            return
        if isinstance(op, memref.LoadOp) and op.memref in env:
            machine.read(env[op.memref], op)
            return
        if isinstance(op, memref.StoreOp) and op.memref in env:
            machine.write(env[op.memref])
            return
        if isinstance(op, scf.IfOp):
            branch = op.true_region if machine.then_first else op.false_region
            execute_region(branch, env)
            return
        for operand in op.operands:
            if operand in env:
                machine.read(env[operand], op)
        if op.regions:
            for _ in range(2):  # a second iteration exposes values carried across iterations
                for region in op.regions:
                    execute_region(region, env)

    execute_region(functions[entry].body, {})
    for name in outputs:
        machine.read(name, functions[entry])  # the application reads outputs after the run
    return machine


def planned(text: str, algorithm: str) -> ModuleOp:
    module = parse(text)
    UsmpPlanPass(algorithm=algorithm, time_limit=0.5).apply(make_context(), module)
    module.verify()
    return module


def assert_safe(module: ModuleOp) -> None:
    for then_first in (True, False):
        run(module, "main", then_first)


def chunks(path: Path) -> Iterator[str]:
    for chunk in path.read_text().split("// -----"):
        if "func.func @main" in chunk and "memref.get_global" not in chunk:
            yield chunk


def lit_programs() -> list[tuple[str, str]]:
    programs: list[tuple[str, str]] = []
    for path in sorted((TEST_DIR / "tvm").glob("*.mlir")):
        programs.append((path.name, path.read_text()))
    for name in ("usmp-extract-buffer-info.mlir", "usmp-plan.mlir"):
        for index, chunk in enumerate(chunks(TEST_DIR / name)):
            programs.append((f"{name}#{index}", chunk))
    return programs


FAST_ALGORITHMS = [
    a for a in ("greedy_by_size", "greedy_by_conflicts", "hill_climb", "auto") if a in ALGORITHMS
]


def random_program(seed: int) -> str:
    """A random program: operators with scratch buffers, loops, branches and views, called
    in a random order on random main-level tensors (some of them twice)."""
    rng = random.Random(seed)
    lines = ["pool.workspace @sram", "pool.workspace @dram {size_hint_bytes = 256 : i64}"]
    operators: list[str] = []
    for index in range(rng.randint(2, 5)):
        name = f"op{index}"
        operators.append(name)
        body = [
            f"func.func @{name}(%in: memref<64xi8>, %out: memref<64xi8>, %flag: i1) {{",
            "  %c0 = arith.constant 0 : index",
            "  %c1 = arith.constant 1 : index",
            "  %c4 = arith.constant 4 : index",
        ]
        scratch = [f"s{index}_{k}" for k in range(rng.randint(0, 3))]
        for s in scratch:
            body.append(f"  %{s} = usmp.allocate : memref<{rng.choice([16, 32, 64])}xi8>")
        current = "in"
        for step, s in enumerate([*scratch, "out"]):
            kind = rng.choice(["loop", "nested", "if", "view", "plain"])
            src = f"memref<{size(current, body)}xi8>"
            if kind == "loop":
                body += [
                    f"  scf.for %i{step} = %c0 to %c4 step %c1 {{",
                    f"    %v{step} = memref.load %{current}[%i{step}] : {src}",
                    f"    memref.store %v{step}, %{s}[%i{step}] : memref<{size(s, body)}xi8>",
                    "  }",
                ]
            elif kind == "nested":
                body += [
                    f"  scf.for %i{step} = %c0 to %c4 step %c1 {{",
                    f"    %t{step} = usmp.allocate : memref<8xi8>",
                    f"    scf.for %j{step} = %c0 to %c4 step %c1 {{",
                    f"      %v{step} = memref.load %{current}[%j{step}] : {src}",
                    f"      memref.store %v{step}, %t{step}[%j{step}] : memref<8xi8>",
                    "    }",
                    f"    %w{step} = memref.load %t{step}[%i{step}] : memref<8xi8>",
                    f"    memref.store %w{step}, %{s}[%i{step}] : memref<{size(s, body)}xi8>",
                    "  }",
                ]
            elif kind == "if":
                body += [
                    "  scf.if %flag {",
                    f"    %b{step} = usmp.allocate : memref<32xi8>",
                    f"    %v{step} = memref.load %{current}[%c0] : {src}",
                    f"    memref.store %v{step}, %b{step}[%c0] : memref<32xi8>",
                    f"    %u{step} = memref.load %b{step}[%c0] : memref<32xi8>",
                    f"    memref.store %u{step}, %{s}[%c0] : memref<{size(s, body)}xi8>",
                    "  } else {",
                    f"    %v{step}e = memref.load %{current}[%c1] : {src}",
                    f"    memref.store %v{step}e, %{s}[%c1] : memref<{size(s, body)}xi8>",
                    "  }",
                ]
            elif kind == "view":
                body += [
                    f"  %view{step} = memref.view %{s}[%c0][] : memref<{size(s, body)}xi8> "
                    f"to memref<2xi8>",
                    f"  %v{step} = memref.load %{current}[%c0] : {src}",
                    f"  memref.store %v{step}, %view{step}[%c1] : memref<2xi8>",
                ]
            else:
                body += [
                    f"  %v{step} = memref.load %{current}[%c0] : {src}",
                    f"  memref.store %v{step}, %{s}[%c0] : memref<{size(s, body)}xi8>",
                ]
            if rng.random() < 0.5 and current != "in":
                # read an earlier value again later: it must survive in between
                body.append(f"  %again{step} = memref.load %in[%c0] : memref<64xi8>")
            current = s
        body += ["  func.return", "}"]
        lines += body
    main = ["func.func @main(%flag: i1) {", "  %c0 = arith.constant 0 : index"]
    tensors = [f"t{k}" for k in range(rng.randint(3, 8))]
    for t in tensors:
        main.append(f"  %{t} = usmp.allocate : memref<64xi8>")
    main.append(f"  %seed = arith.constant {seed % 100} : i8")
    main.append(f"  memref.store %seed, %{tensors[0]}[%c0] : memref<64xi8>")
    available = [tensors[0]]
    for t in tensors[1:]:
        for _ in range(rng.randint(1, 2)):
            source = rng.choice(available)
            operator = rng.choice(operators)
            main.append(
                f"  func.call @{operator}(%{source}, %{t}, %flag) : "
                "(memref<64xi8>, memref<64xi8>, i1) -> ()"
            )
        available.append(t)
    for t in rng.sample(available, k=min(2, len(available))):
        main.append(f"  %final_{t} = memref.load %{t}[%c0] : memref<64xi8>")
    main += ["  func.return", "}"]
    return "\n".join(lines + main)


def size(name: str, body: list[str]) -> int:
    if name in ("in", "out"):
        return 64
    for line in body:
        if line.strip().startswith(f"%{name} = usmp.allocate"):
            return int(line.split("memref<")[1].split("x")[0])
    raise KeyError(name)


@pytest.mark.parametrize("algorithm", FAST_ALGORITHMS)
@pytest.mark.parametrize(("name", "text"), lit_programs(), ids=[p[0] for p in lit_programs()])
def test_lit_programs_are_planned_safely(name: str, text: str, algorithm: str) -> None:
    assert_safe(planned(text, algorithm))


@pytest.mark.parametrize("algorithm", FAST_ALGORITHMS)
@pytest.mark.parametrize("seed", range(25))
def test_random_programs_are_planned_safely(seed: int, algorithm: str) -> None:
    module = planned(random_program(seed), algorithm)
    assert_safe(module)
    # The plan really shares memory (the check is not vacuous on these programs).
    analysis = extract_buffer_info(module)
    total = sum(info.size_bytes for info in analysis.buffers)
    pools = [p for p in module.ops if p.name == "pool.workspace"]
    used = sum(p.properties["size_bytes"].value.data for p in pools)  # type: ignore[union-attr]
    assert used <= total


def test_the_checker_catches_overlapping_live_buffers() -> None:
    """Putting every buffer at offset 0 of one pool must be caught on most random programs."""
    caught = 0
    for seed in range(10):
        module = planned(random_program(seed), FAST_ALGORITHMS[0])
        for op in module.walk():
            if isinstance(op, AllocationOp):
                op.properties["pool"] = op.pools.data[0] if op.pools else op.pool  # type: ignore[assignment]
                op.properties["offset"] = IntegerAttr(0, 64)
        try:
            assert_safe(module)
        except Clobbered:
            caught += 1
    assert caught >= 5


def test_analysis_scales_to_ten_thousand_allocations() -> None:
    """10,000 allocations and 5,000 calls: the analysis stays linear (a few seconds)."""
    module = ModuleOp([])
    block = module.body.block
    operator = func.FuncOp("op", ((MemRefType(i8, [64]), MemRefType(i8, [64])), ()))
    scratch = AllocateOp(MemRefType(i8, [32]))
    zero = arith.ConstantOp(IntegerAttr(0, IndexType()))
    value = memref.LoadOp.get(operator.args[0], [zero])
    operator.body.block.add_ops(
        [
            scratch,
            zero,
            value,
            memref.StoreOp.get(value, operator.args[1], [zero]),
            memref.StoreOp.get(value, scratch.memref, [zero]),
            memref.LoadOp.get(operator.args[0], [zero]),
            func.ReturnOp(),
        ]
    )
    main = func.FuncOp("main", ((), ()))
    tensors = [AllocateOp(MemRefType(i8, [64])) for _ in range(9_999)]
    main.body.block.add_ops(tensors)
    calls = [
        func.CallOp("op", [tensors[k].memref, tensors[k + 1].memref], [])
        for k in range(0, 9_998, 2)
    ]
    main.body.block.add_ops([*calls, func.ReturnOp()])
    block.add_ops([operator, main])
    analysis = extract_buffer_info(module)
    assert len(analysis.buffers) == 10_000
    scratch_info = next(b for b in analysis.buffers if b.function == "op")
    assert len(scratch_info.live) == len(calls)
    # the tensors of different calls are never live together: the peak is one call's input
    # (read again at its end) with its output
    assert analysis.memory_pressure_bytes == 64 + 64


@pytest.mark.parametrize("algorithm", FAST_ALGORITHMS)
def test_u4_inputs_and_outputs_survive_the_run(algorithm: str) -> None:
    """TVM's TwoInputTwoOutput under U4: the application writes both inputs before the run and
    reads both outputs after it, so neither input may share memory with the other (TVM put both
    at offset 0) nor with an output that is written before the input's last read."""
    from usmp_dialect.passes.create_io_allocates import UsmpCreateIoAllocatesPass

    text = (TEST_DIR / "usmp-pipeline.mlir").read_text().split("// -----")[0]
    module = parse(text)
    UsmpCreateIoAllocatesPass().apply(make_context(), module)
    UsmpPlanPass(algorithm=algorithm, time_limit=0.5).apply(make_context(), module)
    assert_safe(module)
    offsets = {
        op.memref.name_hint: op.offset.value.data
        for op in module.walk()
        if isinstance(op, AllocationOp) and op.offset is not None
    }
    first, second = sorted((offsets["input1"], offsets["input2"]))
    assert second - first >= 150528
