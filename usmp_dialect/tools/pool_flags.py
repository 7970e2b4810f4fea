"""The pool flags of `usmp-opt` (SPEC §6): parse them, then declare their pools in each module.

Every flag takes comma-separated items and may be repeated:

    --workspace-pools=sram,dram --workspace-pools-targets=sram:c,sram:accel
    --workspace-pools-size-hint-bytes=sram:65536 --workspace-pools-target-burst-bytes=sram:c:8
    --constant-pools=flash --internal-pools=dram
    --state-pools=persistent --state-pools-size-hint-bytes=persistent:4096
    --workspace-pools-section=dram:.dtcm

Parsing is plain data (`PoolDeclaration`); only `declare_pools` builds IR.
"""

from __future__ import annotations

import argparse
import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import NamedTuple

from xdsl.dialects.builtin import ModuleOp
from xdsl.utils.exceptions import DiagnosticException

POOL_KINDS = ("workspace", "constant", "state")
DEFAULT_TARGETS = ("c",)


class IntegerPropertyFlag(NamedTuple):
    """A flag setting an integer pool property."""

    prop: str
    help: str


# flag suffix (after `--workspace-pools-` / `--constant-pools-`) -> the property it sets
INTEGER_PROPERTY_FLAGS: dict[str, IntegerPropertyFlag] = {
    "size-hint-bytes": IntegerPropertyFlag("size_hint_bytes", "hard capacity of the pool in bytes"),
    "clock-frequency-hz": IntegerPropertyFlag(
        "clock_frequency_hz", "clock frequency of the memory in Hz"
    ),
    "read-bandwidth-bytes-per-cycle": IntegerPropertyFlag(
        "read_bandwidth_bytes_per_cycle", "read bandwidth in bytes per cycle"
    ),
    "write-bandwidth-bytes-per-cycle": IntegerPropertyFlag(
        "write_bandwidth_bytes_per_cycle", "write bandwidth in bytes per cycle"
    ),
    "read-latency-cycles": IntegerPropertyFlag("read_latency_cycles", "read latency in cycles"),
    "write-latency-cycles": IntegerPropertyFlag("write_latency_cycles", "write latency in cycles"),
}

# Pool names become C identifiers (`<P>_<POOL>_WORKSPACE_POOL_SIZE`), so flags accept only those.
_POOL_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
_TARGET_NAME = re.compile(r"[A-Za-z0-9_.\-]+")
_UNSIGNED = re.compile(r"[0-9]+")
_I64_MAX = 2**63 - 1


class PoolFlagError(Exception):
    """A pool flag the user got wrong; the message is one line naming the flag."""


@dataclass(frozen=True)
class PoolDeclaration:
    """One pool declared on the command line, with the properties its flags gave it."""

    kind: str
    """`workspace`, `constant` or `state`."""
    name: str
    targets: tuple[str, ...]
    integer_properties: tuple[tuple[str, int], ...]
    """(property name, value) pairs in `INTEGER_PROPERTY_FLAGS` order."""
    target_burst_bytes: tuple[tuple[str, int], ...]
    """(target, burst size in bytes) pairs in the order given."""
    internal: bool
    section: str | None = None
    """The linker section of an internal pool (SPEC §11)."""


def workspace_size_hint_bytes(declarations: Sequence[PoolDeclaration]) -> int | None:
    """The bytes a model import may plan for its activations (SPEC §12): the size hints of the
    declared workspace pools added up (exact for one pool); None unless every one has a hint."""
    hints = [
        dict(declaration.integer_properties).get("size_hint_bytes")
        for declaration in declarations
        if declaration.kind == "workspace"
    ]
    if not hints or any(hint is None for hint in hints):
        return None
    return sum(hint for hint in hints if hint is not None)


def _dest(flag: str) -> str:
    return flag.removeprefix("--").replace("-", "_")


def add_pool_arguments(parser: argparse.ArgumentParser) -> None:
    """Adds the pool flags of SPEC §6 to `parser`, in their own help section."""
    group = parser.add_argument_group(
        "memory pools",
        "Declare pools at the start of every module (every --split-input-file chunk) before "
        "the passes run. Each flag takes comma-separated items and may be repeated. Pools are "
        "external (the application provides their memory) unless named in --internal-pools; "
        "a pool of the same name declared in the input is an error.",
    )

    def add_list_flag(flag: str, metavar: str, help_text: str) -> None:
        group.add_argument(
            flag, dest=_dest(flag), action="append", default=[], metavar=metavar, help=help_text
        )

    for kind in POOL_KINDS:
        prefix = f"--{kind}-pools"
        add_list_flag(
            prefix,
            "NAME[,NAME...]",
            f"declare {kind} pools, in preference order",
        )
        add_list_flag(
            f"{prefix}-targets",
            "POOL:TARGET[,...]",
            f"targets that may use a {kind} pool (repeat POOL:TARGET for several); "
            f"default: {','.join(DEFAULT_TARGETS)}",
        )
        for suffix, integer_flag in INTEGER_PROPERTY_FLAGS.items():
            add_list_flag(f"{prefix}-{suffix}", "POOL:N[,...]", integer_flag.help)
        add_list_flag(
            f"{prefix}-target-burst-bytes",
            "POOL:TARGET:N[,...]",
            "burst size in bytes of a target accessing the pool",
        )
        add_list_flag(
            f"{prefix}-section",
            "POOL:SECTION[,...]",
            f"linker section of an internal {kind} pool's C array, e.g. sram:.dtcm",
        )
    add_list_flag(
        "--internal-pools",
        "NAME[,NAME...]",
        "pools declared by the flags above that the generated code defines itself",
    )


def _items(values: Sequence[str], flag: str) -> list[str]:
    items = [item for value in values for item in value.split(",")]
    for item in items:
        if not item:
            raise PoolFlagError(f"{flag} has an empty item")
    return items


def _split(item: str, flag: str, form: str) -> list[str]:
    parts = item.split(":")
    if len(parts) != form.count(":") + 1 or not all(parts):
        raise PoolFlagError(f"invalid {flag} item '{item}': expected {form}")
    return parts


def _integer(text: str, item: str, flag: str, minimum: int) -> int:
    if not _UNSIGNED.fullmatch(text):
        raise PoolFlagError(f"invalid {flag} item '{item}': '{text}' is not a non-negative integer")
    value = int(text)
    if value < minimum:
        raise PoolFlagError(f"invalid {flag} item '{item}': the value must be >= {minimum}")
    if value > _I64_MAX:
        raise PoolFlagError(f"invalid {flag} item '{item}': the value does not fit in 64 bits")
    return value


def _check_target(target: str, item: str, flag: str) -> None:
    if not _TARGET_NAME.fullmatch(target):
        raise PoolFlagError(f"invalid {flag} item '{item}': '{target}' is not a target name")


class _KindFlags:
    """The pools of one kind and the properties their flags give them."""

    def __init__(self, kind: str, names: list[str]):
        self.kind = kind
        self.flag = f"--{kind}-pools"
        self.names = names
        self.targets: dict[str, list[str]] = {name: [] for name in names}
        self.integers: dict[str, dict[str, int]] = {name: {} for name in names}
        self.bursts: dict[str, dict[str, int]] = {name: {} for name in names}
        self.sections: dict[str, str] = {}

    def check_listed(self, pool: str, flag: str, others: Sequence[_KindFlags]) -> None:
        if pool in self.targets:
            return
        kinds = [other.kind for other in others if pool in other.targets]
        hint = f" (it is a {kinds[0]} pool)" if kinds else ""
        raise PoolFlagError(f"{flag} names pool '{pool}', which is not listed in {self.flag}{hint}")


def _pool_names(args: argparse.Namespace, flag: str) -> list[str]:
    names: list[str] = []
    for name in _items(getattr(args, _dest(flag)), flag):
        if not _POOL_NAME.fullmatch(name):
            raise PoolFlagError(
                f"{flag}: pool name '{name}' is not an identifier ([A-Za-z_][A-Za-z0-9_]*)"
            )
        if name in names:
            raise PoolFlagError(f"{flag} lists pool '{name}' twice")
        names.append(name)
    return names


def _read_properties(
    args: argparse.Namespace, pools: _KindFlags, other: Sequence[_KindFlags]
) -> None:
    from usmp_dialect.dialects.pool import POOL_INTEGER_PROPERTIES

    flag = f"{pools.flag}-targets"
    for item in _items(getattr(args, _dest(flag)), flag):
        pool, target = _split(item, flag, "POOL:TARGET")
        pools.check_listed(pool, flag, other)
        _check_target(target, item, flag)
        if target in pools.targets[pool]:
            raise PoolFlagError(f"{flag} gives target '{target}' twice for pool '{pool}'")
        pools.targets[pool].append(target)

    for suffix, (prop, _) in INTEGER_PROPERTY_FLAGS.items():
        flag = f"{pools.flag}-{suffix}"
        for item in _items(getattr(args, _dest(flag)), flag):
            pool, text = _split(item, flag, "POOL:N")
            pools.check_listed(pool, flag, other)
            value = _integer(text, item, flag, POOL_INTEGER_PROPERTIES[prop])
            if prop in pools.integers[pool]:
                raise PoolFlagError(f"{flag} gives pool '{pool}' a value twice")
            pools.integers[pool][prop] = value

    flag = f"{pools.flag}-target-burst-bytes"
    for item in _items(getattr(args, _dest(flag)), flag):
        pool, target, text = _split(item, flag, "POOL:TARGET:N")
        pools.check_listed(pool, flag, other)
        _check_target(target, item, flag)
        targets = pools.targets[pool] or list(DEFAULT_TARGETS)
        if target not in targets:
            raise PoolFlagError(
                f"invalid {flag} item '{item}': '{target}' is not a target of pool '{pool}' "
                f"(its targets: {','.join(targets)})"
            )
        value = _integer(text, item, flag, 1)
        if target in pools.bursts[pool]:
            raise PoolFlagError(f"{flag} gives target '{target}' of pool '{pool}' twice")
        pools.bursts[pool][target] = value

    from usmp_dialect.dialects.pool import SECTION_NAME

    flag = f"{pools.flag}-section"
    for item in _items(getattr(args, _dest(flag)), flag):
        pool, section = _split(item, flag, "POOL:SECTION")
        pools.check_listed(pool, flag, other)
        if not SECTION_NAME.fullmatch(section):
            raise PoolFlagError(
                f"invalid {flag} item '{item}': '{section}' is not a linker section name"
            )
        if pool in pools.sections:
            raise PoolFlagError(f"{flag} gives pool '{pool}' a section twice")
        pools.sections[pool] = section


def pool_declarations(args: argparse.Namespace) -> tuple[PoolDeclaration, ...]:
    """The pools the flags declare: workspace pools, then constant pools, then state pools,
    each in flag order.

    Raises `PoolFlagError` on the first mistake.
    """
    kinds = [_KindFlags(kind, _pool_names(args, f"--{kind}-pools")) for kind in POOL_KINDS]
    for position, pools in enumerate(kinds):
        for later in kinds[position + 1 :]:
            for name in pools.names:
                if name in later.names:
                    raise PoolFlagError(
                        f"pool '{name}' is listed in both {pools.flag} and {later.flag}"
                    )
    for pools in kinds:
        _read_properties(args, pools, [other for other in kinds if other is not pools])

    internal: list[str] = []
    for name in _items(args.internal_pools, "--internal-pools"):
        if not any(name in pools.names for pools in kinds):
            raise PoolFlagError(
                f"--internal-pools names pool '{name}', which is not declared by "
                "--workspace-pools, --constant-pools or --state-pools"
            )
        if name in internal:
            raise PoolFlagError(f"--internal-pools lists pool '{name}' twice")
        internal.append(name)
    for pools in kinds:
        for name in pools.sections:
            if name not in internal:
                raise PoolFlagError(
                    f"--{pools.kind}-pools-section places pool '{name}', which is external "
                    "(the application defines its memory); name it in --internal-pools"
                )

    declarations: list[PoolDeclaration] = []
    for pools in kinds:
        for name in pools.names:
            integers = pools.integers[name]
            declarations.append(
                PoolDeclaration(
                    kind=pools.kind,
                    name=name,
                    targets=tuple(pools.targets[name]) or DEFAULT_TARGETS,
                    integer_properties=tuple(
                        (prop, integers[prop])
                        for prop, _ in INTEGER_PROPERTY_FLAGS.values()
                        if prop in integers
                    ),
                    target_burst_bytes=tuple(pools.bursts[name].items()),
                    internal=name in internal,
                    section=pools.sections.get(name),
                )
            )
    return tuple(declarations)


def declare_pools(module: ModuleOp, declarations: Sequence[PoolDeclaration]) -> None:
    """Inserts the declared pools at the start of `module`, in order.

    Raises a `DiagnosticException` when the module already has a symbol of the same name.
    """
    if not declarations:
        return
    from xdsl.dialects.builtin import (
        ArrayAttr,
        DictionaryAttr,
        IntegerAttr,
        StringAttr,
        UnitAttr,
    )
    from xdsl.ir import Attribute

    from usmp_dialect.dialects.pool import ConstantPoolOp, StatePoolOp, WorkspacePoolOp

    symbols: dict[str, str] = {}
    for op in module.ops:
        sym_name = op.properties.get("sym_name") or op.attributes.get("sym_name")
        if isinstance(sym_name, StringAttr):
            symbols.setdefault(sym_name.data, op.name)
    for declaration in declarations:
        if declaration.name in symbols:
            raise DiagnosticException(
                f"pool @{declaration.name} of --{declaration.kind}-pools is also declared in "
                f"the input (by '{symbols[declaration.name]}')"
            )

    pool_ops = []
    for declaration in declarations:
        properties: dict[str, Attribute] = {
            "sym_name": StringAttr(declaration.name),
            "targets": ArrayAttr(StringAttr(target) for target in declaration.targets),
        }
        for prop, value in declaration.integer_properties:
            properties[prop] = IntegerAttr(value, 64)
        if declaration.target_burst_bytes:
            properties["target_burst_bytes"] = DictionaryAttr(
                {target: IntegerAttr(value, 64) for target, value in declaration.target_burst_bytes}
            )
        if declaration.internal:
            properties["internal"] = UnitAttr()
        if declaration.section is not None:
            properties["section"] = StringAttr(declaration.section)
        op_type = {"workspace": WorkspacePoolOp, "constant": ConstantPoolOp}.get(
            declaration.kind, StatePoolOp
        )
        pool_ops.append(op_type.create(properties=properties))

    block = module.body.block
    first_op = block.first_op
    if first_op is None:
        block.add_ops(pool_ops)
    else:
        block.insert_ops_before(pool_ops, first_op)
