"""The project's targets (`-t`), registered lazily."""

from collections.abc import Callable
from importlib import import_module

from xdsl.utils.target import Target

# target name -> (module under usmp_dialect.backend, class name)
_TARGETS: dict[str, tuple[str, str]] = {
    "c": ("c.target", "CTarget"),
    "c-header": ("c.target", "CHeaderTarget"),
    "project": ("project", "ProjectTarget"),
}


def _factory(module: str, cls: str) -> Callable[[], type[Target]]:
    def load() -> type[Target]:
        return getattr(import_module(f"usmp_dialect.backend.{module}"), cls)

    return load


def get_all_targets() -> dict[str, Callable[[], type[Target]]]:
    """Every target of the project, by name, as factories."""
    return {name: _factory(module, cls) for name, (module, cls) in _TARGETS.items()}
