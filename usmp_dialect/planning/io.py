"""Reading and writing bare planning problems and plans (SPEC §8), for `usmp-plan`.

Two input formats:

* CSV in the format of Google's minimalloc benchmarks: header `id,lower,upper,size`, optional
  `alignment`; one buffer per row, live on the half-open interval `[lower, upper)`. Other columns
  are kept and written back unchanged; an `offset` column (IREE's files carry the producer's own
  offsets) is ignored on input and replaced by the planned offsets on output. All buffers go to
  one pool, named `pool`.
* JSON: `{"buffers": [{"name", "size", "alignment", "conflicts": [names], "pools": [names],
  "live": [[start, end], ...]}], "pools": [{"name", "size_hint_bytes"}]}`. Only `name` and
  `size` are required. Conflicts are symmetric (listing one side is enough); a buffer without
  `pools` may go to every pool, in the listed order; without `pools` at top level there is one
  unbounded pool `pool`; `size_hint_bytes` -1, null or absent means unbounded.

Errors are `InputError`s whose text is `FILE:LINE: message` (CSV, JSON syntax) or
`FILE: message` (JSON content, where the message names the buffer).
"""

from __future__ import annotations

import copy
import csv
import io
import json
import re
from dataclasses import dataclass
from typing import Any

from usmp_dialect.planning.problem import (
    Buffer,
    Plan,
    PlanResult,
    Pool,
    Problem,
    peak_live_bytes,
)

DEFAULT_POOL = "pool"
REQUIRED_CSV_COLUMNS = ("id", "lower", "upper", "size")
_INTEGER = re.compile(r"[+-]?[0-9]+")


class InputError(ValueError):
    """A malformed problem file; the text says where (`FILE:LINE: ...`)."""

    def __init__(self, source: str, message: str, line: int | None = None) -> None:
        where = f"{source}:{line}" if line is not None else source
        super().__init__(f"{where}: {message}")


@dataclass(frozen=True)
class CsvDocument:
    """A CSV problem as read: the header and cells, written back with the planned offsets."""

    header: tuple[str, ...]
    rows: tuple[tuple[str, ...], ...]
    offset_column: int | None


@dataclass(frozen=True)
class JsonDocument:
    """A JSON problem as read, written back with `pool`/`offset` per buffer."""

    data: dict[str, Any]


@dataclass(frozen=True)
class LoadedProblem:
    problem: Problem
    document: CsvDocument | JsonDocument
    notes: tuple[str, ...] = ()
    """Things the user should know about how the input was read (printed on stderr)."""


def read_problem(text: str, source: str) -> LoadedProblem:
    """Reads a CSV or JSON problem (JSON when the text starts with `{`)."""
    if text.lstrip().startswith("{"):
        return read_json_problem(text, source)
    return read_csv_problem(text, source)


def _parse_int(cell: str, what: str, source: str, line: int | None) -> int:
    value = cell.strip()
    if not _INTEGER.fullmatch(value):
        raise InputError(source, f"{what} '{value}' is not an integer", line)
    return int(value)


def _check_alignment(alignment: int, what: str, source: str, line: int | None) -> None:
    if alignment < 1 or alignment & (alignment - 1):
        raise InputError(source, f"{what}: alignment {alignment} is not a power of two", line)


def read_csv_problem(text: str, source: str) -> LoadedProblem:
    reader = csv.reader(io.StringIO(text.removeprefix("\ufeff")))
    header: list[str] | None = None
    header_line = 0
    rows: list[tuple[str, ...]] = []
    lines: list[int] = []
    for row in reader:
        if not row or all(not cell.strip() for cell in row):
            continue
        if header is None:
            header = [cell.strip() for cell in row]
            header_line = reader.line_num
        else:
            rows.append(tuple(row))
            lines.append(reader.line_num)
    if header is None:
        raise InputError(source, "empty input: expected a header 'id,lower,upper,size'")
    missing = [name for name in REQUIRED_CSV_COLUMNS if name not in header]
    if missing:
        raise InputError(
            source,
            f"missing column{'s' if len(missing) > 1 else ''} {', '.join(missing)} "
            f"(the header must name id, lower, upper, size)",
            header_line,
        )
    duplicated = sorted({name for name in header if header.count(name) > 1})
    if duplicated:
        raise InputError(source, f"duplicate column '{duplicated[0]}'", header_line)
    column = {name: index for index, name in enumerate(header)}
    alignment_column = column.get("alignment")
    offset_column = column.get("offset")

    buffers: list[Buffer] = []
    first_line_of: dict[str, int] = {}
    for row, line in zip(rows, lines, strict=True):
        if len(row) != len(header):
            raise InputError(
                source, f"expected {len(header)} fields as in the header, found {len(row)}", line
            )
        name = row[column["id"]].strip()
        if not name:
            raise InputError(source, "empty id", line)
        if name in first_line_of:
            raise InputError(
                source, f"duplicate id '{name}' (first on line {first_line_of[name]})", line
            )
        first_line_of[name] = line
        lower = _parse_int(row[column["lower"]], f"buffer '{name}': lower", source, line)
        upper = _parse_int(row[column["upper"]], f"buffer '{name}': upper", source, line)
        size = _parse_int(row[column["size"]], f"buffer '{name}': size", source, line)
        if size < 0:
            raise InputError(source, f"buffer '{name}': negative size {size}", line)
        if lower >= upper:
            raise InputError(
                source,
                f"buffer '{name}': lower {lower} >= upper {upper} (the live interval "
                f"[lower, upper) must not be empty)",
                line,
            )
        alignment = 1
        if alignment_column is not None and row[alignment_column].strip():
            alignment = _parse_int(
                row[alignment_column], f"buffer '{name}': alignment", source, line
            )
            _check_alignment(alignment, f"buffer '{name}'", source, line)
        buffers.append(Buffer(name, size, alignment, live=((lower, upper),)))
    notes = ()
    if offset_column is not None:
        notes = (
            f"{source}: the 'offset' column is ignored (offsets are planned anew and written "
            f"in its place)",
        )
    return LoadedProblem(
        Problem(tuple(buffers), (Pool(DEFAULT_POOL),)),
        CsvDocument(tuple(header), tuple(rows), offset_column),
        notes,
    )


def _json_int(value: Any, what: str, source: str) -> int:
    if isinstance(value, bool) or not isinstance(value, int):
        raise InputError(source, f"{what} must be an integer, not {json.dumps(value)}")
    return value


def _json_names(value: Any, what: str, source: str) -> list[str]:
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        raise InputError(source, f"{what} must be a list of names")
    return value


def read_json_problem(text: str, source: str) -> LoadedProblem:
    try:
        data = json.loads(text)
    except json.JSONDecodeError as error:
        raise InputError(source, f"invalid JSON: {error.msg}", error.lineno) from None
    if not isinstance(data, dict) or not isinstance(data.get("buffers"), list):
        raise InputError(source, "expected an object with a 'buffers' list")

    pool_entries = data.get("pools", [{"name": DEFAULT_POOL}])
    if not isinstance(pool_entries, list) or not pool_entries:
        raise InputError(source, "'pools' must be a non-empty list")
    pools: list[Pool] = []
    pool_index: dict[str, int] = {}
    for position, entry in enumerate(pool_entries):
        where = f"pools[{position}]"
        if not isinstance(entry, dict) or not isinstance(entry.get("name"), str):
            raise InputError(source, f"{where}: expected an object with a 'name'")
        name = entry["name"]
        where = f"pool '{name}'"
        if name in pool_index:
            raise InputError(source, f"duplicate pool name '{name}'")
        hint = entry.get("size_hint_bytes")
        capacity = None
        if hint is not None:
            hint = _json_int(hint, f"{where}: size_hint_bytes", source)
            if hint < -1:
                raise InputError(source, f"{where}: negative size_hint_bytes {hint}")
            capacity = None if hint == -1 else hint
        alignment = _json_int(entry.get("alignment", 1), f"{where}: alignment", source)
        _check_alignment(alignment, where, source, None)
        pool_index[name] = len(pools)
        pools.append(Pool(name, capacity, alignment))

    names: dict[str, int] = {}
    for position, entry in enumerate(data["buffers"]):
        if not isinstance(entry, dict) or not isinstance(entry.get("name"), str):
            raise InputError(source, f"buffers[{position}]: expected an object with a 'name'")
        if entry["name"] in names:
            raise InputError(source, f"duplicate buffer name '{entry['name']}'")
        names[entry["name"]] = position

    buffers: list[Buffer] = []
    for entry in data["buffers"]:
        name = entry["name"]
        where = f"buffer '{name}'"
        if "size" not in entry:
            raise InputError(source, f"{where}: missing 'size'")
        size = _json_int(entry["size"], f"{where}: size", source)
        if size < 0:
            raise InputError(source, f"{where}: negative size {size}")
        alignment = _json_int(entry.get("alignment", 1), f"{where}: alignment", source)
        _check_alignment(alignment, where, source, None)
        conflicts = []
        for other in _json_names(entry.get("conflicts", []), f"{where}: conflicts", source):
            if other not in names:
                raise InputError(source, f"{where}: conflict with unknown buffer '{other}'")
            if other != name:
                conflicts.append(names[other])
        candidates = []
        for pool_name in _json_names(
            entry.get("pools", [p.name for p in pools]), f"{where}: pools", source
        ):
            if pool_name not in pool_index:
                known = ", ".join(p.name for p in pools)
                raise InputError(source, f"{where}: unknown pool '{pool_name}' (pools: {known})")
            candidates.append(pool_index[pool_name])
        if not candidates:
            raise InputError(source, f"{where}: empty 'pools' list")
        live = []
        intervals = entry.get("live", [])
        if not isinstance(intervals, list):
            raise InputError(source, f"{where}: 'live' must be a list of [start, end] pairs")
        for interval in intervals:
            if not isinstance(interval, list) or len(interval) != 2:
                raise InputError(source, f"{where}: 'live' must be a list of [start, end] pairs")
            start = _json_int(interval[0], f"{where}: live start", source)
            end = _json_int(interval[1], f"{where}: live end", source)
            if start >= end:
                raise InputError(source, f"{where}: empty live interval [{start}, {end})")
            live.append((start, end))
        buffers.append(
            Buffer(name, size, alignment, tuple(live), tuple(conflicts), tuple(candidates))
        )
    return LoadedProblem(Problem(tuple(buffers), tuple(pools)), JsonDocument(data))


def with_capacity(problem: Problem, capacity_bytes: int) -> Problem:
    """The problem with every pool limited to `capacity_bytes` (or its own, smaller limit)."""
    pools = tuple(
        Pool(
            pool.name,
            capacity_bytes
            if pool.capacity_bytes is None
            else min(pool.capacity_bytes, capacity_bytes),
            pool.alignment,
        )
        for pool in problem.pools
    )
    return Problem(problem.buffers, pools)


def write_plan(loaded: LoadedProblem, problem: Problem, plan: Plan, sizes: tuple[int, ...]) -> str:
    """The input document with the plan added: an `offset` column (CSV) or `pool`/`offset` per
    buffer and `size_bytes` per pool (JSON)."""
    document = loaded.document
    if isinstance(document, CsvDocument):
        out = io.StringIO()
        writer = csv.writer(out, lineterminator="\n")
        header = list(document.header)
        if document.offset_column is None:
            header.append("offset")
        writer.writerow(header)
        for row, offset in zip(document.rows, plan.offsets, strict=True):
            cells = list(row)
            if document.offset_column is None:
                cells.append(str(offset))
            else:
                cells[document.offset_column] = str(offset)
            writer.writerow(cells)
        return out.getvalue()
    data = copy.deepcopy(document.data)
    for entry, pool, offset in zip(data["buffers"], plan.pools, plan.offsets, strict=True):
        entry["pool"] = problem.pools[pool].name
        entry["offset"] = offset
    if "pools" not in data:
        data["pools"] = [{"name": DEFAULT_POOL}]
    for entry, size in zip(data["pools"], sizes, strict=True):
        entry["size_bytes"] = size
    return dump_json(data)


def dump_json(data: dict[str, Any]) -> str:
    """`data` as JSON with one line per top-level field, and per item of a top-level list of
    objects (one line per buffer: readable, diffable and easy to grep)."""
    lines = []
    for position, (key, value) in enumerate(data.items()):
        comma = "," if position < len(data) - 1 else ""
        if isinstance(value, list) and value and all(isinstance(v, dict) for v in value):
            items = ",\n".join(f"    {json.dumps(item)}" for item in value)
            lines.append(f"  {json.dumps(key)}: [\n{items}\n  ]{comma}")
        else:
            lines.append(f"  {json.dumps(key)}: {json.dumps(value)}{comma}")
    return "{\n" + "\n".join(lines) + "\n}\n"


def plan_report(
    problem: Problem, result: PlanResult, source: str, seed: int, global_bound: int
) -> dict[str, Any]:
    """The JSON report of a plan (shaped like SPEC §8's plan report, without IR fields)."""
    explicit: list[set[int]] = [set() for _ in problem.buffers]
    for index, buffer in enumerate(problem.buffers):
        for other in buffer.conflicts:
            explicit[index].add(other)
            explicit[other].add(index)
    return {
        "input": source,
        "algorithm": result.algorithm,
        "seed": seed,
        "memory_pressure_bytes": peak_live_bytes(problem),
        "lower_bound_bytes": global_bound,
        "peak_bytes": sum(result.pool_sizes),
        "proven_optimal": result.proven_optimal,
        "stopped_by": result.stopped_by(),
        "plan_time_s": round(result.time_s, 6),
        "pools": [
            {
                "name": pool.name,
                "size_hint_bytes": -1 if pool.capacity_bytes is None else pool.capacity_bytes,
                "size_bytes": size,
                "lower_bound_bytes": bound,
            }
            for pool, size, bound in zip(
                problem.pools, result.pool_sizes, result.lower_bounds, strict=True
            )
        ],
        "buffers": [
            {
                "name": buffer.name,
                "size_bytes": buffer.size_bytes,
                "alignment": buffer.alignment,
                "pool": problem.pools[pool].name,
                "offset": offset,
                "live": [list(interval) for interval in buffer.live],
                "conflicts": [problem.buffers[other].name for other in sorted(explicit[index])],
            }
            for index, (buffer, pool, offset) in enumerate(
                zip(problem.buffers, result.plan.pools, result.plan.offsets, strict=True)
            )
        ],
    }
