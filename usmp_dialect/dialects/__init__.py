"""The project's dialects, registered lazily so that drivers start fast."""

from collections.abc import Callable

from xdsl.ir import Dialect


def get_usmp() -> Dialect:
    from usmp_dialect.dialects.usmp import USMP

    return USMP


def get_pool() -> Dialect:
    from usmp_dialect.dialects.pool import POOL

    return POOL


def get_all_dialects() -> dict[str, Callable[[], Dialect]]:
    """Every dialect of the project, by name, as factories."""
    return {"usmp": get_usmp, "pool": get_pool}
