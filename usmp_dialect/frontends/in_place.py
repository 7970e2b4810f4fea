"""In-place operators, one mechanism for both model frontends.

An operator whose every output element is computed from its inputs' elements at the same index
(an elementwise operator, an activation, QUANTIZE or a requantising copy, ADD/SUB/MUL with an
input of the output's shape) may write its output over such an input: the kernel reads element
i before it writes element i, so the kernels need no change. A frontend records, while it
builds `@main`, the storage each tensor value lives in (its `memref.alloc`, or a
concatenation's byte buffer) and which tensors live there (views included), and asks
`InPlaceStorage.over` for the buffer to write into; `may_overwrite` decides on plain facts:

* the input spans the whole storage, with the output's element count and element size (int8
  quantisation may differ: the operator requantises);
* every tensor living there is read for the last time by this operator (model outputs never);
* no other input of the operator lives there;
* the output is not pinned elsewhere (a model output's argument, a concatenation's slice).

Model inputs are the caller's arguments and constants are globals: neither is ever a storage
of ours. `in_place` of the importers (SPEC §9, `usmp-opt --in-place`) chooses what runs in
place: `all` (the default: elementwise operators, and depthwise convolutions where that lowers
the peak, see `usmp_dialect.graph.in_place`), `elementwise`, or `none` (the program as imported
before in-place operators existed, Concat in place aside).
"""

from __future__ import annotations

from collections.abc import Callable, Hashable, Iterable, Mapping
from dataclasses import dataclass
from typing import Generic, TypeVar

from xdsl.dialects import func
from xdsl.dialects.builtin import MemRefType, ModuleOp
from xdsl.ir import SSAValue

from usmp_dialect.dialects.usmp import buffer_size_bytes
from usmp_dialect.frontends.options import IN_PLACE_MODES


@dataclass(frozen=True)
class Overwrite:
    """What decides whether operator `operator_index` may write its output over an input."""

    operator_index: int
    input_spans_storage: bool
    input_elements: int
    output_elements: int
    input_element_bytes: int
    output_element_bytes: int
    storage_last_read: float
    """The last operator reading any tensor that lives in the input's storage."""
    storage_read_by_other_input: bool
    output_pinned: bool
    """The output is a model output or a concatenation's slice."""
    smaller_output: bool = False
    """The output may have fewer elements (written over the input's first bytes: a strided
    depthwise convolution in place)."""


def may_overwrite(facts: Overwrite) -> bool:
    """Whether the operator may write its output over the input (see the module doc)."""
    return (
        facts.input_spans_storage
        and (
            facts.input_elements == facts.output_elements
            or (facts.smaller_output and facts.input_elements > facts.output_elements)
        )
        and facts.input_element_bytes == facts.output_element_bytes
        and facts.storage_last_read <= facts.operator_index
        and not facts.storage_read_by_other_input
        and not facts.output_pinned
    )


def element_bytes(type_: MemRefType) -> int:
    return buffer_size_bytes(MemRefType(type_.element_type, [1]))


K = TypeVar("K", bound=Hashable)


class InPlaceStorage(Generic[K]):
    """The storage of each tensor value of `@main` and the tensors (keys `K`) living in each,
    for `over`. `last_read[tensor]` is the index of the last operator reading the tensor
    (infinity for a model output; a tensor nobody reads is absent)."""

    def __init__(self, last_read: Mapping[K, float], enabled: bool = True) -> None:
        self.last_read = last_read
        self.enabled = enabled
        self._storage: dict[SSAValue, SSAValue] = {}
        self._tenants: dict[SSAValue, list[K]] = {}
        self._whole: set[SSAValue] = set()

    def lives_in(self, tensor: K, value: SSAValue, storage: SSAValue, whole: bool) -> None:
        """`tensor` is `value`, which lives in `storage` (all of it when `whole`)."""
        self._storage[value] = storage
        self._tenants.setdefault(storage, []).append(tensor)
        if whole:
            self._whole.add(value)

    def alias(self, tensor: K, view: SSAValue, value: SSAValue) -> None:
        """`tensor` is `view`, another shape of `value` (a reshape)."""
        storage = self._storage.get(value)
        if storage is not None:
            self.lives_in(tensor, view, storage, whole=value in self._whole)

    def over(
        self,
        operator_index: int,
        output: K,
        output_type: MemRefType,
        value: SSAValue,
        others: Iterable[SSAValue],
        pinned: bool,
        view: Callable[[SSAValue, tuple[int, ...]], SSAValue],
        dry_run: bool = False,
        smaller_output: bool = False,
    ) -> SSAValue | None:
        """The input `value` seen with `output_type`'s shape (`view`), when operator
        `operator_index` may write its `output` over it (`may_overwrite`; `others` are the
        operator's other activation inputs); None otherwise. `dry_run`: `value` itself when it
        may, and nothing is recorded. `smaller_output`: the output may have fewer elements; it
        then lives in the input's first bytes and spans no storage."""
        storage = self._storage.get(value)
        source = value.type
        if not self.enabled or storage is None or not isinstance(source, MemRefType):
            return None
        facts = Overwrite(
            operator_index=operator_index,
            input_spans_storage=value in self._whole,
            input_elements=source.element_count(),
            output_elements=output_type.element_count(),
            input_element_bytes=element_bytes(source),
            output_element_bytes=element_bytes(output_type),
            storage_last_read=max(
                (self.last_read.get(tensor, -1) for tensor in self._tenants[storage]),
                default=-1,
            ),
            storage_read_by_other_input=any(
                self._storage.get(other) is storage for other in others
            ),
            output_pinned=pinned,
            smaller_output=smaller_output,
        )
        if not may_overwrite(facts):
            return None
        if dry_run:
            return value
        viewed = view(value, tuple(output_type.get_shape()))
        whole = facts.input_elements == facts.output_elements
        self.lives_in(output, viewed, storage, whole)
        return viewed


def choose_calls(module: ModuleOp, candidates: Mapping[str, int]) -> frozenset[str]:
    """Of the candidate calls of `@main` (callee -> bytes of the temporary it would need to
    run in place, each writing its one output over its one activation input), those worth
    running in place: `graph.in_place.choose_merges` on the program's operator graph
    (`analysis/operator_graph.py`, the planner's liveness), each candidate merging its output
    buffer into its input's."""
    if not candidates:
        return frozenset()
    from usmp_dialect.analysis.operator_graph import operator_graph
    from usmp_dialect.graph.in_place import Merge, choose_merges

    described = operator_graph(module)
    if described is None:
        return frozenset()
    buffers = described.graph.buffers
    merges: dict[Merge, str] = {}
    for step, op in enumerate(described.operations):
        if not isinstance(op, func.CallOp):
            continue
        callee = op.callee.root_reference.data
        if callee not in candidates:
            continue
        operator = described.graph.operators[step]
        sources = {a.buffer for a in operator.reads if buffers[a.buffer].kind != "constant"}
        targets = {a.buffer for a in operator.writes}
        if len(sources) == 1 and len(targets) == 1:
            merge = Merge(step, sources.pop(), targets.pop(), candidates[callee])
            merges[merge] = callee
    return frozenset(merges[merge] for merge in choose_merges(described.graph, list(merges)))


def _peaks(module: ModuleOp) -> tuple[int, int] | None:
    from usmp_dialect.analysis.operator_graph import operator_graph
    from usmp_dialect.graph.graph import peak_live_bytes
    from usmp_dialect.graph.in_place import with_io_inside

    described = operator_graph(module)
    if described is None:
        return None
    graph = described.graph
    return peak_live_bytes(graph), peak_live_bytes(with_io_inside(graph))


def lowers_peak(before: ModuleOp, after: ModuleOp) -> bool:
    """Whether the program of `after` needs fewer live bytes than `before`'s in one accounting
    of the inputs and outputs and no more in the other: the check that the import with the
    chosen calls in place (whose other decisions may differ a little from those the choice
    assumed) really pays."""
    old, new = _peaks(before), _peaks(after)
    if old is None or new is None:
        return False
    return all(n <= o for n, o in zip(new, old, strict=True)) and new != old


def check_mode(in_place: str) -> str:
    """`in_place` when it is one of `IN_PLACE_MODES`; a ValueError naming them otherwise."""
    if in_place not in IN_PLACE_MODES:
        raise ValueError(f"in-place must be one of {', '.join(IN_PLACE_MODES)}, not '{in_place}'")
    return in_place


__all__ = [
    "IN_PLACE_MODES",
    "InPlaceStorage",
    "Overwrite",
    "check_mode",
    "choose_calls",
    "lowers_peak",
    "may_overwrite",
]
