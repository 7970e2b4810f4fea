"""The project's passes, registered lazily so that drivers start fast.

One module per pass, named like the pass (`usmp-assign-pools` -> `assign_pools.py`).
"""

from collections.abc import Callable
from importlib import import_module

from xdsl.passes import ModulePass

# pass name -> (module under usmp_dialect.passes, class name)
_PASSES: dict[str, tuple[str, str]] = {
    "usmp-buffer-results-to-out-params": (
        "buffer_results_to_out_params",
        "UsmpBufferResultsToOutParamsPass",
    ),
    "usmp-import-memref": ("import_memref", "UsmpImportMemrefPass"),
    "usmp-parallel-to-serial": ("parallel_to_serial", "UsmpParallelToSerialPass"),
    "usmp-assign-pools": ("assign_pools", "UsmpAssignPoolsPass"),
    "usmp-create-io-allocates": ("create_io_allocates", "UsmpCreateIoAllocatesPass"),
    "usmp-extract-buffer-info": ("extract_buffer_info", "UsmpExtractBufferInfoPass"),
    "usmp-memory-aware-order": ("memory_aware_order", "UsmpMemoryAwareOrderPass"),
    "usmp-plan": ("plan", "UsmpPlanPass"),
    "usmp-convert-to-pool-offsets": ("convert_to_pool_offsets", "UsmpConvertToPoolOffsetsPass"),
    "usmp": ("usmp", "UsmpPass"),
    "convert-pool-to-memref": ("convert_pool_to_memref", "ConvertPoolToMemrefPass"),
}


def _factory(module: str, cls: str) -> Callable[[], type[ModulePass]]:
    def load() -> type[ModulePass]:
        return getattr(import_module(f"usmp_dialect.passes.{module}"), cls)

    return load


def get_all_passes() -> dict[str, Callable[[], type[ModulePass]]]:
    """Every pass of the project, by name, as factories."""
    return {name: _factory(module, cls) for name, (module, cls) in _PASSES.items()}
