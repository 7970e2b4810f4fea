"""`usmp`: the whole memory planner in one pass.

```
usmp{algorithm=auto workspace-io=false entry=main time-limit=10 seed=0 report="p.json" svg="m.svg"
     order=memory}
```

Runs, in order: (U4, `workspace-io=true`) `usmp-create-io-allocates`, (`order=memory`, the
default) `usmp-memory-aware-order`, `usmp-assign-pools` (which `usmp-plan` runs first),
`usmp-plan`, `usmp-convert-to-pool-offsets`. The I/O buffers are created before pools are
assigned (as TVM did), so they get the workspace pools of the entry function's target like any
other buffer, and before the order is chosen, so that their live bytes count (U4 plans them).
`order=program` keeps the operators in the order the program gives them.
"""

from __future__ import annotations

from dataclasses import dataclass

from xdsl.context import Context
from xdsl.dialects.builtin import ModuleOp
from xdsl.passes import ModulePass

from usmp_dialect.passes.convert_to_pool_offsets import UsmpConvertToPoolOffsetsPass
from usmp_dialect.passes.create_io_allocates import UsmpCreateIoAllocatesPass
from usmp_dialect.passes.memory_aware_order import UsmpMemoryAwareOrderPass
from usmp_dialect.passes.plan import UsmpPlanPass, check_plan_options

ORDERS = ("memory", "program")
"""`order=`: the operators' order that needs the fewest live bytes, or the program's own."""


@dataclass(frozen=True)
class UsmpPass(ModulePass):
    """Plans every buffer of the program into pools and rewrites it to use pool offsets."""

    name = "usmp"

    algorithm: str = "auto"
    workspace_io: bool = False
    entry: str = "main"
    time_limit: int | float = 10.0
    seed: int = 0
    report: str | None = None
    svg: str | None = None
    order: str = "memory"

    def __post_init__(self) -> None:
        check_plan_options(self.time_limit, self.seed)
        if self.order not in ORDERS:
            raise ValueError(f"order must be one of {', '.join(ORDERS)}, not {self.order}")

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        if self.workspace_io:
            UsmpCreateIoAllocatesPass(entry=self.entry).apply(ctx, op)
        if self.order == "memory":
            UsmpMemoryAwareOrderPass(entry=self.entry).apply(ctx, op)
        UsmpPlanPass(
            algorithm=self.algorithm,
            entry=self.entry,
            report=self.report,
            svg=self.svg,
            time_limit=self.time_limit,
            seed=self.seed,
        ).apply(ctx, op)
        UsmpConvertToPoolOffsetsPass(entry=self.entry).apply(ctx, op)
