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


def plan_report(
    analysis: BufferAnalysis, problem: Problem, result: PlanResult, pools: list[PoolOpBase]
) -> str:
    """The JSON plan report of SPEC §8 (one line per buffer, keys in the documented order)."""
    conflicts = conflict_names(analysis)
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
        }
        for info, pool, offset, names in zip(
            analysis.buffers, result.plan.pools, result.plan.offsets, conflicts, strict=True
        )
    ]
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
    lines.append(" ]}")
    return "\n".join(line for line in lines if line) + "\n"


PANEL_WIDTH = 900.0
PANEL_HEIGHT = 320.0
MARGIN = 60.0
RIGHT_MARGIN = 90.0  # room for the "lower bound" label
PALETTE = ("#8dd3c7", "#ffffb3", "#bebada", "#fb8072", "#80b1d3", "#fdb462", "#b3de69", "#fccde5")


def memory_map_svg(analysis: BufferAnalysis, problem: Problem, result: PlanResult) -> str:
    """An SVG memory map: one panel per used pool, buffers as rectangles over time x address."""
    used = [index for index, size in enumerate(result.pool_sizes) if size > 0]
    time_end = max(analysis.timeline_end + 1, 1)
    height = MARGIN + len(used) * (PANEL_HEIGHT + MARGIN)
    width = MARGIN + PANEL_WIDTH + RIGHT_MARGIN
    parts = [
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{width:.0f}" height="{height:.0f}" '
        f'font-family="sans-serif" font-size="11">',
        f'<rect width="{width:.0f}" height="{height:.0f}" fill="white"/>',
    ]
    for panel, pool_index in enumerate(used):
        top = MARGIN + panel * (PANEL_HEIGHT + MARGIN)
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
        for index, (info, placed, offset) in enumerate(
            zip(analysis.buffers, result.plan.pools, result.plan.offsets, strict=True)
        ):
            if placed != pool_index or info.size_bytes == 0:
                continue
            colour = PALETTE[index % len(PALETTE)]
            for start, end in info.live:
                x = MARGIN + start * scale_x
                y = top + offset * scale_y
                w = max((end - start) * scale_x, 1.0)
                h = max(info.size_bytes * scale_y, 1.0)
                title = (
                    f"{info.name}: {info.size_bytes} B at offset {offset}, live [{start}, {end})"
                )
                parts.append(
                    f'<rect x="{x:.1f}" y="{y:.1f}" width="{w:.1f}" height="{h:.1f}" '
                    f'fill="{colour}" stroke="#333" stroke-width="0.5">'
                    f"<title>{escape(title)}</title></rect>"
                )
                if h >= 10 and w >= 6 * len(info.name):
                    parts.append(
                        f'<text x="{x + 2:.1f}" y="{y + min(h / 2 + 4, h - 1):.1f}">'
                        f"{escape(info.name)}</text>"
                    )
                elif w >= 12 and h >= 6 * len(info.name):
                    # Tall and narrow: the name runs upwards along the rectangle.
                    label_x, label_y = x + w / 2 + 4, y + h - 2
                    parts.append(
                        f'<text x="{label_x:.1f}" y="{label_y:.1f}" '
                        f'transform="rotate(-90 {label_x:.1f} {label_y:.1f})">'
                        f"{escape(info.name)}</text>"
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
        parts.append(
            f'<text x="{MARGIN - 4:.1f}" y="{top + 10:.1f}" text-anchor="end">0</text>'
            f'<text x="{MARGIN - 4:.1f}" y="{top + PANEL_HEIGHT:.1f}" text-anchor="end">'
            f"{pool_size}</text>"
            f'<text x="{MARGIN + PANEL_WIDTH:.1f}" y="{top + PANEL_HEIGHT + 14:.1f}" '
            f'text-anchor="end">time {time_end}</text>'
        )
    parts.append("</svg>")
    return "\n".join(parts) + "\n"
