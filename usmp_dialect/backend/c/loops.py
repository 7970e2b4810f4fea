"""Loop facts that make the printed loops cheap for a microcontroller compiler, exactly.

C compilers must assume that an `int8_t*` store may change any `int32_t` (character types alias
everything), so an accumulator `acc[i]` updated in a reduction loop over int8 data stays in
memory: a load and a store per multiply-accumulate. The planned program knows better: every
memref is a view of a pool, a global or a model argument at a known byte range. From that
provenance (computed once for the module, through the calls from the entry), the printer
decides per `scf.for`:

* **register accumulators**: an element `M[idx]` with loop-invariant indices that the loop
  loads and stores, and that no other access in the loop may touch, is loaded into a local
  before the loop, read and written there, and stored back after it;
* **hoisted loads**: an invariant element the loop only loads, and that no store in the loop
  may touch, is loaded once before the loop.

Both apply only where the moved accesses run on every iteration (no `scf.if` or loop of
unknown trip count between them and the loop) and the loop runs at least once (constant
bounds), so no access happens that the program would not have made, and every value read and
written is the one the program reads and writes: the output is bit for bit the same.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field

from xdsl.dialects import arith, func, memref, scf
from xdsl.dialects.builtin import IntegerAttr, IntegerType, MemRefType
from xdsl.ir import Block, Operation, SSAValue

from usmp_dialect.dialects import pool
from usmp_dialect.dialects.usmp import buffer_size_bytes

Region = tuple[str, int, int]
"""(root, first byte, end byte): `pool:NAME`, `global:NAME` or `io` (every model argument)."""
Provenance = frozenset[Region] | None
"""The regions a memref value may point into (None: unknown, may alias anything)."""

_UNBOUNDED = 1 << 62
_VIEW_LIKE = (
    memref.SubviewOp,
    memref.CastOp,
    memref.ReinterpretCastOp,
    memref.CollapseShapeOp,
    memref.ExpandShapeOp,
    memref.AssumeAlignmentOp,
)
# Ops without memory effects the loop analysis may meet (anything else: no plan for the loop).
_EFFECT_FREE_DIALECTS = ("arith", "math", "scf", "affine")


@dataclass
class Provenances:
    """Where every memref value of the printed functions may point."""

    values: dict[SSAValue, Provenance] = field(default_factory=dict[SSAValue, Provenance])
    readonly_roots: set[str] = field(default_factory=set[str])
    """Roots no valid program writes (constant pools, constant globals)."""

    def of(self, value: SSAValue) -> Provenance:
        return self.values.get(value)

    def disjoint(self, a: SSAValue, b: SSAValue) -> bool:
        """Whether no byte of `a` can be a byte of `b`."""
        regions_a, regions_b = self.of(a), self.of(b)
        if regions_a is None or regions_b is None:
            return False
        return all(
            root_a != root_b or end_a <= start_b or end_b <= start_a
            for root_a, start_a, end_a in regions_a
            for root_b, start_b, end_b in regions_b
        )

    def readonly(self, value: SSAValue) -> bool:
        regions = self.of(value)
        return regions is not None and all(root in self.readonly_roots for root, _, _ in regions)


def _constant_int(value: SSAValue) -> int | None:
    owner = value.owner
    if isinstance(owner, arith.ConstantOp) and isinstance(owner.value, IntegerAttr):
        return owner.value.value.data
    return None


def _union(provenances: Iterable[Provenance]) -> Provenance:
    regions: set[Region] = set()
    for provenance in provenances:
        if provenance is None:
            return None
        regions |= provenance
    return frozenset(regions)


def _callees_last(functions: Sequence[func.FuncOp], entry: func.FuncOp) -> list[func.FuncOp]:
    """The functions in an order where every caller comes before its callees (no recursion)."""
    by_name = {f.sym_name.data: f for f in functions}
    callers: dict[str, set[str]] = {name: set() for name in by_name}
    for function in functions:
        for op in function.walk():
            if isinstance(op, func.CallOp) and op.callee.root_reference.data in by_name:
                callers[op.callee.root_reference.data].add(function.sym_name.data)
    ordered: list[func.FuncOp] = []
    done: set[str] = set()
    pending = [entry.sym_name.data] + [n for n in by_name if n != entry.sym_name.data]
    while pending:
        ready = [n for n in pending if callers[n] <= done or n == entry.sym_name.data]
        if not ready:  # a cycle (rejected elsewhere): give up on its members
            break
        for name in ready:
            pending.remove(name)
            done.add(name)
            ordered.append(by_name[name])
    return ordered


def module_provenances(
    functions: Sequence[func.FuncOp],
    entry: func.FuncOp,
    pools: Sequence[pool.PoolOpBase],
    globals_: Sequence[memref.GlobalOp],
) -> Provenances:
    """The provenance of every memref value in `functions` (the entry and what it calls)."""
    facts = Provenances()
    pool_sizes: dict[str, int] = {}
    for pool_op in pools:
        size = pool_op.size_bytes.value.data if pool_op.size_bytes is not None else _UNBOUNDED
        pool_sizes[pool_op.pool_name] = size
        if isinstance(pool_op, pool.ConstantPoolOp):
            facts.readonly_roots.add(f"pool:{pool_op.pool_name}")
    for global_op in globals_:
        if global_op.constant is not None:
            facts.readonly_roots.add(f"global:{global_op.sym_name.data}")
    arguments: dict[str, list[list[Provenance]]] = {
        f.sym_name.data: [[] for _ in f.function_type.inputs.data] for f in functions
    }
    for function in _callees_last(functions, entry):
        if not function.body.blocks:
            continue
        for arg in function.body.block.args:
            if not isinstance(arg.type, MemRefType):
                continue
            if function is entry:
                facts.values[arg] = frozenset({("io", 0, _UNBOUNDED)})
            else:
                seen = arguments[function.sym_name.data][arg.index]
                facts.values[arg] = _union(seen) if seen else None
        for op in function.walk():
            _propagate(op, facts, pool_sizes, arguments)
    return facts


def _propagate(
    op: Operation,
    facts: Provenances,
    pool_sizes: dict[str, int],
    arguments: dict[str, list[list[Provenance]]],
) -> None:
    if isinstance(op, func.CallOp):
        callee = arguments.get(op.callee.root_reference.data)
        if callee is not None:
            for position, operand in enumerate(op.arguments):
                if position < len(callee) and isinstance(operand.type, MemRefType):
                    callee[position].append(facts.of(operand))
        return
    memref_results = [r for r in op.results if isinstance(r.type, MemRefType)]
    if not memref_results:
        return
    result = memref_results[0]
    provenance: Provenance = None
    if isinstance(op, pool.BaseOp):
        name = op.pool.root_reference.data
        provenance = frozenset({(f"pool:{name}", 0, pool_sizes.get(name, _UNBOUNDED))})
    elif isinstance(op, memref.GetGlobalOp):
        assert isinstance(result.type, MemRefType)
        name = op.name_.root_reference.data
        provenance = frozenset({(f"global:{name}", 0, buffer_size_bytes(result.type))})
    elif isinstance(op, memref.ViewOp):
        source = facts.of(op.source)
        shift = _constant_int(op.byte_shift)
        assert isinstance(result.type, MemRefType)
        if source is not None and shift is not None:
            size = buffer_size_bytes(result.type)
            provenance = frozenset(
                (root, start + shift, start + shift + size) for root, start, _ in source
            )
        else:
            provenance = source
    elif isinstance(op, memref.ReinterpretCastOp):
        source = facts.of(op.source)
        extent = _reinterpreted_extent(op)
        if source is not None and extent is not None:
            first, end = extent
            provenance = frozenset((root, start + first, start + end) for root, start, _ in source)
        elif source is not None:  # it may reach outside the source: anywhere in its roots
            provenance = frozenset((root, 0, _UNBOUNDED) for root, _, _ in source)
    elif isinstance(op, _VIEW_LIKE):
        provenance = facts.of(op.operands[0])
    elif isinstance(op, arith.SelectOp):
        provenance = _union([facts.of(op.lhs), facts.of(op.rhs)])
    for memref_result in memref_results:
        facts.values[memref_result] = provenance


def _reinterpreted_extent(op: memref.ReinterpretCastOp) -> tuple[int, int] | None:
    """The bytes a `memref.reinterpret_cast` reaches, relative to its source's first element
    (the C pointer is the source's plus the offset difference; None: not static)."""
    source_type, result_type = op.source.type, op.result.type
    if not isinstance(source_type, MemRefType) or not isinstance(result_type, MemRefType):
        return None
    source_offset = source_type.get_offset()
    strides = result_type.get_strides()
    offsets = op.static_offsets.get_values()
    if source_offset is None or strides is None or op.offsets or len(offsets) != 1:
        return None
    shape = result_type.get_shape()
    if any(s is None or s < 0 for s in strides) or any(d <= 0 for d in shape):
        return None
    element_bytes = buffer_size_bytes(MemRefType(result_type.element_type, [1]))
    last = sum((d - 1) * int(s) for d, s in zip(shape, strides, strict=True) if s is not None)
    first = (offsets[0] - source_offset) * element_bytes
    return first, first + (last + 1) * element_bytes


# ---- loops -----------------------------------------------------------------------------------

IndexKey = tuple[object, ...]
"""The indices of an access: an int for a constant, else the SSA value."""


@dataclass(frozen=True)
class Access:
    op: Operation
    memref: SSAValue
    indices: IndexKey | None  # None: the whole memref (memref.copy)
    is_store: bool


@dataclass
class LoopPlan:
    """What the printer moves out of one `scf.for`."""

    accumulators: list[tuple[SSAValue, IndexKey, Sequence[SSAValue]]] = field(
        default_factory=list[tuple[SSAValue, IndexKey, Sequence[SSAValue]]]
    )
    """(memref, index key, index values) kept in a local across the loop."""
    hoisted: list[memref.LoadOp] = field(default_factory=list[memref.LoadOp])
    """Loads done once before the loop (the first of each element; `same_load` finds the rest)."""
    same_load: dict[memref.LoadOp, memref.LoadOp] = field(
        default_factory=dict[memref.LoadOp, memref.LoadOp]
    )


def static_trip_count(loop: scf.ForOp) -> int | None:
    lower, upper, step = (_constant_int(v) for v in (loop.lb, loop.ub, loop.step))
    if lower is None or upper is None or step is None or step <= 0:
        return None
    return max(0, (upper - lower + step - 1) // step)


def _defined_outside(value: SSAValue, loop: Operation) -> bool:
    owner = value.owner
    defining = owner.parent_op() if isinstance(owner, Block) else owner
    return defining is not None and not loop.is_ancestor(defining)


def index_key(indices: Sequence[SSAValue]) -> IndexKey:
    return tuple(
        known if (known := _constant_int(index)) is not None else index for index in indices
    )


def _runs_every_iteration(op: Operation, loop: scf.ForOp) -> bool:
    """Whether `op` runs on every iteration of `loop`: only loops that run at least once lie
    between them."""
    parent = op.parent_op()
    while parent is not None and parent is not loop:
        if not isinstance(parent, scf.ForOp) or not static_trip_count(parent):
            return False
        parent = parent.parent_op()
    return parent is loop


def _accesses(loop: scf.ForOp) -> list[Access] | None:
    """Every memory access in the loop (None when an op may have effects we do not model)."""
    accesses: list[Access] = []
    for op in loop.body.walk():
        if isinstance(op, memref.LoadOp):
            accesses.append(Access(op, op.memref, index_key(op.indices), False))
        elif isinstance(op, memref.StoreOp):
            accesses.append(Access(op, op.memref, index_key(op.indices), True))
        elif isinstance(op, memref.CopyOp):
            accesses.append(Access(op, op.source, None, False))
            accesses.append(Access(op, op.destination, None, True))
        elif isinstance(
            op, (memref.ViewOp, memref.DimOp, memref.GetGlobalOp, pool.BaseOp, *_VIEW_LIKE)
        ):
            continue
        elif op.name.split(".")[0] not in _EFFECT_FREE_DIALECTS:
            return None  # a call or an op whose effects we do not model
    return accesses


def _independent(other: Access, value: SSAValue, written: bool, facts: Provenances) -> bool:
    """Whether `other` cannot touch the element of `value` a loop moves (`written`: the loop
    stores it)."""
    if other.memref is value:
        return False  # the same buffer at other indices: not provably apart
    if written and not other.is_store and facts.readonly(other.memref):
        return True  # a read of read-only memory: never the element being written
    return facts.disjoint(other.memref, value)


def plan_loop(
    loop: scf.ForOp,
    facts: Provenances,
    promoted: set[tuple[SSAValue, IndexKey]],
    hoisted: set[Operation],
) -> LoopPlan:
    """The accumulators and hoisted loads of `loop`. `promoted`: elements an enclosing loop
    already keeps in a local, `hoisted`: loads an enclosing loop already made (neither is a
    memory access any more)."""
    plan = LoopPlan()
    if not static_trip_count(loop):
        return plan
    accesses = _accesses(loop)
    if accesses is None:
        return plan
    accesses = [
        a
        for a in accesses
        if a.op not in hoisted and (a.indices is None or (a.memref, a.indices) not in promoted)
    ]
    groups: dict[tuple[SSAValue, IndexKey], list[Access]] = {}
    for access in accesses:
        if (
            access.indices is not None
            and _defined_outside(access.memref, loop)
            and all(
                not isinstance(i, SSAValue) or _defined_outside(i, loop) for i in access.indices
            )
        ):
            groups.setdefault((access.memref, access.indices), []).append(access)
    for (value, key), members in groups.items():
        if not all(_runs_every_iteration(a.op, loop) for a in members):
            continue
        stores = any(a.is_store for a in members)
        others = [a for a in accesses if a not in members]

        if stores:
            if all(_independent(other, value, True, facts) for other in others):
                first = next(
                    a.op for a in members if isinstance(a.op, memref.LoadOp | memref.StoreOp)
                )
                assert isinstance(first, memref.LoadOp | memref.StoreOp)
                plan.accumulators.append((value, key, tuple(first.indices)))
        elif all(_independent(other, value, False, facts) for other in others if other.is_store):
            loads = [a.op for a in members if isinstance(a.op, memref.LoadOp)]
            if loads:
                plan.hoisted.append(loads[0])
                for load in loads[1:]:
                    plan.same_load[load] = loads[0]
    return plan


FULL_UNROLL_ITERATIONS = 16
"""A loop nest of at most this many iterations is unrolled completely (a 3x3 window)."""
INNER_UNROLL = 16
"""How far longer innermost loops are unrolled (loop overhead per element / 4)."""


def nest_iterations(loop: scf.ForOp) -> int | None:
    """How often the innermost body of `loop`'s nest runs per run of `loop` (None: unknown)."""
    trips = static_trip_count(loop)
    if trips is None:
        return None
    inner = 1
    for op in loop.body.block.ops:
        if isinstance(op, scf.ForOp):
            nested = nest_iterations(op)
            if nested is None:
                return None
            inner = max(inner, nested)
        elif op.regions:
            return None  # an scf.if or while: not a plain nest
    return trips * inner


def unroll_factor(loop: scf.ForOp) -> int | None:
    """The `#pragma GCC unroll` for `loop`: a small nest completely, an innermost loop by
    `INNER_UNROLL` (None: leave it to the compiler)."""
    iterations = nest_iterations(loop)
    trips = static_trip_count(loop)
    if iterations is None or trips is None or trips < 2:
        return None
    if iterations <= FULL_UNROLL_ITERATIONS:
        return trips
    innermost = not any(isinstance(op, scf.ForOp) for op in loop.body.block.ops)
    return INNER_UNROLL if innermost and trips >= 2 * INNER_UNROLL else None


@dataclass(frozen=True)
class DotProduct:
    """int8 dot products over one loop of step 1 of at least 4 iterations, sharing
    their inputs: for every term `(accumulator, a, b)`, `acc += sext(a[k]) * sext(b[k])` with
    `a` and `b` among `inputs`, each contiguous in k. The accumulators are the loop's carried
    values (`accumulator` None; term `i` sums into carried value `accumulator` of term `i`), or
    one element the printer keeps in a local (`accumulator`, one term). Several terms are a
    register block (two output channels x two positions of a convolution: each input word is
    loaded and widened once for two products). The printer adds a Cortex-M DSP variant (two
    `SMLAD`s per four elements and term, the last `trips % 4` elements by the portable body):
    the same sums modulo 2**32."""

    inputs: tuple[memref.LoadOp, ...]
    terms: tuple[tuple[int, int, int], ...]
    """(accumulator position, input position, input position) of every product."""
    accumulator: tuple[SSAValue, IndexKey] | None
    offsets: tuple[int, ...] = ()
    """A constant each input's elements are offset by before the product (`sext(a[k]) + c`,
    a quantised input's zero point; empty: none). The sums fit 16 bits: the DSP variant adds
    them while widening (`SXTAB16`)."""


def _contiguous_int8_load(
    loop: scf.ForOp, load: memref.LoadOp, strides: Callable[[SSAValue], Sequence[int]]
) -> bool:
    """Whether `load` reads int8 elements contiguous in the loop's induction variable, its
    other indices invariant."""
    if not (isinstance(load.res.type, IntegerType) and load.res.type.width.data == 8):
        return False
    iv = loop.body.block.args[0]
    positions = [p for p, index in enumerate(load.indices) if index is iv]
    others = [i for p, i in enumerate(load.indices) if p not in positions]
    if len(positions) != 1 or strides(load.memref)[positions[0]] != 1:
        return False
    return all(_defined_outside(i, loop) for i in others)


OFFSET_LIMIT = 32767 - 128
"""The largest offset of an int8 input whose sums still fit an int16 half of `SXTAB16`."""


def _offset_input(
    value: SSAValue, loop: scf.ForOp, strides: Callable[[SSAValue], Sequence[int]]
) -> tuple[list[Operation], memref.LoadOp, int] | None:
    """`_widened_input`, or that plus a constant (`sext(load) + c`, used by products only,
    |c| <= OFFSET_LIMIT): the ops, the load and the offset."""
    total = value.owner
    if isinstance(total, arith.AddiOp):
        offset = _constant_int(total.rhs)
        if offset is None or abs(offset) > OFFSET_LIMIT:
            return None
        if not all(isinstance(use.operation, arith.MuliOp) for use in total.result.uses):
            return None
        widened = _widened_input(total.lhs, loop, strides, (arith.AddiOp,))
        if widened is None or widened[0].result.uses.get_length() != 1:
            return None
        return [total, *widened], widened[1], offset
    widened = _widened_input(value, loop, strides)
    return None if widened is None else (list(widened), widened[1], 0)


def _widened_input(
    value: SSAValue,
    loop: scf.ForOp,
    strides: Callable[[SSAValue], Sequence[int]],
    users: tuple[type[Operation], ...] = (arith.MuliOp,),
) -> tuple[arith.ExtSIOp, memref.LoadOp] | None:
    """The sign extension to i32 of a contiguous int8 load that `value` is (the load used by
    the extension only, the extension by `users` only: products)."""
    extend = value.owner
    if not isinstance(extend, arith.ExtSIOp) or extend.result.type != IntegerType(32):
        return None
    load = extend.input.owner
    if not isinstance(load, memref.LoadOp) or load.res.uses.get_length() != 1:
        return None
    if not _contiguous_int8_load(loop, load, strides):
        return None
    if not all(isinstance(use.operation, users) for use in extend.result.uses):
        return None
    return extend, load


def _carried_dot_products(
    loop: scf.ForOp, strides: Callable[[SSAValue], Sequence[int]]
) -> DotProduct | None:
    """`acc_i' = acc_i + x * w` for every carried value, the products' inputs shared."""
    carried = loop.body.block.args[1:]
    yielded = loop.body.block.last_op
    if not carried or not isinstance(yielded, scf.YieldOp):
        return None
    inputs: list[memref.LoadOp] = []
    offsets: list[int] = []
    members: set[Operation] = {yielded}
    terms: list[tuple[int, int, int]] = []
    for position, (argument, result) in enumerate(zip(carried, yielded.operands, strict=True)):
        total = result.owner
        if not isinstance(total, arith.AddiOp) or total.result.type != IntegerType(32):
            return None
        if total.result.uses.get_length() != 1 or argument.uses.get_length() != 1:
            return None
        if total.lhs is argument:
            product = total.rhs.owner
        elif total.rhs is argument:
            product = total.lhs.owner
        else:
            return None
        if not isinstance(product, arith.MuliOp) or product.result.uses.get_length() != 1:
            return None
        pair: list[int] = []
        for operand in (product.lhs, product.rhs):
            widened = _offset_input(operand, loop, strides)
            if widened is None:
                return None
            ops, load, offset = widened
            if load not in inputs:
                inputs.append(load)
                offsets.append(offset)
            elif offsets[inputs.index(load)] != offset:
                return None
            members |= {*ops, load}
            pair.append(inputs.index(load))
        members |= {total, product}
        terms.append((position, pair[0], pair[1]))
    if any(op not in members for op in loop.body.block.ops):
        return None  # anything else in the body: not a pure dot product
    return DotProduct(tuple(inputs), tuple(terms), None, tuple(offsets) if any(offsets) else ())


LANE_SUM_TRIPS = 256
"""The most iterations of an int8 lane sum: 256 * -128 still fits an int16 half of `SXTAB16`."""

LANES = 4
"""Bytes of one 32-bit word: the sums a lane sum loop carries."""


@dataclass(frozen=True)
class LaneSums:
    """Four int8 sums over one loop of step 1 and at most `LANE_SUM_TRIPS` iterations: carried
    value `k` plus `sext(m[..., c + k])`, the four loads of one memref equal but in their last
    index (`c` and `c + k`, computed before the loop), which has stride 1 — four consecutive
    bytes, one word (a global pool's four channels at one tap). The printer adds a Cortex-M DSP
    variant: per iteration one word load and two `SXTAB16`s into two words of int16 halves
    (bytes 0 and 2, bytes 1 and 3), added to the carried values after the loop; the sums fit
    the halves, so they are the same integers."""

    first: memref.LoadOp
    """The load of byte 0 (the word's address)."""


def _plus_constant(value: SSAValue, base: SSAValue) -> int | None:
    """`k` when `value` is `base + k` (or `base` itself: 0)."""
    if value is base:
        return 0
    total = value.owner
    if not isinstance(total, arith.AddiOp) or total.lhs is not base:
        return None
    return _constant_int(total.rhs)


def int8_lane_sums(
    loop: scf.ForOp, strides: Callable[[SSAValue], Sequence[int]]
) -> LaneSums | None:
    """The four byte sums `loop` is (None when it is anything else)."""
    trips = static_trip_count(loop)
    if not trips or trips > LANE_SUM_TRIPS or _constant_int(loop.step) != 1:
        return None
    carried = loop.body.block.args[1:]
    yielded = loop.body.block.last_op
    if len(carried) != LANES or not isinstance(yielded, scf.YieldOp):
        return None
    loads: list[memref.LoadOp] = []
    members: set[Operation] = {yielded}
    for argument, result in zip(carried, yielded.operands, strict=True):
        total = result.owner
        if not isinstance(total, arith.AddiOp) or total.result.type != IntegerType(32):
            return None
        if total.result.uses.get_length() != 1 or argument.uses.get_length() != 1:
            return None
        other = total.rhs if total.lhs is argument else total.lhs
        if argument not in (total.lhs, total.rhs) or other is argument:
            return None
        extend = other.owner
        if not isinstance(extend, arith.ExtSIOp) or extend.result.uses.get_length() != 1:
            return None
        load = extend.input.owner
        if not isinstance(load, memref.LoadOp) or load.res.uses.get_length() != 1:
            return None
        if load.res.type != IntegerType(8):
            return None
        loads.append(load)
        members |= {total, extend, load}
    if any(op not in members for op in loop.body.block.ops):
        return None  # anything else in the body: not a plain sum
    first = loads[0]
    if strides(first.memref)[-1] != 1 or not first.indices:
        return None
    base = first.indices[-1]
    if not _defined_outside(base, loop):
        return None
    for k, load in enumerate(loads):
        if load.memref is not first.memref or len(load.indices) != len(first.indices):
            return None
        if any(a is not b for a, b in zip(load.indices[:-1], first.indices[:-1], strict=True)):
            return None
        if _plus_constant(load.indices[-1], base) != k:
            return None
        if not _defined_outside(load.indices[-1], loop):
            return None
    return LaneSums(first)


def int8_dot_product(
    loop: scf.ForOp,
    accumulators: set[tuple[SSAValue, IndexKey]],
    strides: Callable[[SSAValue], Sequence[int]],
) -> DotProduct | None:
    """The dot products `loop` is (None when it is anything else); `accumulators`: the elements
    the printer keeps in locals across `loop`."""
    trips = static_trip_count(loop)
    if not trips or trips < 4 or _constant_int(loop.step) != 1:
        return None
    if len(loop.body.block.args) > 1:
        return _carried_dot_products(loop, strides)
    ops = [op for op in loop.body.block.ops if not isinstance(op, scf.YieldOp)]
    loads = [op for op in ops if isinstance(op, memref.LoadOp)]
    products = [op for op in ops if isinstance(op, arith.MuliOp)]
    sums = [op for op in ops if isinstance(op, arith.AddiOp)]
    stores = [op for op in ops if isinstance(op, memref.StoreOp)]
    if len(ops) != 8 or (len(loads), len(products), len(sums), len(stores)) != (3, 1, 1, 1):
        return None
    # acc[idx] = acc[idx] + x * w, the element kept in a local
    (store,), (product,), (total,) = stores, products, sums
    key = (store.memref, index_key(store.indices))
    if key not in accumulators or store.value is not total.result:
        return None
    partial = [load for load in loads if (load.memref, index_key(load.indices)) == key]
    if len(partial) != 1 or partial[0].res.uses.get_length() != 1:
        return None
    if {total.lhs, total.rhs} != {partial[0].res, product.result}:
        return None
    if product.result.uses.get_length() != 1:
        return None
    widened = [_widened_input(v, loop, strides) for v in (product.lhs, product.rhs)]
    if widened[0] is None or widened[1] is None or widened[0][1] is widened[1][1]:
        return None
    return DotProduct((widened[0][1], widened[1][1]), ((0, 0, 1),), key)
