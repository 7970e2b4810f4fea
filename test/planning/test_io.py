"""Reading and writing bare problems and plans (usmp_dialect.planning.io, SPEC §8)."""

from __future__ import annotations

import json

import pytest

from usmp_dialect.planning import solve
from usmp_dialect.planning.io import (
    CsvDocument,
    InputError,
    JsonDocument,
    plan_report,
    read_problem,
    with_capacity,
    write_plan,
)
from usmp_dialect.planning.problem import Buffer, Plan, Pool, Problem, lower_bound

README_CSV = "id,lower,upper,size\nb1,0,3,4\nb2,3,9,4\nb3,0,9,4\nb4,9,21,4\nb5,0,21,4\n"


def test_csv_is_read_as_half_open_intervals_in_one_pool() -> None:
    loaded = read_problem(README_CSV, "in.csv")
    problem = loaded.problem
    assert [b.name for b in problem.buffers] == ["b1", "b2", "b3", "b4", "b5"]
    assert problem.buffers[0] == Buffer("b1", 4, 1, live=((0, 3),))
    assert problem.pools == (Pool("pool"),)
    assert loaded.notes == ()
    # b1 ends at 3 where b2 starts: they may share memory, so the bound is 12, not 16.
    assert lower_bound(problem) == 12


def test_csv_alignment_column_and_extra_columns() -> None:
    text = "size,id,note,upper,lower,alignment\n8,a,x y,4,0,16\n4,b,,4,2,\n"
    loaded = read_problem(text, "in.csv")
    assert loaded.problem.buffers == (
        Buffer("a", 8, 16, live=((0, 4),)),
        Buffer("b", 4, 1, live=((2, 4),)),
    )
    output = write_plan(loaded, loaded.problem, Plan((0, 0), (0, 16)), (20,))
    assert output == "size,id,note,upper,lower,alignment,offset\n8,a,x y,4,0,16,0\n4,b,,4,2,,16\n"


def test_csv_offset_column_is_ignored_and_replaced() -> None:
    text = "id,lower,upper,size,offset\n0,0,1,8,100\n1,0,2,8,0"  # no final newline (IREE files)
    loaded = read_problem(text, "iree.csv")
    assert isinstance(loaded.document, CsvDocument)
    assert loaded.notes and "'offset' column is ignored" in loaded.notes[0]
    result = solve(loaded.problem, "greedy_by_size")
    written = write_plan(loaded, loaded.problem, result.plan, result.pool_sizes)
    rows = [line.split(",") for line in written.splitlines()]
    assert rows[0] == ["id", "lower", "upper", "size", "offset"]
    assert sorted(int(row[4]) for row in rows[1:]) == [0, 8]


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("", "in.csv: empty input"),
        ("id,lower,size\na,0,4\n", "in.csv:1: missing column upper"),
        ("name,start,end,bytes\n", "in.csv:1: missing columns id, lower, upper, size"),
        ("id,lower,upper,size,id\n", "in.csv:1: duplicate column 'id'"),
        ("id,lower,upper,size\na,0,4,8\nb,0,4\n", "in.csv:3: expected 4 fields"),
        ("id,lower,upper,size\na,0,4,-8\n", "in.csv:2: buffer 'a': negative size -8"),
        ("id,lower,upper,size\na,0,4,1.5\n", "in.csv:2: buffer 'a': size '1.5' is not an integer"),
        ("id,lower,upper,size\na,0,x,8\n", "in.csv:2: buffer 'a': upper 'x' is not an integer"),
        ("id,lower,upper,size\n\na,4,4,8\n", "in.csv:3: buffer 'a': lower 4 >= upper 4"),
        ("id,lower,upper,size\na,0,4,8\na,1,2,3\n", "in.csv:3: duplicate id 'a' (first on line 2)"),
        (
            "id,lower,upper,size,alignment\na,0,4,8,3\n",
            "in.csv:2: buffer 'a': alignment 3 is not a power of two",
        ),
    ],
)
def test_csv_errors_name_file_and_line(text: str, message: str) -> None:
    with pytest.raises(InputError) as error:
        read_problem(text, "in.csv")
    assert str(error.value).startswith(message)


JSON_PROBLEM = {
    "buffers": [
        {"name": "a", "size": 80, "conflicts": ["x"]},
        {"name": "b", "size": 40, "alignment": 8, "conflicts": ["x"], "pools": ["sram"]},
        {"name": "x", "size": 30, "live": [[0, 4], [6, 9]]},
    ],
    "pools": [{"name": "sram", "size_hint_bytes": 100}, {"name": "dram", "size_hint_bytes": -1}],
}


def test_json_problem() -> None:
    loaded = read_problem(json.dumps(JSON_PROBLEM, indent=1), "p.json")
    problem = loaded.problem
    assert isinstance(loaded.document, JsonDocument)
    assert problem.pools == (Pool("sram", 100), Pool("dram", None))
    assert problem.buffers == (
        Buffer("a", 80, 1, (), (2,), (0, 1)),
        Buffer("b", 40, 8, (), (2,), (0,)),
        Buffer("x", 30, 1, ((0, 4), (6, 9)), (), (0, 1)),
    )


def test_json_output_adds_pool_and_offset() -> None:
    loaded = read_problem(json.dumps(JSON_PROBLEM), "p.json")
    result = solve(loaded.problem, "greedy_by_size")
    data = json.loads(write_plan(loaded, loaded.problem, result.plan, result.pool_sizes))
    placed = {b["name"]: (b["pool"], b["offset"]) for b in data["buffers"]}
    # a and b go to sram first; x conflicts with a, which fills sram up to 80: x goes to dram.
    assert placed == {"a": ("sram", 0), "b": ("sram", 0), "x": ("dram", 0)}
    assert [p["size_bytes"] for p in data["pools"]] == [80, 30]
    assert data["buffers"][1]["alignment"] == 8  # the input's fields are kept


def test_json_defaults_one_unbounded_pool() -> None:
    loaded = read_problem('{"buffers": [{"name": "a", "size": 4}]}', "p.json")
    assert loaded.problem.pools == (Pool("pool"),)
    data = json.loads(write_plan(loaded, loaded.problem, Plan((0,), (0,)), (4,)))
    assert data["pools"] == [{"name": "pool", "size_bytes": 4}]


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ('{"buffers": [\n  {"name": "a",, }]}', "p.json:2: invalid JSON"),
        ('{"pools": []}', "p.json: expected an object with a 'buffers' list"),
        ('{"buffers": [{"size": 3}]}', "p.json: buffers[0]: expected an object with a 'name'"),
        ('{"buffers": [{"name": "a"}]}', "p.json: buffer 'a': missing 'size'"),
        ('{"buffers": [{"name": "a", "size": -1}]}', "p.json: buffer 'a': negative size -1"),
        ('{"buffers": [{"name": "a", "size": 1.5}]}', "p.json: buffer 'a': size must be an int"),
        ('{"buffers": [{"name": "a", "size": 1}, {"name": "a", "size": 1}]}', "duplicate buffer"),
        ('{"buffers": [{"name": "a", "size": 1, "conflicts": ["z"]}]}', "unknown buffer 'z'"),
        (
            '{"buffers": [{"name": "a", "size": 1, "pools": ["z"]}]}',
            "unknown pool 'z' (pools: pool)",
        ),
        ('{"buffers": [{"name": "a", "size": 1, "live": [[3, 3]]}]}', "empty live interval"),
        ('{"buffers": [], "pools": [{"name": "p", "size_hint_bytes": -5}]}', "negative size_hint"),
    ],
)
def test_json_errors(text: str, message: str) -> None:
    with pytest.raises(InputError) as error:
        read_problem(text, "p.json")
    assert message in str(error.value)


def test_with_capacity_limits_every_pool() -> None:
    problem = Problem((Buffer("a", 1),), (Pool("p", 50), Pool("q")))
    assert with_capacity(problem, 64).pools == (Pool("p", 50), Pool("q", 64))


def test_report_fields() -> None:
    loaded = read_problem(README_CSV, "in.csv")
    result = solve(loaded.problem, "greedy_by_size")
    report = plan_report(loaded.problem, result, "in.csv", 0, lower_bound(loaded.problem))
    assert report["algorithm"] == "greedy_by_size"
    assert report["lower_bound_bytes"] == 12 == report["memory_pressure_bytes"]
    assert report["peak_bytes"] == result.pool_sizes[0]
    assert report["proven_optimal"] is result.proven_optimal
    assert report["pools"] == [
        {
            "name": "pool",
            "size_hint_bytes": -1,
            "size_bytes": result.pool_sizes[0],
            "lower_bound_bytes": 12,
        }
    ]
    assert report["buffers"][0] == {
        "name": "b1",
        "size_bytes": 4,
        "alignment": 1,
        "pool": "pool",
        "offset": result.plan.offsets[0],
        "live": [[0, 3]],
        "conflicts": [],
    }
