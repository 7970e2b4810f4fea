"""The usmp and pool dialects from Python: builders, accessors, helpers and verifier errors."""

from __future__ import annotations

import re

import pytest
from xdsl.context import Context
from xdsl.dialects import arith, func, memref
from xdsl.dialects.builtin import (
    DYNAMIC_INDEX,
    BFloat16Type,
    Builtin,
    BytesAttr,
    ComplexType,
    DenseIntOrFPElementsAttr,
    Float16Type,
    Float32Type,
    Float64Type,
    IndexType,
    IntegerType,
    MemRefType,
    ModuleOp,
    StridedLayoutAttr,
    StringAttr,
    TensorType,
    f32,
    i8,
    i32,
)
from xdsl.ir import Attribute, Block, Operation, Region
from xdsl.parser import Parser
from xdsl.utils.exceptions import VerifyException

import usmp_dialect.dialects.pool as pool_dialect
from usmp_dialect.dialects.pool import (
    POOL,
    BaseOp,
    ConstantPoolOp,
    PoolOpBase,
    WorkspacePoolOp,
    find_pool,
    lookup_module_symbol,
    module_pools,
)
from usmp_dialect.dialects.usmp import (
    DEFAULT_BUFFER_ALIGNMENT_BYTES,
    USMP,
    AllocateConstOp,
    AllocateOp,
    AllocationOp,
    buffer_size_bytes,
    element_size_bytes,
    io_kind,
)


def make_context() -> Context:
    ctx = Context()
    for dialect in (Builtin, func.Func, arith.Arith, memref.MemRef, USMP, POOL):
        ctx.load_dialect(dialect)
    return ctx


def parse(text: str) -> ModuleOp:
    return Parser(make_context(), text).parse_module()


def function(name: str, ops: list[Operation]) -> func.FuncOp:
    """`func.func @name() { ops; func.return }`."""
    return func.FuncOp(name, ((), ()), Region(Block([*ops, func.ReturnOp()])))


def verify_error(op: Operation, message: str) -> None:
    """Asserts that verifying `op` fails with exactly `message` as the diagnostic."""
    with pytest.raises(VerifyException, match=re.escape(message)):
        op.verify()


# --- helpers ---------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("element_type", "size"),
    [
        (IntegerType(1), 1),
        (IntegerType(4), 1),
        (i8, 1),
        (IntegerType(16), 2),
        (i32, 4),
        (IntegerType(64), 8),
        (IndexType(), 8),
        (Float16Type(), 2),
        (BFloat16Type(), 2),
        (Float32Type(), 4),
        (Float64Type(), 8),
    ],
)
def test_element_size_bytes(element_type: Attribute, size: int) -> None:
    assert element_size_bytes(element_type) == size


def test_element_size_bytes_rejects_unsupported_types() -> None:
    with pytest.raises(ValueError, match="unsupported element type complex<f32>"):
        element_size_bytes(ComplexType(f32))


@pytest.mark.parametrize(
    ("memref_type", "size"),
    [
        (MemRefType(i8, [1, 16, 16, 8]), 2048),
        (MemRefType(f32, [256]), 1024),
        (MemRefType(Float64Type(), []), 8),
        (MemRefType(IntegerType(1), [3, 5]), 15),
        (MemRefType(IndexType(), [2]), 16),
        (MemRefType(i32, [0]), 0),
    ],
)
def test_buffer_size_bytes(memref_type: MemRefType, size: int) -> None:
    assert buffer_size_bytes(memref_type) == size


def test_io_kind() -> None:
    assert io_kind(StringAttr("input")) == "input"
    assert io_kind(StringAttr("output")) == "output"
    assert io_kind(StringAttr("inout")) is None
    assert io_kind(None) is None


# --- usmp builders ---------------------------------------------------------------------------


def test_allocate_builder_and_accessors() -> None:
    op = AllocateOp(MemRefType(f32, [256]), alignment=64, pools=("sram", "dram"))
    op.verify()
    assert str(op) == (
        "%0 = usmp.allocate {alignment = 64 : i64, pools = [@sram, @dram]} : memref<256xf32>"
    )
    assert isinstance(op, AllocationOp)
    assert op.buffer_type == MemRefType(f32, [256])
    assert op.alignment_bytes == 64
    assert op.size_bytes == 1024
    assert op.candidate_pool_names == ("sram", "dram")
    assert not op.is_planned
    assert op.pool_name is None and op.offset_bytes is None


def test_allocate_defaults() -> None:
    op = AllocateOp(MemRefType(i8, [1, 16, 16, 8]))
    assert str(op) == "%0 = usmp.allocate : memref<1x16x16x8xi8>"
    assert op.alignment_bytes == DEFAULT_BUFFER_ALIGNMENT_BYTES == 16
    assert op.candidate_pool_names == ()
    assert op.size_bytes == 2048


def test_planned_allocate_builder() -> None:
    op = AllocateOp(MemRefType(i8, [16]), pool="sram", offset=64)
    op.verify()
    assert str(op) == "%0 = usmp.allocate {pool = @sram, offset = 64 : i64} : memref<16xi8>"
    assert op.is_planned
    assert op.pool_name == "sram"
    assert op.offset_bytes == 64


def test_allocate_const_builder() -> None:
    value = DenseIntOrFPElementsAttr.from_list(MemRefType(i32, [3]), [1, 2, 3])
    op = AllocateConstOp(value, alignment=32, pools=("flash",))
    op.verify()
    assert str(op) == (
        "%0 = usmp.allocate_const {alignment = 32 : i64, pools = [@flash]} "
        "dense<[1, 2, 3]> : memref<3xi32>"
    )
    assert op.buffer_type == MemRefType(i32, [3])
    assert op.value == value
    assert op.size_bytes == 12
    assert op.alignment_bytes == 32


def test_allocate_const_parses_hex_literal() -> None:
    module = parse('%v = usmp.allocate_const dense<"0x0000803F00000040"> : memref<2xf32>')
    module.verify()
    op = next(iter(module.ops))
    assert isinstance(op, AllocateConstOp)
    assert op.value.get_values() == (1.0, 2.0)
    assert op.buffer_type == MemRefType(f32, [2])


def test_allocate_const_keeps_discardable_attributes_apart() -> None:
    module = parse(
        '%w = usmp.allocate_const {alignment = 32 : i64, usmp.note = "w"} '
        "dense<[1, 2]> : memref<2xi8>"
    )
    op = next(iter(module.ops))
    assert isinstance(op, AllocateConstOp)
    assert set(op.properties) == {"alignment", "value"}
    assert set(op.attributes) == {"usmp.note"}


# --- pool builders ---------------------------------------------------------------------------


def test_pool_builders_and_accessors() -> None:
    sram = WorkspacePoolOp("sram", size_hint_bytes=65536, targets=("c",))
    dram = WorkspacePoolOp(
        "dram", targets=("c", "accel"), internal=True, alignment=64, target_burst_bytes={"c": 8}
    )
    flash = ConstantPoolOp("flash", clock_frequency_hz=1000, read_latency_cycles=2)
    assert str(sram) == 'pool.workspace @sram {targets = ["c"], size_hint_bytes = 65536 : i64}'
    assert str(dram) == (
        'pool.workspace @dram {targets = ["c", "accel"], internal, '
        "target_burst_bytes = {c = 8 : i64}, alignment = 64 : i64}"
    )
    assert str(flash) == (
        "pool.constant @flash {clock_frequency_hz = 1000 : i64, read_latency_cycles = 2 : i64}"
    )
    assert (sram.pool_name, sram.capacity_bytes, sram.is_internal) == ("sram", 65536, False)
    assert dram.target_names == ("c", "accel")
    assert dram.alignment_bytes == 64 and dram.is_internal
    assert flash.target_names == ("c",)
    assert flash.alignment_bytes == 16 and flash.capacity_bytes is None
    assert (sram.KIND, flash.KIND) == ("workspace", "constant")
    assert isinstance(flash, PoolOpBase)


def test_pool_builder_rejects_unknown_property() -> None:
    with pytest.raises(TypeError, match="unknown pool property 'speed'"):
        WorkspacePoolOp("sram", speed=3)


def test_module_built_in_python_verifies_and_round_trips() -> None:
    constant_data = DenseIntOrFPElementsAttr.from_list(MemRefType(i8, [4]), [1, 2, 3, 4])
    module = ModuleOp(
        [
            WorkspacePoolOp("sram", size_hint_bytes=4096),
            ConstantPoolOp("flash"),
            WorkspacePoolOp("dram"),
            function(
                "main",
                [
                    AllocateOp(MemRefType(f32, [64]), pools=("sram", "dram")),
                    AllocateConstOp(constant_data, pools=("flash",)),
                    BaseOp("sram", 4096),
                ],
            ),
        ]
    )
    module.verify()
    assert [pool.pool_name for pool in module_pools(module)] == ["sram", "flash", "dram"]
    main = module.body.block.last_op
    assert isinstance(main, func.FuncOp)
    allocate = main.body.block.first_op
    assert allocate is not None
    found = find_pool(allocate, "dram")
    assert isinstance(found, WorkspacePoolOp) and found.pool_name == "dram"
    assert find_pool(module, "flash") is not None
    assert find_pool(module, "main") is None
    assert find_pool(module, "nope") is None
    reparsed = parse(str(module))
    reparsed.verify()
    assert str(reparsed) == str(module)


def test_base_op_builder() -> None:
    base = BaseOp("sram", 1024)
    assert str(base) == "%0 = pool.base @sram : memref<1024xi8>"
    assert base.pool_name == "sram"
    assert base.memref.type == MemRefType(i8, [1024])
    ModuleOp([WorkspacePoolOp("sram", size_bytes=1024), function("main", [base])]).verify()


# --- symbol lookup ---------------------------------------------------------------------------


def test_symbol_lookup_follows_changes_to_the_module() -> None:
    sram = WorkspacePoolOp("sram")
    module = ModuleOp([sram, function("main", [])])
    assert lookup_module_symbol(module, "sram") is sram
    sram.detach()
    sram.erase()
    assert lookup_module_symbol(module, "sram") is None
    replacement = ConstantPoolOp("sram")
    module.body.block.add_op(replacement)
    assert lookup_module_symbol(module, "sram") is replacement
    replacement.properties["sym_name"] = StringAttr("flash")
    assert lookup_module_symbol(module, "sram") is None
    assert lookup_module_symbol(module, "flash") is replacement
    main = lookup_module_symbol(module, "main")
    assert isinstance(main, func.FuncOp)


def test_reference_to_erased_pool_is_reported() -> None:
    sram = WorkspacePoolOp("sram")
    allocate = AllocateOp(MemRefType(i8, [4]), pools=("sram",))
    module = ModuleOp([sram, function("main", [allocate])])
    module.verify()
    sram.detach()
    sram.erase()
    verify_error(module, "candidate pool @sram does not name a pool")


# --- verifier errors -------------------------------------------------------------------------


def test_allocate_errors() -> None:
    verify_error(
        AllocateOp(MemRefType(i8, [DYNAMIC_INDEX])), "buffer type memref<?xi8> has a dynamic shape"
    )
    verify_error(
        AllocateOp(MemRefType(i8, [-1])), "buffer type memref<-1xi8> has a negative dimension"
    )
    verify_error(
        AllocateOp(MemRefType(i8, [4], StridedLayoutAttr([2]))),
        "buffer type memref<4xi8, strided<[2]>> must have the identity layout",
    )
    verify_error(AllocateOp(MemRefType(i8, [4]), alignment=3), "alignment 3 is not a power of two")
    verify_error(AllocateOp(MemRefType(i8, [4]), alignment=0), "alignment must be positive, got 0")
    verify_error(
        AllocateOp(MemRefType(i8, [4]), pools=("a", "a")),
        "candidate pool @a is listed twice in 'pools'",
    )
    verify_error(AllocateOp(MemRefType(i8, [4]), pools=()), "'pools' must list at least one")
    verify_error(AllocateOp(MemRefType(i8, [4]), offset=0), "'offset' is given without 'pool'")
    verify_error(AllocateOp(MemRefType(i8, [4]), pool="sram", offset=-16), "offset -16 is negative")
    verify_error(
        AllocateOp(MemRefType(i8, [4]), pool="sram", offset=8),
        "offset 8 is not a multiple of the alignment 16",
    )
    tensor_result = AllocateOp.create(result_types=[TensorType(i8, [4])])
    verify_error(tensor_result, "a buffer must be a memref, got tensor<4xi8>")
    with pytest.raises(VerifyException, match="must return a memref"):
        _ = tensor_result.buffer_type


def test_allocate_const_data_errors() -> None:
    three = DenseIntOrFPElementsAttr.from_list(MemRefType(i32, [3]), [1, 2, 3])
    verify_error(
        AllocateConstOp.create(properties={"value": three}, result_types=[MemRefType(i32, [4])]),
        "data holds 3 elements but memref<4xi32> needs 4",
    )
    verify_error(
        AllocateConstOp.create(properties={"value": three}, result_types=[MemRefType(i8, [3])]),
        "data of element type i32 does not match the element type of memref<3xi8>",
    )
    as_tensor = DenseIntOrFPElementsAttr.from_list(TensorType(i32, [3]), [1, 2, 3])
    verify_error(
        AllocateConstOp.create(
            properties={"value": as_tensor}, result_types=[MemRefType(i32, [3])]
        ),
        "the data of usmp.allocate_const must be typed by its memref type memref<3xi32>, "
        "got tensor<3xi32>",
    )
    # Data that holds fewer bytes than its own type says (only constructible from Python).
    short = DenseIntOrFPElementsAttr(MemRefType(i32, [3]), BytesAttr(bytes(8)))
    verify_error(AllocateConstOp(short), "data holds 2 elements but memref<3xi32> needs 3")


def test_pool_kind_must_fit_the_allocation() -> None:
    flash = ConstantPoolOp("flash")
    sram = WorkspacePoolOp("sram")
    allocate = AllocateOp(MemRefType(i8, [4]), pools=("flash",))
    verify_error(
        ModuleOp([sram, flash, function("main", [allocate])]),
        "candidate pool @flash is a constant pool, but 'usmp.allocate' needs a workspace pool",
    )
    value = DenseIntOrFPElementsAttr.from_list(MemRefType(i8, [2]), [1, 2])
    constant = AllocateConstOp(value, pool="sram", offset=0)
    verify_error(
        ModuleOp([WorkspacePoolOp("sram"), function("main", [constant])]),
        "pool @sram is a workspace pool, but 'usmp.allocate_const' needs a constant pool",
    )


def test_unknown_and_non_pool_symbols() -> None:
    verify_error(
        ModuleOp([function("main", [AllocateOp(MemRefType(i8, [4]), pools=("main",))])]),
        "candidate pool @main is not a pool (it is a 'func.func')",
    )
    verify_error(
        ModuleOp([function("main", [BaseOp("nope", 16)])]), "pool @nope does not name a pool"
    )


def test_pool_errors() -> None:
    verify_error(
        ModuleOp([WorkspacePoolOp("sram"), ConstantPoolOp("sram")]), "pool @sram is declared twice"
    )
    verify_error(WorkspacePoolOp("sram", alignment=24), "alignment 24 is not a power of two")
    verify_error(
        WorkspacePoolOp("sram", size_hint_bytes=-1), "size_hint_bytes must be >= 0, got -1"
    )
    verify_error(
        WorkspacePoolOp("sram", read_latency_cycles=-3), "read_latency_cycles must be >= 0, got -3"
    )
    verify_error(WorkspacePoolOp("sram", targets=()), "pool @sram: targets must not be empty")
    verify_error(
        function("main", [WorkspacePoolOp("sram")]),
        "pool @sram must be declared at module level, not inside 'func.func'",
    )
    short = DenseIntOrFPElementsAttr(TensorType(i8, [4]), BytesAttr(bytes(2)))
    flash = ConstantPoolOp("flash")
    flash.properties["data"] = short
    verify_error(flash, "pool @flash: data holds 2 bytes but its type tensor<4xi8> says 4")


def test_base_op_errors() -> None:
    verify_error(
        BaseOp.create(properties=BaseOp("sram", 4).properties, result_types=[MemRefType(i32, [4])]),
        "pool.base of @sram must return a statically sized 1-D memref of i8 with identity "
        "layout (e.g. memref<1024xi8>), got memref<4xi32>",
    )
    verify_error(
        ModuleOp([WorkspacePoolOp("sram", size_bytes=64), function("main", [BaseOp("sram", 32)])]),
        "pool.base of @sram returns memref<32xi8>, but the pool's size_bytes is 64",
    )


def test_verifying_many_references_reads_each_top_level_op_a_bounded_number_of_times(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Symbol lookups are indexed: verifying N references in a module of M top-level ops costs
    O(N + M) symbol reads, not O(N * M) (modules may hold thousands of functions)."""
    functions = 400
    module = ModuleOp(
        [
            *(
                function(
                    f"f{index}",
                    [AllocateOp(MemRefType(i8, [16]), pools=("sram", "dram"), pool="dram")],
                )
                for index in range(functions)
            ),
            WorkspacePoolOp("sram"),
            WorkspacePoolOp("dram"),
        ]
    )
    reads = 0
    original = pool_dialect.symbol_name

    def counting_symbol_name(op: Operation) -> str | None:
        nonlocal reads
        reads += 1
        return original(op)

    monkeypatch.setattr(pool_dialect, "symbol_name", counting_symbol_name)
    module.verify()
    references = 3 * functions + 2  # pools, pool, and each pool's duplicate check
    assert reads <= references + 2 * (functions + 2)
