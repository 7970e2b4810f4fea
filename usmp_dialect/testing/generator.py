"""Random but valid programs for differential testing, as MLIR text (seeded, deterministic).

A program is an entry `func.func @main` with memref inputs `%in<k>` and outputs `%out<k>`,
operator functions `@op<k>` called once or several times (operators may call earlier operators),
scratch buffers inside operators, intermediate buffers in `main`, `scf.for` loops (buffers
allocated inside and outside the loop, accumulators updated in place), `scf.if` with buffers in
its branches, views (`memref.subview`, `memref.cast`, `memref.collapse_shape`,
`memref.expand_shape`), `memref.copy`, constants (`usmp.allocate_const`), several pools with
capacities and candidate orders, and the element types i8, i32 and f32.

What makes the output independent of the memory plan:

* every buffer is fully written before it is read, in every call of its function and every
  iteration of its loop (data flows inputs -> buffers -> outputs), and every output is fully
  written;
* arithmetic is free of undefined behaviour: integer add/sub/mul wrap (the C backend prints
  them in unsigned arithmetic), shifts are absent, floats stay finite (inputs are small
  dyadic numbers, float results are averaged, never multiplied together) and are turned back
  into integers with `arith.bitcast`, never `fptosi`.

So two correct lowerings of a program (its buffers planned with sharing, or every buffer
separate) print the same output bytes for the same inputs. The program's metadata (inputs,
outputs, pools, use case) is written on its first line as `// differential: {json}` so that a
saved program can be replayed.
"""

from __future__ import annotations

import json
import random
import struct
from dataclasses import asdict, dataclass, field

ELEMENT_BYTES = {"i8": 1, "i32": 4, "f32": 4}
METADATA_PREFIX = "// differential: "


@dataclass(frozen=True)
class TensorSpec:
    """One entry-function argument (a model input or output)."""

    name: str
    shape: tuple[int, ...]
    element: str

    @property
    def elements(self) -> int:
        count = 1
        for dim in self.shape:
            count *= dim
        return count

    @property
    def size_bytes(self) -> int:
        return self.elements * ELEMENT_BYTES[self.element]

    @property
    def mlir_type(self) -> str:
        return _memref_type(self.shape, self.element)


@dataclass(frozen=True)
class PoolSpec:
    """A pool the program declares."""

    name: str
    kind: str  # "workspace" | "constant"
    capacity_bytes: int | None
    internal: bool
    targets: tuple[str, ...] = ("c",)
    alignment: int | None = None


@dataclass(frozen=True)
class GeneratedProgram:
    """A generated program with what a harness needs to run it."""

    seed: int
    text: str
    inputs: tuple[TensorSpec, ...]
    outputs: tuple[TensorSpec, ...]
    pools: tuple[PoolSpec, ...]
    workspace_io: bool
    use_case: str  # "U1" (no pools), "U3" (declared pools), "U4" (workspace-io)

    @staticmethod
    def from_text(text: str) -> GeneratedProgram:
        """A saved program (its first line holds the metadata)."""
        first_line = text.split("\n", 1)[0]
        if not first_line.startswith(METADATA_PREFIX):
            raise ValueError(f"not a generated program: first line must start {METADATA_PREFIX!r}")
        data = json.loads(first_line[len(METADATA_PREFIX) :])

        def tensors(items: list[dict[str, object]]) -> tuple[TensorSpec, ...]:
            return tuple(
                TensorSpec(str(t["name"]), tuple(t["shape"]), str(t["element"]))  # type: ignore[arg-type]
                for t in items
            )

        return GeneratedProgram(
            seed=int(data["seed"]),
            text=text,
            inputs=tensors(data["inputs"]),
            outputs=tensors(data["outputs"]),
            pools=tuple(
                PoolSpec(
                    p["name"],
                    p["kind"],
                    p["capacity_bytes"],
                    p["internal"],
                    tuple(p["targets"]),
                    p.get("alignment"),
                )
                for p in data["pools"]
            ),
            workspace_io=bool(data["workspace_io"]),
            use_case=str(data["use_case"]),
        )


@dataclass(frozen=True)
class GeneratorConfig:
    """Knobs of the generator (the defaults give programs of a few hundred bytes to a few KB)."""

    main_steps: tuple[int, int] = (2, 5)
    operator_steps: tuple[int, int] = (1, 2)
    max_operators: int = 3
    max_nesting: int = 2
    max_elements: int = 64
    use_cases: tuple[str, ...] = ("U1", "U3", "U4")


def _memref_type(shape: tuple[int, ...], element: str) -> str:
    return f"memref<{'x'.join(str(d) for d in shape)}x{element}>"


def _elements(shape: tuple[int, ...]) -> int:
    count = 1
    for dim in shape:
        count *= dim
    return count


@dataclass
class _Mem:
    """A memref value visible in the code being generated."""

    ssa: str
    shape: tuple[int, ...]
    element: str

    @property
    def type(self) -> str:
        return _memref_type(self.shape, self.element)

    @property
    def elements(self) -> int:
        return _elements(self.shape)


@dataclass
class _Operator:
    name: str
    inputs: list[tuple[tuple[int, ...], str]]
    outputs: list[tuple[tuple[int, ...], str]]
    lines: list[str] = field(default_factory=list)

    @property
    def signature(self) -> str:
        types = [_memref_type(s, e) for s, e in self.inputs + self.outputs]
        return f"({', '.join(types)}) -> ()"


class _Function:
    """The body of one function being generated."""

    def __init__(self, name: str, operator_level: int) -> None:
        self.name = name
        self.lines: list[str] = []
        self.depth = 2
        self.operator_level = operator_level
        self.unconsumed: list[str] = []
        """Buffers written but not read yet: preferred as kernel inputs."""
        self.index_constants: set[int] = set()

    def index_constant(self, value: int) -> str:
        self.index_constants.add(value)
        return f"%c{value}"

    def body(self) -> list[str]:
        """The finished body: the index constants first, then the statements."""
        constants = [
            f"    %c{value} = arith.constant {value} : index"
            for value in sorted(self.index_constants)
        ]
        return constants + self.lines

    def emit(self, line: str) -> None:
        self.lines.append("  " * self.depth + line)


@dataclass
class _Allocation:
    size_bytes: int
    alignment: int
    pool_kind: str  # "workspace" | "constant"


class _Generator:
    def __init__(self, seed: int, config: GeneratorConfig) -> None:
        self.seed = seed
        self.rng = random.Random(seed)
        self.config = config
        self.counter = 0
        self.operators: list[_Operator] = []
        self.allocations: list[_Allocation] = []
        self.use_case = self.rng.choice(config.use_cases)
        self.declare_pools = self.use_case == "U3" or (
            self.use_case == "U4" and self.rng.random() < 0.5
        )
        self.candidate_lists: list[str] = []
        if self.declare_pools:
            self.candidate_lists = ["[@slow]", "[@fast, @slow]", "[@slow, @fast]"]
        self.palette = [self.random_type() for _ in range(self.rng.randint(3, 5))]
        # Flat twins of some multi-dimensional types: buffers then reach operators through
        # `memref.collapse_shape` views passed as call arguments.
        self.palette += [
            ((_elements(shape),), element)
            for shape, element in list(self.palette)
            if len(shape) > 1 and self.rng.random() < 0.5
        ]
        self.view_types: dict[str, str] = {}
        """Types of views whose layout is not the identity (subviews, casts)."""

    # ---- small helpers -----------------------------------------------------------------------

    def fresh(self, stem: str) -> str:
        self.counter += 1
        return f"%{stem}{self.counter}"

    def random_type(self) -> tuple[tuple[int, ...], str]:
        rng = self.rng
        element = rng.choice(("i8", "i32", "f32"))
        rank = rng.choice((1, 1, 2, 2, 3))
        limit = self.config.max_elements
        while True:
            if rank == 1:
                shape: tuple[int, ...] = (rng.randint(4, limit),)
            elif rank == 2:
                shape = (rng.randint(2, 12), rng.randint(2, 12))
            else:
                shape = (rng.randint(1, 4), rng.randint(2, 6), rng.randint(2, 6))
            if _elements(shape) <= limit:
                return shape, element

    def index(self, f: _Function, value: int) -> str:
        """An index constant (defined once per function, at the top of its body)."""
        return f.index_constant(value)

    def scalar(self, f: _Function, value: int | float, element: str) -> str:
        name = self.fresh("k")
        if element == "f32":
            f.emit(f"{name} = arith.constant {float(value)!r} : f32")
        else:
            f.emit(f"{name} = arith.constant {int(value)} : {element}")
        return name

    def allocation_attributes(self, kind: str) -> str:
        rng = self.rng
        items: list[str] = []
        if rng.random() < 0.15:
            items.append(f"alignment = {rng.choice((8, 32, 64))} : i64")
        if kind == "workspace" and self.candidate_lists and rng.random() < 0.35:
            items.append(f"pools = {rng.choice(self.candidate_lists)}")
        return f"{{{', '.join(items)}}} " if items else ""

    def allocate(self, f: _Function, shape: tuple[int, ...], element: str) -> _Mem:
        mem = _Mem(self.fresh("b"), shape, element)
        attributes = self.allocation_attributes("workspace")
        f.emit(f"{mem.ssa} = usmp.allocate {attributes}: {mem.type}")
        alignment = 64 if "alignment" in attributes else 16
        self.allocations.append(
            _Allocation(_elements(shape) * ELEMENT_BYTES[element], alignment, "workspace")
        )
        return mem

    def constant(self, f: _Function) -> _Mem:
        shape, element = self.rng.choice(self.palette)
        mem = _Mem(self.fresh("w"), shape, element)
        count = _elements(shape)
        rng = self.rng
        if element == "f32":
            values: list[float | int] = [rng.randint(-64, 64) / 4 for _ in range(count)]
            raw = b"".join(struct.pack("<f", v) for v in values)
        else:
            bound = 127 if element == "i8" else 100_000
            values = [rng.randint(-bound, bound) for _ in range(count)]
            raw = b"".join(struct.pack("<b" if element == "i8" else "<i", int(v)) for v in values)
        if len(shape) == 1 and rng.random() < 0.6:
            literal = "[" + ", ".join(repr(v) for v in values) + "]"
        else:
            literal = '"0x' + raw.hex().upper() + '"'
        attributes = self.allocation_attributes("constant")
        f.emit(f"{mem.ssa} = usmp.allocate_const {attributes}dense<{literal}> : {mem.type}")
        self.allocations.append(_Allocation(len(raw), 16, "constant"))
        return mem

    # ---- kernels: fully write one buffer from others -----------------------------------------

    def pick_inputs(self, f: _Function, available: list[_Mem], count: int) -> list[_Mem]:
        """Up to `count` inputs: unread buffers first (so most data reaches an output), then
        random ones, sometimes a fresh constant."""
        rng = self.rng
        by_name = {m.ssa: m for m in available}
        chosen: list[_Mem] = []
        fresh = [name for name in f.unconsumed if name in by_name]
        if fresh:
            chosen.append(by_name[fresh[-1]])
            if len(fresh) > 1 and rng.random() < 0.7:
                chosen.append(by_name[rng.choice(fresh[:-1])])
        while len(chosen) < count:
            if rng.random() < 0.12 or not available:
                chosen.append(self.constant(f))
            else:
                chosen.append(rng.choice(available))
        return chosen[: max(count, 1)]

    def convert(self, f: _Function, value: str, source: str, target: str) -> str:
        if source == target:
            return value
        if source == "f32":
            as_int = self.fresh("v")
            f.emit(f"{as_int} = arith.bitcast {value} : f32 to i32")
            return self.convert(f, as_int, "i32", target)
        result = self.fresh("v")
        if target == "f32":
            f.emit(f"{result} = arith.sitofp {value} : {source} to f32")
        elif ELEMENT_BYTES[source] < ELEMENT_BYTES[target]:
            f.emit(f"{result} = arith.extsi {value} : {source} to {target}")
        else:
            f.emit(f"{result} = arith.trunci {value} : {source} to {target}")
        return result

    def index_value(self, f: _Function, index: str, element: str) -> str:
        as_i32 = self.fresh("v")
        f.emit(f"{as_i32} = arith.index_cast {index} : index to i32")
        return self.convert(f, as_i32, "i32", element)

    def combine(self, f: _Function, values: list[str], element: str, mixins: list[str]) -> str:
        rng = self.rng
        acc = values[0]
        if element == "f32":
            half = self.scalar(f, 0.5, "f32")
            for value in values[1:] + mixins:
                summed = self.fresh("v")
                f.emit(f"{summed} = arith.{rng.choice(('addf', 'subf'))} {acc}, {value} : f32")
                acc = self.fresh("v")
                f.emit(f"{acc} = arith.mulf {summed}, {half} : f32")
            return acc
        for value in values[1:] + mixins:
            op = rng.choice(("addi", "xori", "subi", "addi"))
            nxt = self.fresh("v")
            f.emit(f"{nxt} = arith.{op} {acc}, {value} : {element}")
            acc = nxt
        roll = rng.random()
        if roll < 0.2:
            factor = self.scalar(f, rng.choice((3, 5, 7, 11, -3)), element)
            nxt = self.fresh("v")
            f.emit(f"{nxt} = arith.muli {acc}, {factor} : {element}")
            acc = nxt
        elif roll < 0.35:
            bound = self.scalar(f, rng.randint(-20, 20), element)
            nxt = self.fresh("v")
            f.emit(f"{nxt} = arith.{rng.choice(('maxsi', 'minsi'))} {acc}, {bound} : {element}")
            acc = nxt
        elif roll < 0.45 and len(values) > 1:
            flag = self.fresh("v")
            f.emit(f"{flag} = arith.cmpi slt, {values[0]}, {values[1]} : {element}")
            nxt = self.fresh("v")
            f.emit(f"{nxt} = arith.select {flag}, {acc}, {values[1]} : {element}")
            acc = nxt
        return acc

    def reader(self, f: _Function, source: _Mem, same_index: bool) -> tuple[_Mem, str, int]:
        """Prepares reading `source` (a view made before the loops). Returns the memref to load
        from, the access mode and the element count the index is taken modulo."""
        rng = self.rng
        n = source.elements
        if same_index:
            if len(source.shape) > 1:
                return self.collapse(f, source), "flat", n
            return source, "flat", n
        if len(source.shape) == 1:
            mode = rng.choice(("flat", "window", "cast"))
            if mode == "window":
                offset = rng.randrange(n)
                size = rng.randint(1, n - offset)
                view = _Mem(self.fresh("sv"), (size,), source.element)
                view_type = f"memref<{size}x{source.element}, strided<[1], offset: {offset}>>"
                self.view_types[view.ssa] = view_type
                f.emit(
                    f"{view.ssa} = memref.subview {source.ssa}[{offset}] [{size}] [1] : "
                    f"{source.type} to {view_type}"
                )
                return view, "flat", size
            if mode == "cast":
                view = _Mem(self.fresh("cv"), (n,), source.element)
                self.view_types[view.ssa] = f"memref<?x{source.element}>"
                f.emit(
                    f'{view.ssa} = "memref.cast"({source.ssa}) : ({source.type}) -> '
                    f"memref<?x{source.element}>"
                )
                return view, "flat", n
            return source, "flat", n
        if rng.random() < 0.5:
            return self.collapse(f, source), "flat", n
        return source, "delinearize", n

    def collapse(self, f: _Function, source: _Mem) -> _Mem:
        view = _Mem(self.fresh("fv"), (source.elements,), source.element)
        dims = ", ".join(str(d) for d in range(len(source.shape)))
        f.emit(
            f"{view.ssa} = memref.collapse_shape {source.ssa} [[{dims}]] : {source.type} "
            f"into {view.type}"
        )
        return view

    def load(self, f: _Function, view: _Mem, mode: str, flat: str) -> str:
        value = self.fresh("v")
        if mode == "flat" and len(view.shape) == 1:
            f.emit(f"{value} = memref.load {view.ssa}[{flat}] : {self.view_type(view)}")
            return value
        indices: list[str] = []
        rest = flat
        for dim in reversed(view.shape[1:]):
            size = self.index(f, dim)
            index = self.fresh("x")
            f.emit(f"{index} = arith.remui {rest}, {size} : index")
            quotient = self.fresh("x")
            f.emit(f"{quotient} = arith.divui {rest}, {size} : index")
            indices.append(index)
            rest = quotient
        indices.append(rest)
        f.emit(f"{value} = memref.load {view.ssa}[{', '.join(reversed(indices))}] : {view.type}")
        return value

    def view_type(self, view: _Mem) -> str:
        return self.view_types.get(view.ssa, view.type)

    def kernel(
        self,
        f: _Function,
        out: _Mem,
        inputs: list[_Mem],
        extra_index: str | None = None,
        in_place: bool = False,
    ) -> None:
        """Writes every element of `out` from `inputs` (`in_place`: `out` is also read, at the
        element being written, as an accumulator)."""
        rng = self.rng
        same_type = [m for m in inputs if (m.shape, m.element) == (out.shape, out.element)]
        source = same_type[0] if same_type else None
        # Only when no fresh constant (`%w`) would be left unused by the copy.
        if (
            source is not None
            and not in_place
            and extra_index is None
            and all(m is source or not m.ssa.startswith("%w") for m in inputs)
            and rng.random() < 0.15
        ):
            f.emit(f'"memref.copy"({source.ssa}, {out.ssa}) : ({source.type}, {out.type}) -> ()')
            if source.ssa in f.unconsumed:
                f.unconsumed.remove(source.ssa)
            if out.ssa not in f.unconsumed:
                f.unconsumed.append(out.ssa)
            return
        readers: list[tuple[_Mem, str, int, int, int]] = []
        sources = ([out] if in_place else []) + inputs
        for position, source in enumerate(sources):
            same = in_place and position == 0
            view, mode, modulus = self.reader(f, source, same)
            multiplier = 1 if same else rng.choice((1, 3, 5, 7))
            addend = 0 if same else rng.randrange(modulus)
            readers.append((view, mode, modulus, multiplier, addend))
            if source.ssa in f.unconsumed:
                f.unconsumed.remove(source.ssa)
        for piece, base in self.write_pieces(f, out):
            self.loop_nest(f, piece, base, out.elements, out.element, readers, extra_index)
        if out.ssa not in f.unconsumed:
            f.unconsumed.append(out.ssa)

    def write_pieces(self, f: _Function, out: _Mem) -> list[tuple[_Mem, int]]:
        """Views through which `out` is written, with the flat index of each one's start."""
        rng = self.rng
        n = out.elements
        mode = rng.choice(("direct", "direct", "reshape", "split"))
        if mode == "reshape":
            if len(out.shape) > 1:
                return [(self.collapse(f, out), 0)]
            factors = [d for d in range(2, n) if n % d == 0]
            if factors:
                rows = rng.choice(factors)
                view = _Mem(self.fresh("ev"), (rows, n // rows), out.element)
                f.emit(
                    f"{view.ssa} = memref.expand_shape {out.ssa} [[0, 1]] output_shape "
                    f"[{rows}, {n // rows}] : {out.type} into {view.type}"
                )
                return [(view, 0)]
        if mode == "split" and n >= 2:
            flat = out if len(out.shape) == 1 else self.collapse(f, out)
            half = rng.randint(1, n - 1)
            pieces: list[tuple[_Mem, int]] = []
            for offset, size in ((0, half), (half, n - half)):
                view = _Mem(self.fresh("sv"), (size,), out.element)
                layout = "strided<[1]>" if offset == 0 else f"strided<[1], offset: {offset}>"
                self.view_types[view.ssa] = f"memref<{size}x{out.element}, {layout}>"
                f.emit(
                    f"{view.ssa} = memref.subview {flat.ssa}[{offset}] [{size}] [1] : "
                    f"{flat.type} to {self.view_types[view.ssa]}"
                )
                pieces.append((view, offset))
            rng.shuffle(pieces)
            return pieces
        return [(out, 0)]

    def loop_nest(
        self,
        f: _Function,
        piece: _Mem,
        base: int,
        total: int,
        element: str,
        readers: list[tuple[_Mem, str, int, int, int]],
        extra_index: str | None,
    ) -> None:
        zero = self.index(f, 0)
        one = self.index(f, 1)
        ivs: list[str] = []
        for dim in piece.shape:
            bound = self.index(f, dim)
            iv = self.fresh("i")
            f.emit(f"scf.for {iv} = {zero} to {bound} step {one} {{")
            f.depth += 1
            ivs.append(iv)
        flat = ivs[0]
        for dim, iv in zip(piece.shape[1:], ivs[1:], strict=True):
            size = self.index(f, dim)
            scaled = self.fresh("x")
            f.emit(f"{scaled} = arith.muli {flat}, {size} : index")
            flat = self.fresh("x")
            f.emit(f"{flat} = arith.addi {scaled}, {iv} : index")
        if base:
            offset = self.index(f, base)
            shifted = self.fresh("x")
            f.emit(f"{shifted} = arith.addi {flat}, {offset} : index")
            flat = shifted
        values: list[str] = []
        for view, mode, modulus, multiplier, addend in readers:
            position = flat
            if multiplier != 1 or addend:
                factor = self.index(f, multiplier)
                scaled = self.fresh("x")
                f.emit(f"{scaled} = arith.muli {flat}, {factor} : index")
                shift = self.index(f, addend)
                moved = self.fresh("x")
                f.emit(f"{moved} = arith.addi {scaled}, {shift} : index")
                position = moved
            if position != flat or modulus < total:
                size = self.index(f, modulus)
                wrapped = self.fresh("x")
                f.emit(f"{wrapped} = arith.remui {position}, {size} : index")
                position = wrapped
            loaded = self.load(f, view, mode, position)
            values.append(self.convert(f, loaded, view.element, element))
        mixins: list[str] = []
        if self.rng.random() < 0.6 or not values:
            mixins.append(
                self.index_value(f, flat, element)
                if element != "f32"
                else self.float_index(f, flat)
            )
        if extra_index is not None:
            mixins.append(
                self.index_value(f, extra_index, element)
                if element != "f32"
                else self.float_index(f, extra_index)
            )
        if not values:
            values, mixins = mixins[:1], mixins[1:]
        result = self.combine(f, values, element, mixins)
        target_type = self.view_type(piece)
        f.emit(f"memref.store {result}, {piece.ssa}[{', '.join(ivs)}] : {target_type}")
        for _ in ivs:
            f.depth -= 1
            f.emit("}")

    def float_index(self, f: _Function, index: str) -> str:
        as_int = self.index_value(f, index, "i32")
        as_float = self.fresh("v")
        f.emit(f"{as_float} = arith.sitofp {as_int} : i32 to f32")
        return as_float

    # ---- statements --------------------------------------------------------------------------

    def block(
        self,
        f: _Function,
        available: list[_Mem],
        steps: int,
        nesting: int,
        loop_index: str | None,
    ) -> list[_Mem]:
        """Emits `steps` statements; returns the buffers they produced (fully written)."""
        produced: list[_Mem] = []
        scope = list(available)
        for _ in range(steps):
            kinds = ["kernel", "kernel", "call", "call"]
            if nesting < self.config.max_nesting and (nesting == 0 or self.rng.random() < 0.3):
                kinds += ["loop", "if"]
            kind = self.rng.choice(kinds)
            if kind == "call":
                new = self.call(f, scope)
                if new is None:
                    kind = "kernel"
            if kind == "kernel":
                shape, element = self.rng.choice(self.palette)
                out = self.allocate(f, shape, element)
                self.kernel(f, out, self.pick_inputs(f, scope, self.rng.randint(1, 3)), loop_index)
                new = [out]
            elif kind == "loop":
                new = self.loop(f, scope, nesting)
            elif kind == "if":
                new = self.branch(f, scope, nesting, loop_index)
            if new is None:
                raise RuntimeError(f"generator: no statement produced for step kind {kind}")
            scope.extend(new)
            produced.extend(new)
        return produced

    def loop(self, f: _Function, scope: list[_Mem], nesting: int) -> list[_Mem]:
        rng = self.rng
        shape, element = rng.choice(self.palette)
        accumulator = self.allocate(f, shape, element)
        self.kernel(f, accumulator, self.pick_inputs(f, scope, rng.randint(1, 2)))
        last: _Mem | None = None
        if rng.random() < 0.5:
            shape, element = rng.choice(self.palette)
            last = self.allocate(f, shape, element)
        zero = self.index(f, 0)
        trips = self.index(f, rng.randint(2, 3))
        one = self.index(f, 1)
        iv = self.fresh("k")
        f.emit(f"scf.for {iv} = {zero} to {trips} step {one} {{")
        f.depth += 1
        inner_scope = [*scope, accumulator]
        locals_ = self.block(f, inner_scope, rng.randint(1, 2), nesting + 1, iv)
        inner_scope += locals_
        extra = self.pick_inputs(f, inner_scope, rng.randint(1, 2))
        self.kernel(f, accumulator, extra, iv, in_place=True)
        if last is not None:
            self.kernel(f, last, self.pick_inputs(f, inner_scope, rng.randint(1, 2)), iv)
        f.depth -= 1
        f.emit("}")
        for mem in locals_:
            if mem.ssa in f.unconsumed:
                f.unconsumed.remove(mem.ssa)
        return [accumulator] + ([last] if last is not None else [])

    def condition(self, f: _Function, scope: list[_Mem], loop_index: str | None) -> str:
        rng = self.rng
        flag = self.fresh("cond")
        if loop_index is not None and rng.random() < 0.5:
            two = self.index(f, 2)
            zero = self.index(f, 0)
            parity = self.fresh("x")
            f.emit(f"{parity} = arith.remui {loop_index}, {two} : index")
            f.emit(f"{flag} = arith.cmpi eq, {parity}, {zero} : index")
            return flag
        if scope and rng.random() < 0.8:
            source = rng.choice(scope)
            indices = ", ".join(self.index(f, rng.randrange(d)) for d in source.shape)
            value = self.fresh("v")
            f.emit(f"{value} = memref.load {source.ssa}[{indices}] : {source.type}")
            zero_value = self.scalar(f, 0, source.element)
            if source.element == "f32":
                f.emit(f"{flag} = arith.cmpf olt, {value}, {zero_value} : f32")
            else:
                f.emit(f"{flag} = arith.cmpi slt, {value}, {zero_value} : {source.element}")
            return flag
        f.emit(f"{flag} = arith.constant {rng.choice(('true', 'false'))}")
        return flag

    def branch(
        self, f: _Function, scope: list[_Mem], nesting: int, loop_index: str | None
    ) -> list[_Mem]:
        rng = self.rng
        flag = self.condition(f, scope, loop_index)
        allocated = [m for m in scope if m.ssa.startswith("%b")]
        if allocated and rng.random() < 0.3:
            # A conditional update without `else`: an already written buffer of this function
            # is rewritten, from buffers local to the branch, only when the condition holds.
            target = rng.choice(allocated)
            f.emit(f"scf.if {flag} {{")
            f.depth += 1
            locals_ = self.block(f, scope, rng.randint(1, 2), nesting + 1, loop_index)
            self.kernel(f, target, self.pick_inputs(f, scope + locals_, rng.randint(1, 2)))
            for mem in locals_:
                if mem.ssa in f.unconsumed:
                    f.unconsumed.remove(mem.ssa)
            f.depth -= 1
            f.emit("}")
            return []
        shape, element = rng.choice(self.palette)
        result = self.allocate(f, shape, element)
        f.emit(f"scf.if {flag} {{")
        for side in ("then", "else"):
            f.depth += 1
            locals_ = self.block(f, scope, rng.randint(0, 2), nesting + 1, loop_index)
            self.kernel(f, result, self.pick_inputs(f, scope + locals_, rng.randint(1, 2)))
            for mem in locals_:
                if mem.ssa in f.unconsumed:
                    f.unconsumed.remove(mem.ssa)
            f.depth -= 1
            f.emit("} else {" if side == "then" else "}")
        return [result]

    def call(
        self,
        f: _Function,
        scope: list[_Mem],
        outputs: dict[int, _Mem] | None = None,
    ) -> list[_Mem] | None:
        """Calls an operator (an existing one whose inputs the scope can feed, or a new one).
        `outputs` pins some output positions to given buffers (the entry's outputs)."""
        rng = self.rng
        callable_: list[tuple[_Operator, list[_Mem]]] = []
        for operator in self.operators:
            if outputs and any(
                p >= len(operator.outputs) or operator.outputs[p] != (m.shape, m.element)
                for p, m in outputs.items()
            ):
                continue
            arguments: list[_Mem] = []
            for shape, element in operator.inputs:
                matches = [m for m in scope if self.fits((m.shape, m.element), (shape, element))]
                if not matches:
                    break
                arguments.append(rng.choice(matches))
            else:
                callable_.append((operator, arguments))
        operator: _Operator | None = None
        make_new = (
            f.operator_level < 2
            and len(self.operators) < self.config.max_operators
            and not outputs
            and (not callable_ or rng.random() < 0.4)
        )
        if make_new:
            arguments = self.pick_inputs(f, scope, rng.randint(1, 2))
            operator = self.new_operator(arguments, f.operator_level + 1)
        elif callable_:
            operator, arguments = rng.choice(callable_)
            for mem in arguments:
                if mem.ssa in f.unconsumed:
                    f.unconsumed.remove(mem.ssa)
        if operator is None:
            return None
        results: list[_Mem] = []
        for position, (shape, element) in enumerate(operator.outputs):
            pinned = (outputs or {}).get(position)
            if pinned is None:
                shapes = [t for t in self.palette if self.fits(t, (shape, element))]
                pinned = self.allocate(f, *rng.choice(shapes))
            results.append(pinned)
        operands = ", ".join(
            self.as_argument(f, m, t)
            for m, t in zip(arguments + results, operator.inputs + operator.outputs, strict=True)
        )
        f.emit(f"func.call @{operator.name}({operands}) : {operator.signature}")
        fresh = [m for m in results if not (outputs and m in outputs.values())]
        f.unconsumed.extend(m.ssa for m in fresh)
        return fresh

    @staticmethod
    def fits(given: tuple[tuple[int, ...], str], wanted: tuple[tuple[int, ...], str]) -> bool:
        """Whether a buffer of type `given` can be passed where `wanted` is expected: the same
        type, or a multi-dimensional buffer for a flat parameter (through a collapse view)."""
        if given == wanted:
            return True
        (shape, element), (wanted_shape, wanted_element) = given, wanted
        return (
            element == wanted_element
            and len(wanted_shape) == 1
            and len(shape) > 1
            and _elements(shape) == wanted_shape[0]
        )

    def as_argument(self, f: _Function, mem: _Mem, wanted: tuple[tuple[int, ...], str]) -> str:
        """The SSA value to pass `mem` as a parameter of type `wanted`."""
        if (mem.shape, mem.element) == wanted:
            return mem.ssa
        return self.collapse(f, mem).ssa

    def new_operator(self, arguments: list[_Mem], level: int) -> _Operator:
        rng = self.rng
        name = self.fresh("op")[1:]
        outputs = [rng.choice(self.palette) for _ in range(rng.randint(1, 2))]
        operator = _Operator(name, [(m.shape, m.element) for m in arguments], outputs)
        f = _Function(name, level)
        parameters = [_Mem(f"%a{i}", m.shape, m.element) for i, m in enumerate(arguments)]
        results = [_Mem(f"%r{i}", s, e) for i, (s, e) in enumerate(outputs)]
        f.unconsumed = [p.ssa for p in parameters]
        steps = rng.randint(*self.config.operator_steps)
        produced = self.block(f, parameters, steps, 1 if level > 1 else 0, None)
        scope = parameters + produced
        for result in results:
            self.kernel(f, result, self.pick_inputs(f, scope, rng.randint(1, 3)))
        f.emit("func.return")
        header = ", ".join(f"{m.ssa}: {m.type}" for m in parameters + results)
        operator.lines = [f"  func.func @{name}({header}) {{", *f.body(), "  }"]
        self.operators.append(operator)
        return operator

    # ---- the whole program -------------------------------------------------------------------

    def program(self) -> GeneratedProgram:
        rng = self.rng
        self.view_types = {}
        inputs = [TensorSpec(f"in{i}", *rng.choice(self.palette)) for i in range(rng.randint(1, 3))]
        outputs = [
            TensorSpec(f"out{i}", *rng.choice(self.palette)) for i in range(rng.randint(1, 2))
        ]
        main = _Function("main", 0)
        parameters = [_Mem(f"%{t.name}", t.shape, t.element) for t in inputs]
        main.unconsumed = [p.ssa for p in parameters]
        steps = rng.randint(*self.config.main_steps)
        produced = self.block(main, parameters, steps, 0, None)
        scope = parameters + produced
        for output in outputs:
            target = _Mem(f"%{output.name}", output.shape, output.element)
            if rng.random() >= 0.35 or self.call(main, scope, {0: target}) is None:
                self.kernel(main, target, self.pick_inputs(main, scope, rng.randint(2, 3)))
            scope.append(target)  # a later output may read this one
        main.emit("func.return")
        pools = self.pools(inputs, outputs)
        metadata = {
            "seed": self.seed,
            "use_case": self.use_case,
            "workspace_io": self.use_case == "U4",
            "inputs": [asdict(t) for t in inputs],
            "outputs": [asdict(t) for t in outputs],
            "pools": [asdict(p) for p in pools],
        }
        lines = [METADATA_PREFIX + json.dumps(metadata, sort_keys=True), "builtin.module {"]
        lines += [self.pool_line(p) for p in pools]
        for operator in self.operators:
            lines += operator.lines
        header = ", ".join(f"%{t.name}: {t.mlir_type}" for t in inputs + outputs)
        lines += [f"  func.func @main({header}) {{", *main.body(), "  }", "}"]
        return GeneratedProgram(
            seed=self.seed,
            text="\n".join(lines) + "\n",
            inputs=tuple(inputs),
            outputs=tuple(outputs),
            pools=tuple(pools),
            workspace_io=self.use_case == "U4",
            use_case=self.use_case,
        )

    def pools(self, inputs: list[TensorSpec], outputs: list[TensorSpec]) -> list[PoolSpec]:
        if not self.declare_pools:
            return []
        rng = self.rng
        workspace = sum(
            a.size_bytes + a.alignment for a in self.allocations if a.pool_kind == "workspace"
        )
        workspace += sum(t.size_bytes + 16 for t in inputs + outputs)
        largest = max((a.size_bytes for a in self.allocations), default=16)
        if rng.random() < 0.5:
            fast_capacity = workspace  # everything fits without sharing
        else:
            fast_capacity = rng.randint(largest, max(largest, workspace * 2 // 3))
        pools = [
            PoolSpec("fast", "workspace", fast_capacity, rng.random() < 0.5),
            PoolSpec(
                "slow",
                "workspace",
                None,
                rng.random() < 0.5,
                alignment=rng.choice((None, None, None, None, 4, 64)),
            ),
        ]
        if rng.random() < 0.3:
            pools.append(PoolSpec("accel_mem", "workspace", None, True, ("accel",)))
        if rng.random() < 0.6:
            pools.append(PoolSpec("flash", "constant", None, rng.random() < 0.5))
        return pools

    def pool_line(self, pool: PoolSpec) -> str:
        items: list[str] = []
        if pool.capacity_bytes is not None:
            items.append(f"size_hint_bytes = {pool.capacity_bytes} : i64")
        items.append("targets = [" + ", ".join(f'"{t}"' for t in pool.targets) + "]")
        if pool.alignment is not None:
            items.append(f"alignment = {pool.alignment} : i64")
        if pool.internal:
            items.append("internal")
        return f"  pool.{pool.kind} @{pool.name} {{{', '.join(items)}}}"


def generate_program(seed: int, config: GeneratorConfig | None = None) -> GeneratedProgram:
    """A random valid program; the same seed (and config) always gives the same text."""
    return _Generator(seed, config or GeneratorConfig()).program()
