"""The `xdsl.universe` entry point: makes a stock `xdsl-opt` know our dialects, passes and
targets, and extends xDSL's `memref`, `linalg` and `bufferization` with upstream's syntax. It is
the only registration path; `usmp-opt` inherits it from `xDSLOptMain`."""

from xdsl.universe import XDSL_UNIVERSE, Universe

from usmp_dialect.backend import get_all_targets
from usmp_dialect.dialects import get_all_dialects, get_upstream_extensions
from usmp_dialect.passes import get_all_passes

# Upstream MLIR's printed forms (`memref.global` custom syntax, `linalg.map`, ...): xDSL's
# registry keeps its dialect names, with our extended factories (a universe may not define a
# dialect name twice). Loading this entry point is what installs them.
XDSL_UNIVERSE.all_dialects.update(get_upstream_extensions())

USMP_UNIVERSE = Universe(
    all_dialects=get_all_dialects(),
    all_passes=get_all_passes(),
    all_targets=get_all_targets(),
)
