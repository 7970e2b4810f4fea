"""The outputs of `usmp-plan{report=... svg=...}`: the JSON plan (SPEC §8) and a memory map.

The memory map is an SVG with one panel per pool that holds buffers: time runs left to right
over the program timeline, addresses top to bottom from the pool base; every live interval of a
buffer is a named rectangle, and a dashed line marks the pool's lower bound.
"""

from __future__ import annotations

import json
from html import escape
from typing import NoReturn

from xdsl.ir import Operation
from xdsl.utils.exceptions import PassFailedException

from usmp_dialect.analysis.buffer_info import BufferAnalysis, conflict_names
from usmp_dialect.analysis.operators import OperatorAnalysis, OperatorRun, tensor_name
from usmp_dialect.dialects.pool import PoolOpBase
from usmp_dialect.planning.problem import PlanResult, Problem
from usmp_dialect.tools.output_file import OutputFileError, write_output_file


def write_text(op: Operation, path: str, text: str, option: str) -> None:
    """Writes the output file of pass option `option` atomically (under `usmp-opt`: once the run
    succeeded); an unwritable path (e.g. a missing directory, which is not created) is a
    diagnostic naming the option, not a traceback."""
    try:
        write_output_file(path, text, option)
    except OutputFileError as error:
        _fail(op, str(error))


def _fail(op: Operation, message: str) -> NoReturn:
    op.emit_error(message, PassFailedException(message))


def _tensor_names(analysis: BufferAnalysis) -> list[str]:
    return [
        tensor_name(op, info.name)
        for op, info in zip(analysis.allocations, analysis.buffers, strict=True)
    ]


def report_operators(operators: OperatorAnalysis, analysis: BufferAnalysis) -> list[dict]:
    """The report's `operators`: one entry per call of the entry, in execution order."""
    names = _tensor_names(analysis)
    return [
        _with_fused(
            run,
            {
                "index": run.index,
                "name": run.name,
                "type": run.type,
                "macs": run.macs,
                "input_bytes": run.input_bytes,
                "output_bytes": run.output_bytes,
                "scratch_bytes": run.scratch_bytes,
                "live_bytes": run.live_bytes,
                "live_tensors": [names[index] for index in run.live_buffers],
            },
        )
        for run in operators.operators
    ]


def _with_fused(run: OperatorRun, entry: dict) -> dict:
    """`entry` plus, for a fused group (fused row streaming), `fused`: its operators, the rows
    kept of each intermediate tensor, the bytes it takes off the peak and the input its
    output was written over (null: a buffer of its own)."""
    if run.fused is None:
        return entry
    entry["fused"] = {
        "operators": list(run.fused.operators),
        "line_buffers": [
            {"tensor": tensor, "rows": rows, "height": height, "size_bytes": size}
            for tensor, rows, height, size in run.fused.line_buffers
        ],
        "saved_bytes": run.fused.saved_bytes,
        "written_over": run.fused.written_over,
    }
    return entry


def report_peak(
    operators: OperatorAnalysis, analysis: BufferAnalysis, problem: Problem, result: PlanResult
) -> dict:
    """The report's `peak`: the operator where the live bytes peak and the tensors then live."""
    run = operators.peak_operator()
    if run is None:
        return {
            "operator": None,
            "live_bytes": analysis.memory_pressure_bytes,
            "tensors": [],
        }
    names = _tensor_names(analysis)
    return {
        "operator": run.index,
        "name": run.name,
        "type": run.type,
        "live_bytes": run.live_bytes,
        "tensors": [
            {
                "buffer": analysis.buffers[index].name,
                "tensor": names[index],
                "size_bytes": analysis.buffers[index].size_bytes,
                "pool": problem.pools[result.plan.pools[index]].name,
                "offset": result.plan.offsets[index],
                "producer": _operator_label(operators, operators.producers[index]),
            }
            for index in run.live_buffers
        ],
    }


def _operator_label(operators: OperatorAnalysis, position: int | None) -> int | None:
    return None if position is None else operators.operators[position].index


def plan_report(
    analysis: BufferAnalysis,
    problem: Problem,
    result: PlanResult,
    pools: list[PoolOpBase],
    operators: OperatorAnalysis | None = None,
) -> str:
    """The JSON plan report of SPEC §8 (one line per buffer and per operator, keys in the
    documented order; `operators` and `peak` when the operator analysis is given)."""
    conflicts = conflict_names(analysis)
    tensors = _tensor_names(analysis)
    report_pools = [
        {
            "name": pool.pool_name,
            "kind": pool.KIND,
            "internal": pool.is_internal,
            "size_hint_bytes": pool.capacity_bytes,
            "size_bytes": result.pool_sizes[index],
            "lower_bound_bytes": result.lower_bounds[index],
        }
        for index, pool in enumerate(pools)
    ]
    report_buffers = [
        {
            "name": info.name,
            "function": info.function,
            "kind": info.kind,
            "size_bytes": info.size_bytes,
            "alignment": info.alignment,
            "pool": problem.pools[pool].name,
            "offset": offset,
            "live": [list(interval) for interval in info.live],
            "conflicts": names,
            "tensor": tensor,
        }
        for info, pool, offset, names, tensor in zip(
            analysis.buffers,
            result.plan.pools,
            result.plan.offsets,
            conflicts,
            tensors,
            strict=True,
        )
    ]
    if operators is not None:
        for buffer, ranges in zip(report_buffers, operators.live_operators, strict=True):
            buffer["live_operators"] = [list(pair) for pair in ranges]
    head = {
        "algorithm": result.algorithm,
        "entry": analysis.entry,
        "memory_pressure_bytes": analysis.memory_pressure_bytes,
        "plan_time_s": round(result.time_s, 6),
        "proven_optimal": result.proven_optimal,
        "stopped_by": result.stopped_by(),
    }
    lines = [json.dumps(head)[:-1] + ","]
    lines.append(' "pools": [')
    lines.append(",\n".join("  " + json.dumps(pool) for pool in report_pools))
    lines.append(" ],")
    lines.append(' "buffers": [')
    lines.append(",\n".join("  " + json.dumps(buffer) for buffer in report_buffers))
    if operators is None:
        lines.append(" ]}")
    else:
        lines.append(" ],")
        lines.append(' "operators": [')
        lines.append(
            ",\n".join("  " + json.dumps(entry) for entry in report_operators(operators, analysis))
        )
        lines.append(" ],")
        lines.append(' "peak": ' + json.dumps(report_peak(operators, analysis, problem, result)))
        lines.append("}")
    return "\n".join(line for line in lines if line) + "\n"


PANEL_WIDTH = 900.0
PANEL_HEIGHT = 320.0
MARGIN = 60.0
AXIS_HEIGHT = 140.0  # below each panel: the operators along the time axis
RIGHT_MARGIN = 90.0  # room for the "lower bound" label
PALETTE = ("#8dd3c7", "#ffffb3", "#bebada", "#fb8072", "#80b1d3", "#fdb462", "#b3de69", "#fccde5")
CHAR_WIDTH = 6.0  # of the 11-pixel sans-serif labels, roughly
AXIS_LABEL_CHARS = 22


def _fitted(name: str, room: float) -> str | None:
    """`name`, shortened with an ellipsis to fit `room` pixels of label; None when even a short
    prefix does not fit."""
    chars = int(room / CHAR_WIDTH)
    if chars >= len(name):
        return name
    if chars < 4:
        return None
    return name[: chars - 1] + "\u2026"


def _operator_axis(
    operators: OperatorAnalysis, top: float, scale_x: float, parts: list[str]
) -> None:
    """Operator boundaries as faint vertical lines over the panel, and their indices and types
    below it (labels skipped where they would overlap; each run's tooltip names it)."""
    bottom = top + PANEL_HEIGHT
    next_free = -1.0
    for run in operators.operators:
        x = MARGIN + run.span[0] * scale_x
        width = (run.span[1] - run.span[0]) * scale_x
        parts.append(
            f'<line x1="{x:.1f}" y1="{top:.1f}" x2="{x:.1f}" y2="{bottom:.1f}" '
            f'stroke="#bbb" stroke-width="0.5"/>'
        )
        title = f"operator {run.index}: {run.type} @{run.name}, {run.live_bytes} B live"
        parts.append(
            f'<rect x="{x:.1f}" y="{bottom:.1f}" width="{max(width, 1.0):.1f}" height="6" '
            f'fill="#999"><title>{escape(title)}</title></rect>'
        )
        label_x = x + width / 2 + 3
        if label_x < next_free:
            continue
        next_free = label_x + 12
        label = f"{run.index} {run.type}"
        if len(label) > AXIS_LABEL_CHARS:
            label = label[: AXIS_LABEL_CHARS - 1] + "\u2026"
        label_y = bottom + 10
        parts.append(
            f'<text x="{label_x:.1f}" y="{label_y:.1f}" font-size="10" '
            f'transform="rotate(90 {label_x:.1f} {label_y:.1f})">{escape(label)}</text>'
        )


def memory_map_svg(
    analysis: BufferAnalysis,
    problem: Problem,
    result: PlanResult,
    operators: OperatorAnalysis | None = None,
) -> str:
    """An SVG memory map: one panel per used pool, buffers as rectangles over time x address,
    labelled with their tensors; with `operators`, the time axis shows the operators."""
    used = [index for index, size in enumerate(result.pool_sizes) if size > 0]
    time_end = max(analysis.timeline_end + 1, 1)
    gap = MARGIN + (AXIS_HEIGHT if operators is not None and operators.operators else 0.0)
    height = MARGIN + len(used) * (PANEL_HEIGHT + gap)
    width = MARGIN + PANEL_WIDTH + RIGHT_MARGIN
    tensors = _tensor_names(analysis)
    parts = [
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{width:.0f}" height="{height:.0f}" '
        f'font-family="sans-serif" font-size="11">',
        f'<rect width="{width:.0f}" height="{height:.0f}" fill="white"/>',
    ]
    for panel, pool_index in enumerate(used):
        top = MARGIN + panel * (PANEL_HEIGHT + gap)
        pool = problem.pools[pool_index]
        pool_size = result.pool_sizes[pool_index]
        bound = result.lower_bounds[pool_index]
        scale_y = PANEL_HEIGHT / pool_size
        scale_x = PANEL_WIDTH / time_end
        parts.append(
            f'<text x="{MARGIN:.0f}" y="{top - 8:.1f}" font-size="14">pool {escape(pool.name)}: '
            f"{pool_size} bytes (lower bound {bound})</text>"
        )
        parts.append(
            f'<rect x="{MARGIN:.1f}" y="{top:.1f}" width="{PANEL_WIDTH:.1f}" '
            f'height="{PANEL_HEIGHT:.1f}" fill="none" stroke="black"/>'
        )
        if operators is not None:
            _operator_axis(operators, top, scale_x, parts)
        for index, (info, placed, offset) in enumerate(
            zip(analysis.buffers, result.plan.pools, result.plan.offsets, strict=True)
        ):
            if placed != pool_index or info.size_bytes == 0:
                continue
            colour = PALETTE[index % len(PALETTE)]
            label = tensors[index]
            for position, (start, end) in enumerate(info.live):
                x = MARGIN + start * scale_x
                y = top + offset * scale_y
                w = max((end - start) * scale_x, 1.0)
                h = max(info.size_bytes * scale_y, 1.0)
                when = f"live [{start}, {end})"
                if operators is not None and position < len(operators.live_operators[index]):
                    first, last = operators.live_operators[index][position]
                    when = f"live during operators {first} to {last}"
                named = label if label == info.name else f"{label} (buffer {info.name})"
                title = f"{named}: {info.size_bytes} B at offset {offset}, {when}"
                parts.append(
                    f'<rect x="{x:.1f}" y="{y:.1f}" width="{w:.1f}" height="{h:.1f}" '
                    f'fill="{colour}" stroke="#333" stroke-width="0.5">'
                    f"<title>{escape(title)}</title></rect>"
                )
                across = _fitted(label, w - 4) if h >= 10 else None
                upwards = _fitted(label, h - 4) if w >= 12 else None
                if across is not None and (upwards is None or len(across) >= len(upwards)):
                    parts.append(
                        f'<text x="{x + 2:.1f}" y="{y + min(h / 2 + 4, h - 1):.1f}">'
                        f"{escape(across)}</text>"
                    )
                elif upwards is not None:
                    # Tall and narrow: the name runs upwards along the rectangle.
                    label_x, label_y = x + w / 2 + 4, y + h - 2
                    parts.append(
                        f'<text x="{label_x:.1f}" y="{label_y:.1f}" '
                        f'transform="rotate(-90 {label_x:.1f} {label_y:.1f})">'
                        f"{escape(upwards)}</text>"
                    )
        if bound <= pool_size:
            y = top + bound * scale_y
            parts.append(
                f'<line x1="{MARGIN:.1f}" y1="{y:.1f}" x2="{MARGIN + PANEL_WIDTH:.1f}" '
                f'y2="{y:.1f}" stroke="red" stroke-dasharray="6,3"/>'
            )
            parts.append(
                f'<text x="{MARGIN + PANEL_WIDTH + 4:.1f}" y="{y + 4:.1f}" fill="red">'
                f"lower bound</text>"
            )
        axis_note = "operators" if operators is not None and operators.operators else "time"
        parts.append(
            f'<text x="{MARGIN - 4:.1f}" y="{top + 10:.1f}" text-anchor="end">0</text>'
            f'<text x="{MARGIN - 4:.1f}" y="{top + PANEL_HEIGHT:.1f}" text-anchor="end">'
            f"{pool_size}</text>"
            f'<text x="{MARGIN + PANEL_WIDTH + 4:.1f}" y="{top + PANEL_HEIGHT + 14:.1f}">'
            f"{axis_note} \u2192</text>"
        )
    parts.append("</svg>")
    return "\n".join(parts) + "\n"
