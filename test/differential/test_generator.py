"""The program generator: seeded, deterministic, valid IR with the features it promises."""

from __future__ import annotations

import pytest

from usmp_dialect.testing.generator import GeneratedProgram, generate_program
from usmp_dialect.testing.harness import parse


def test_same_seed_same_program_and_different_seeds_differ() -> None:
    assert generate_program(3).text == generate_program(3).text
    assert generate_program(3).text != generate_program(4).text


@pytest.mark.parametrize("seed", [0, 5, 9])
def test_generated_programs_parse_and_verify(seed: int) -> None:
    parse(generate_program(seed))


def test_generated_programs_use_every_feature() -> None:
    texts = [generate_program(seed).text for seed in range(30)]
    for feature in (
        "usmp.allocate ",
        "usmp.allocate_const",
        "pools = [",
        "alignment = ",
        "size_hint_bytes",
        "pool.constant",
        "internal",
        "scf.for",
        "scf.if",
        "func.call",
        "memref.subview",
        '"memref.cast"',
        "memref.collapse_shape",
        "memref.expand_shape",
        '"memref.copy"',
        "xi8>",
        "xi32>",
        "xf32>",
    ):
        assert any(feature in text for text in texts), feature


def test_metadata_round_trips() -> None:
    program = generate_program(11)
    assert GeneratedProgram.from_text(program.text) == program
