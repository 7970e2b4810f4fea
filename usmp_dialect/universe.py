"""The `xdsl.universe` entry point: makes a stock `xdsl-opt` know our dialects, passes and
targets. It is the only registration path; `usmp-opt` inherits it from `xDSLOptMain`."""

from xdsl.universe import Universe

from usmp_dialect.backend import get_all_targets
from usmp_dialect.dialects import get_all_dialects
from usmp_dialect.passes import get_all_passes

USMP_UNIVERSE = Universe(
    all_dialects=get_all_dialects(),
    all_passes=get_all_passes(),
    all_targets=get_all_targets(),
)
