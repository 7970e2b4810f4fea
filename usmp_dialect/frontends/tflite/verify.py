"""Structural verification of a `.tflite` flatbuffer before anything reads it, as TFLite
Micro's loader does with `flatbuffers::Verifier` (`VerifyModelBuffer`): every offset, vtable,
table, vector length, string (and its terminating zero) and union value inside the file's
bytes and aligned, within the verifier's default limits (depth 64, a million tables), for
every table of the TFLite schema (`schema.py`, generated from the schema the reader was built
from). The Python flatbuffers reader checks none of this: a corrupted offset reads other bytes
of the file, or raises wherever it happens to land.

Data past the flatbuffer (large models keep buffers there, `Buffer.offset`) is not looked at,
as in the C++ verifier.
"""

from __future__ import annotations

import struct
from dataclasses import dataclass, field

from usmp_dialect.frontends.tflite.schema import TABLES, UNIONS

MAX_DEPTH = 64
MAX_TABLES = 1_000_000
MAX_BUFFER_BYTES = 2**31 - 1  # FLATBUFFERS_MAX_BUFFER_SIZE
_FORMATS = {1: "<B", 2: "<H", 4: "<I", 8: "<Q"}


class VerificationError(Exception):
    """The flatbuffer is malformed: the message says what is out of bounds, and where."""


@dataclass
class _Verifier:
    data: bytes
    tables: int = 0
    depth: int = 0
    path: list[str] = field(default_factory=list)
    # (byte position, size) of every offset, vtable entry, length and union type read
    structural: list[tuple[int, int]] = field(default_factory=list)

    def fail(self, problem: str) -> VerificationError:
        where = " > ".join(self.path) or "the root"
        return VerificationError(f"{problem} (at {where})")

    def within(self, position: int, size: int, what: str) -> None:
        if position < 0 or size < 0 or position + size > len(self.data):
            raise self.fail(
                f"{what} at byte {position} ({size} bytes) lies outside the file's "
                f"{len(self.data)} bytes"
            )

    def aligned(self, position: int, alignment: int, what: str) -> None:
        if position % alignment:
            raise self.fail(f"{what} at byte {position} is not {alignment}-byte aligned")

    def scalar(self, position: int, size: int, what: str) -> int:
        self.within(position, size, what)
        self.aligned(position, size, what)
        return struct.unpack_from(_FORMATS[size], self.data, position)[0]

    def offset(self, position: int, what: str) -> int:
        """The target of the uoffset at `position` (nonzero, below 2^31, inside the file)."""
        relative = self.scalar(position, 4, f"the offset to {what}")
        self.structural.append((position, 4))
        if relative == 0 or relative >= 2**31:
            raise self.fail(f"the offset to {what} at byte {position} is {relative}")
        target = position + relative
        if target >= len(self.data):
            raise self.fail(
                f"the offset to {what} at byte {position} points to byte {target}, outside "
                f"the file's {len(self.data)} bytes"
            )
        return target

    def vector(self, position: int, element_size: int, what: str) -> tuple[int, int]:
        """(first element, length) of the vector or string at `position`."""
        length = self.scalar(position, 4, f"the length of {what}")
        self.structural.append((position, 4))
        if length >= MAX_BUFFER_BYTES // element_size:
            raise self.fail(f"{what} at byte {position} claims {length} elements")
        self.within(position + 4, length * element_size, f"{what} of {length} elements")
        return position + 4, length

    def string(self, position: int, what: str) -> None:
        start, length = self.vector(position, 1, what)
        self.within(start + length, 1, f"the terminating zero of {what}")
        if self.data[start + length] != 0:
            raise self.fail(f"{what} at byte {position} has no terminating zero")

    def table(self, position: int, name: str) -> None:
        """The table `name` at `position`: its vtable, then every field the vtable has."""
        self.tables += 1
        self.depth += 1
        if self.depth > MAX_DEPTH:
            raise self.fail(f"tables nest deeper than {MAX_DEPTH}")
        if self.tables > MAX_TABLES:
            raise self.fail(f"more than {MAX_TABLES} tables")
        soffset = self.scalar(position, 4, f"the {name} table")
        self.structural.append((position, 4))
        vtable = position - (soffset - 2**32 if soffset >= 2**31 else soffset)
        vtable_size = self.scalar(vtable, 2, f"the vtable of the {name} table")
        if vtable_size % 2:
            raise self.fail(f"the vtable of the {name} table at byte {vtable} has odd size")
        self.within(vtable, vtable_size, f"the vtable of the {name} table")
        self.structural.extend((vtable + slot, 2) for slot in range(0, vtable_size, 2))

        def field_at(index: int) -> int:
            slot = 4 + 2 * index
            if slot + 2 > vtable_size:
                return 0
            relative = struct.unpack_from("<H", self.data, vtable + slot)[0]
            return position + relative if relative else 0

        for index, (field_name, kind) in TABLES[name].items():
            at = field_at(index)
            if not at:
                continue
            self.path.append(f"{name}.{field_name}")
            if kind.startswith("u:"):  # its type is the byte field before it
                type_at = field_at(index - 1)
                if type_at:
                    self.structural.append((type_at, 1))
                member = UNIONS[kind[2:]].get(self.data[type_at] if type_at else 0)
                if member is not None:  # unknown types pass, as in the C++ verifiers
                    self.table(self.offset(at, f"a {member} table"), member)
            else:
                self.field(at, kind)
            self.path.pop()
        self.depth -= 1

    def field(self, position: int, kind: str) -> None:
        """The field of `kind` (see `schema.py`) at `position`."""
        if kind.isdigit():
            self.scalar(position, int(kind), "the field")
        elif kind == "s":
            self.string(self.offset(position, "a string"), "a string")
        elif kind.startswith("t:"):
            self.table(self.offset(position, f"a {kind[2:]} table"), kind[2:])
        elif kind == "vs" or kind.startswith("vt:"):
            start, length = self.vector(self.offset(position, "a vector"), 4, "a vector")
            where = self.path[-1]
            for element in range(length):
                self.path[-1] = f"{where}[{element}]"
                self.field(start + 4 * element, "s" if kind == "vs" else kind[1:])
            self.path[-1] = where
        else:
            self.vector(self.offset(position, "a vector"), int(kind[1:]), "a vector")


def verify_model(data: bytes) -> None:
    """Raises `VerificationError` unless `data` is a structurally valid TFLite flatbuffer
    (file identifier `TFL3`, root table `Model`)."""
    if len(data) >= MAX_BUFFER_BYTES:
        raise VerificationError(f"the file has {len(data)} bytes, more than a flatbuffer can")
    if len(data) < 8 or data[4:8] != b"TFL3":
        raise VerificationError("no 'TFL3' file identifier")
    verifier = _Verifier(data)
    verifier.table(verifier.offset(0, "the Model table"), "Model")


def structure(data: bytes) -> list[tuple[int, int]]:
    """(byte position, size) of every offset, vtable entry, vector or string length and union
    type of the valid TFLite flatbuffer `data`, in the order the verifier reads them, without
    repeats: the bytes a corruption test flips."""
    verifier = _Verifier(data)
    verifier.table(verifier.offset(0, "the Model table"), "Model")
    return list(dict.fromkeys(verifier.structural))
