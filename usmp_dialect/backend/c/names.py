"""C identifiers from SSA name hints: sanitised, never clashing with C or with each other."""

from __future__ import annotations

import hashlib
import re
from dataclasses import dataclass, field

# C keywords and the library names the generated code may see through its includes
# (<stdint.h>, <math.h>, <string.h>, <stddef.h>); an SSA name hint never shadows them.
RESERVED_C_NAMES: frozenset[str] = frozenset(
    """
    auto break case char const continue default do double else enum extern float for goto if
    inline int long register restrict return short signed sizeof static struct switch typedef
    union unsigned void volatile while _Alignas _Alignof _Atomic _Bool _Complex _Generic
    _Imaginary _Noreturn _Static_assert _Thread_local bool true false NULL main int8_t int16_t
    int32_t int64_t uint8_t uint16_t uint32_t uint64_t intptr_t uintptr_t size_t ptrdiff_t
    max_align_t offsetof memcpy memmove memset memcmp strlen INFINITY NAN HUGE_VAL isnan isinf
    signbit errno abs labs
    """.split()  # noqa: SIM905 (a word list reads better than 150 quoted strings)
)
# <math.h> functions, in their double, float (`f`) and long double (`l`) forms.
_MATH_FUNCTIONS = """
    acos acosh asin asinh atan atan2 atanh cbrt ceil copysign cos cosh erf erfc exp exp2 expm1
    fabs fdim floor fma fmax fmin fmod frexp hypot ilogb ldexp lgamma llrint llround log log10
    log1p log2 logb lrint lround modf nan nearbyint nextafter pow remainder rint round scalbn
    sin sinh sqrt tan tanh tgamma trunc
    """.split()  # noqa: SIM905
RESERVED_C_NAMES |= {name + suffix for name in _MATH_FUNCTIONS for suffix in ("", "f", "l")}

_INVALID_CHARS = re.compile(r"[^A-Za-z0-9_]")


def sanitize(hint: str) -> str:
    """`hint` turned into a valid C identifier (which may still need uniquing)."""
    name = _INVALID_CHARS.sub("_", hint)
    if not name or name[0].isdigit():
        name = "v" + name
    return name


MAX_IDENTIFIER_CHARS = 63  # C11 5.2.4.1: significant initial characters of an identifier
_HASH_CHARS = 8


def shortened(name: str, limit: int) -> str:
    """`name` if it has at most `limit` characters, else its start and `_` + 8 hex digits of
    its SHA-256, `limit` characters in all: stable, and distinct names stay distinct."""
    if len(name) <= limit:
        return name
    digest = hashlib.sha256(name.encode()).hexdigest()[:_HASH_CHARS]
    return f"{name[: limit - _HASH_CHARS - 1].rstrip('_') or 'v'}_{digest}"


@dataclass
class NameTable:
    """Hands out unique C identifiers of at most `limit` characters; a clash gets a `_N`
    suffix, never a merge; a longer hint is cut and gets a short hash (`shortened`)."""

    taken: set[str] = field(default_factory=lambda: set(RESERVED_C_NAMES))
    limit: int = MAX_IDENTIFIER_CHARS

    def fresh(self, hint: str) -> str:
        base = sanitize(hint)
        # Identifiers with a leading underscore and capital or double underscore are reserved.
        if base.startswith("__") or (base.startswith("_") and base[1:2].isupper()):
            base = "v" + base
        base = shortened(base, self.limit)
        name = base
        suffix = 1
        while name in self.taken:
            tail = f"_{suffix}"
            name = base[: self.limit - len(tail)] + tail
            suffix += 1
        self.taken.add(name)
        return name

    def child(self) -> NameTable:
        """A table for a nested scope: starts with every name taken here."""
        return NameTable(set(self.taken), self.limit)
