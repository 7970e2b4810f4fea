"""`main.c` of a firmware project: one inference on a reproducible input, outputs printed.

Input pattern (reproduced in Python by `input_values`): element `i` (row-major) of input `k`
(0-based, in `struct <p>_inputs` order) is `v = (7 i + 13 k + 3) mod 256 - 128`, stored as the
input's type: `int8` v, `uint8` v + 128, other integers v, floats v / 64 (exact in binary).

Output format (`parse_outputs` reads it back): a line `status N` (what `<p>_run` returned),
then per output a line `output NAME DTYPE [D0, D1, ...]` followed by its values, 16 a line,
each line indented by two spaces: integers in decimal, floats with 9 significant digits
(`-1.23456789e-03`). The same text on the host (stdio)
and on the Cortex-M (the startup file's semihosting `usmp_write`), with no printf: the
firmware links no stdio.
"""

from __future__ import annotations

import numpy as np

from usmp_dialect.backend.c.program import TensorIO
from usmp_dialect.project.facts import ProjectFacts

VALUES_PER_LINE = 16

_FLOAT_TYPES = ("float", "double")


def input_values(index: int, shape: tuple[int, ...], dtype: str) -> np.ndarray:
    """The values `main.c` gives input `index` (see the module doc)."""
    count = int(np.prod(shape, dtype=np.int64)) if shape else 1
    v = (np.arange(count, dtype=np.int64) * 7 + index * 13 + 3) % 256 - 128
    if dtype.startswith("float"):
        return (v.astype(dtype) / 64).reshape(shape)
    if dtype == "uint8":
        return (v + 128).astype(np.uint8).reshape(shape)
    if dtype == "bool":
        return (v % 2 != 0).reshape(shape)
    return v.astype(dtype).reshape(shape)


def parse_outputs(text: str) -> tuple[int, dict[str, np.ndarray]]:
    """The status and the outputs (by name, shaped, in their dtype) `main.c` printed."""
    status = -1
    outputs: dict[str, np.ndarray] = {}
    current: tuple[str, str, tuple[int, ...]] | None = None
    values: list[str] = []

    def finish() -> None:
        if current is not None:
            name, dtype, shape = current
            kind = np.float64 if dtype.startswith("float") else np.int64
            outputs[name] = np.array([kind(v) for v in values]).astype(dtype).reshape(shape)

    for line in text.splitlines():
        if line.startswith("status "):
            status = int(line.split()[1])
        elif line.startswith("output "):
            finish()
            _, name, dtype, dims = line.split(" ", 3)
            shape = tuple(int(d) for d in dims.strip("[]").split(",") if d.strip())
            current, values = (name, dtype, shape), []
        elif line.startswith("  ") and current is not None:
            values += line.split()
    finish()
    return status, outputs


def _stem(prefix: str, tensor: TensorIO) -> str:
    """The stem of the header's macros of one input or output (`KWS_INPUT_INPUT1`)."""
    return f"{prefix.upper()}_{tensor.kind.upper()}_{tensor.name.upper()}"


def _fill(prefix: str, tensor: TensorIO, index: int, pointer: str) -> list[str]:
    stem = _stem(prefix, tensor)
    t = f"{stem}_DTYPE"
    if tensor.element_type in _FLOAT_TYPES:
        value = f"({t})pattern(i, {index}u) / 64.0{'f' if tensor.element_type == 'float' else ''}"
    elif tensor.dtype == "uint8":
        value = f"({t})(pattern(i, {index}u) + 128)"
    elif tensor.dtype == "bool":
        value = f"({t})(pattern(i, {index}u) & 1)"
    else:
        value = f"({t})pattern(i, {index}u)"
    return [
        f"  for (size_t i = 0; i < {stem}_ELEMENTS; ++i) {{",
        f"    (({t}*){pointer})[i] = {value};",
        "  }",
    ]


def _print(prefix: str, tensor: TensorIO, pointer: str) -> list[str]:
    t = tensor.element_type
    count = f"{_stem(prefix, tensor)}_ELEMENTS"
    shape = ", ".join(str(d) for d in tensor.shape)
    writer = "write_float" if t in _FLOAT_TYPES else "write_integer"
    cast = "(float)" if t in _FLOAT_TYPES else "(int64_t)"
    return [
        f'  usmp_write("output {tensor.name} {tensor.dtype} [{shape}]\\n");',
        "  {",
        f"    const {t}* values = (const {t}*){pointer};",
        f"    for (size_t i = 0; i < {count}; i += {VALUES_PER_LINE}u) {{",
        "      char line[16 * 24 + 4];",
        "      size_t length = 0;",
        "      line[length++] = ' ';",
        f"      for (size_t k = i; k < {count} && k < i + {VALUES_PER_LINE}u; ++k) {{",
        "        line[length++] = ' ';",
        f"        length += {writer}(line + length, {cast}values[k]);",
        "      }",
        "      line[length++] = '\\n';",
        "      line[length] = 0;",
        "      usmp_write(line);",
        "    }",
        "  }",
    ]


_RUNTIME = r"""#ifdef USMP_SEMIHOSTING
void usmp_write(const char* text); /* cortex-m/startup.c: semihosting SYS_WRITE0 */
#else
#include <stdio.h>
static void usmp_write(const char* text) { fputs(text, stdout); }
#endif

/* The input pattern: element i of input k. */
static int32_t pattern(size_t i, uint32_t k) {
  return (int32_t)((i * 7u + k * 13u + 3u) % 256u) - 128;
}

/* Writes value in decimal at text; returns the number of characters. */
static size_t write_integer(char* text, int64_t value) {
  char digits[24];
  size_t count = 0, length = 0;
  uint64_t magnitude = value < 0 ? 0u - (uint64_t)value : (uint64_t)value;
  if (value < 0) text[length++] = '-';
  do {
    digits[count++] = (char)('0' + (int)(magnitude % 10u));
    magnitude /= 10u;
  } while (magnitude);
  while (count) text[length++] = digits[--count];
  text[length] = 0;
  return length;
}
"""

_FLOAT_WRITER = r"""
/* Writes value with 9 significant digits (d.dddddddde+XX) at text; returns its length. */
static size_t write_float(char* text, float single) {
  size_t length = 0;
  double value = (double)single;
  int exponent = 0;
  if (value != value) {
    memcpy(text, "nan", 4);
    return 3;
  }
  if (value < 0.0) {
    text[length++] = '-';
    value = -value;
  }
  if (value > 3.5e38) {
    memcpy(text + length, "inf", 4);
    return length + 3;
  }
  if (value != 0.0) {
    while (value >= 10.0) {
      value /= 10.0;
      ++exponent;
    }
    while (value < 1.0) {
      value *= 10.0;
      --exponent;
    }
  }
  uint64_t digits = (uint64_t)(value * 1e8 + 0.5);
  if (digits >= 1000000000u) {
    digits /= 10u;
    ++exponent;
  }
  char reversed[10];
  for (int d = 0; d < 9; ++d) {
    reversed[d] = (char)('0' + (int)(digits % 10u));
    digits /= 10u;
  }
  text[length++] = reversed[8];
  text[length++] = '.';
  for (int d = 7; d >= 0; --d) text[length++] = reversed[d];
  text[length++] = 'e';
  text[length++] = exponent < 0 ? '-' : '+';
  if (exponent < 0) exponent = -exponent;
  text[length++] = (char)('0' + exponent / 10);
  text[length++] = (char)('0' + exponent % 10);
  text[length] = 0;
  return length;
}
"""


def main_source(facts: ProjectFacts) -> str:
    """The text of `main.c` for the project's model."""
    p, P = facts.prefix, facts.prefix.upper()
    tensors = facts.inputs + facts.outputs
    uses_float = any(t.element_type in _FLOAT_TYPES for t in facts.outputs)
    lines = [
        f"/* main.c: runs the model '{facts.model.name}' once ({p}.h, generated by usmp-dialect).",
        " *",
        f" * Fills every input with a fixed pattern, calls {p}_run and prints every output.",
        " * Element i (row-major) of input k (0-based, in struct order) is",
        " * v = (7 i + 13 k + 3) mod 256 - 128, stored as the input's type: int8 v, uint8 v + 128,",
        " * other integers v, floats v / 64.",
        " * On the host it prints with stdio; built with -DUSMP_SEMIHOSTING and",
        " * cortex-m/startup.c (the CMake toolchain file does it) through Arm semihosting. */",
        "#include <stddef.h>",
        "#include <stdint.h>",
        "#include <string.h>",
        "",
        f'#include "{p}.h"',
        "",
        _RUNTIME.rstrip(),
    ]
    if uses_float:
        lines.append(_FLOAT_WRITER.rstrip())
    lines.append("")
    macro_pools = facts.external_pools
    if macro_pools:
        for pool_facts in facts.pools:
            if pool_facts.internal:
                continue
            kind = pool_facts.kind.upper()
            macro = f"{P}_{pool_facts.field.upper()}"
            size = f"{macro}_{kind}_POOL_SIZE"
            if pool_facts.kind == "constant":
                lines.append(
                    f"static const _Alignas(64) uint8_t pool_{pool_facts.field}"
                    f"[{size} > 0 ? {size} : 1] = {{ {macro}_CONSTANT_POOL_DATA }};"
                )
            else:
                lines.append(
                    f"static _Alignas(64) uint8_t pool_{pool_facts.field}[{size} > 0 ? {size} : 1];"
                )
    if not facts.workspace_io:
        for tensor in tensors:
            lines.append(
                f"static _Alignas(16) uint8_t {tensor.kind}_{tensor.name}[{_stem(p, tensor)}_SIZE];"
            )
    lines += ["", "int main(void) {"]
    pools_argument = ""
    if macro_pools:
        fields = ", ".join(
            f".{pf.field} = (void*)pool_{pf.field}" for pf in facts.pools if not pf.internal
        )
        lines.append(f"  struct {p}_workspace_pools pools = {{ {fields} }};")
        pools_argument = "&pools"
    if facts.workspace_io:
        pools = pools_argument or "NULL"
        lines.append(f"  struct {p}_inputs inputs = {p}_map_inputs({pools});")
        lines.append(f"  struct {p}_outputs outputs = {p}_map_outputs({pools});")
        call = f"{p}_run({pools})"
    else:
        inputs = ", ".join(f".{t.name} = input_{t.name}" for t in facts.inputs)
        outputs = ", ".join(f".{t.name} = output_{t.name}" for t in facts.outputs)
        lines.append(f"  struct {p}_inputs inputs = {{ {inputs or '0'} }};")
        lines.append(f"  struct {p}_outputs outputs = {{ {outputs or '0'} }};")
        call = f"{p}_run(&inputs, &outputs{', ' + pools_argument if pools_argument else ''})"
    for index, tensor in enumerate(facts.inputs):
        lines += _fill(p, tensor, index, f"inputs.{tensor.name}")
    if facts.external_state:
        # The application's state pool: the model's state starts at its initial value.
        lines.append(f"  {p}_reset_state({pools_argument});")
    lines += [
        f"  int32_t status = {call};",
        "  {",
        "    char text[32];",
        '    memcpy(text, "status ", 7);',
        "    size_t length = 7 + write_integer(text + 7, status);",
        "    text[length++] = '\\n';",
        "    text[length] = 0;",
        "    usmp_write(text);",
        "  }",
    ]
    for tensor in facts.outputs:
        lines += _print(p, tensor, f"outputs.{tensor.name}")
    lines += ["  return status != 0;", "}", ""]
    return "\n".join(lines)
