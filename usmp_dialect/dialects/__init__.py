"""The project's dialects, registered lazily so that drivers start fast."""

from collections.abc import Callable

from xdsl.ir import Dialect


def get_usmp() -> Dialect:
    from usmp_dialect.dialects.usmp import USMP

    return USMP


def get_pool() -> Dialect:
    from usmp_dialect.dialects.pool import POOL

    return POOL


def get_memref() -> Dialect:
    from usmp_dialect.dialects.upstream import extended_memref

    return extended_memref()


def get_linalg() -> Dialect:
    from usmp_dialect.dialects.upstream import extended_linalg

    return extended_linalg()


def get_arith() -> Dialect:
    from usmp_dialect.dialects.upstream import extended_arith

    return extended_arith()


def get_bufferization() -> Dialect:
    from usmp_dialect.dialects.upstream import extended_bufferization

    return extended_bufferization()


def get_all_dialects() -> dict[str, Callable[[], Dialect]]:
    """Every dialect of the project, by name, as factories."""
    return {"usmp": get_usmp, "pool": get_pool}


def get_upstream_extensions() -> dict[str, Callable[[], Dialect]]:
    """xDSL dialects extended with upstream MLIR's printed forms (dialects/upstream.py), by
    name, as factories: they replace xDSL's own entries in the `xdsl.universe` registry."""
    return {
        "arith": get_arith,
        "memref": get_memref,
        "linalg": get_linalg,
        "bufferization": get_bufferization,
    }
