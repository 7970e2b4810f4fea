"""The C printer for function bodies: one handler per op, dispatched on the op type.

Modelled on xDSL's WGSL printer. Every SSA value becomes a C local named after its name hint;
scalar constants are printed inline at their uses. A memref value becomes a typed pointer to its
element at index (0, ..., 0); its strides come from its (static) type, so `memref.load %a[%i, %j]`
prints as `a[i * 16 + j]`.
"""

from __future__ import annotations

import math as pymath
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from functools import singledispatchmethod

from xdsl.dialects import affine, arith, func, math, memref, scf
from xdsl.dialects.builtin import (
    DYNAMIC_INDEX,
    FloatAttr,
    IndexType,
    IntegerAttr,
    IntegerType,
    MemRefType,
    StringAttr,
    SymbolRefAttr,
    UnknownLoc,
)
from xdsl.ir import Attribute, Block, BlockArgument, Operation, Region, SSAValue, Use
from xdsl.ir.affine import (
    AffineBinaryOpExpr,
    AffineBinaryOpKind,
    AffineConstantExpr,
    AffineDimExpr,
    AffineExpr,
    AffineSymExpr,
)
from xdsl.utils.base_printer import BasePrinter
from xdsl.utils.exceptions import DiagnosticException

from usmp_dialect.backend.c import c_types, loops
from usmp_dialect.backend.c.names import NameTable
from usmp_dialect.dialects import pool
from usmp_dialect.dialects.upstream import RemfOp
from usmp_dialect.dialects.usmp import buffer_size_bytes

# Ops whose only effect is their results: not printed when no result is used.
_PURE_OPS: tuple[type[Operation], ...] = (
    affine.ApplyOp,
    arith.ConstantOp,
    memref.LoadOp,
    memref.ViewOp,
    memref.SubviewOp,
    memref.CastOp,
    memref.ReinterpretCastOp,
    memref.CollapseShapeOp,
    memref.ExpandShapeOp,
    memref.GetGlobalOp,
    memref.DimOp,
    pool.BaseOp,
)

# Where an op the backend cannot print comes from, and the pass that lowers it.
_LOWERING_PASSES: dict[str, str] = {
    "linalg": "convert-linalg-to-loops",
    "affine": "lower-affine",
    "usmp": "usmp",
    "memref.alloc": "usmp-import-memref,usmp",
    "memref.alloca": "usmp-import-memref,usmp",
    "memref.dealloc": "usmp-import-memref,usmp",
    "bufferization": "a bufferization pipeline (the C backend needs memrefs)",
    "tensor": "a bufferization pipeline (the C backend needs memrefs)",
}

UNPLANNED_ALLOCATIONS = ("usmp.allocate", "usmp.allocate_const", "memref.alloc", "memref.alloca")


def describe_location(op: Operation) -> str:
    """Where `op` is: its source location when known, and its enclosing function."""
    parts: list[str] = []
    if not isinstance(op.location, UnknownLoc):
        parts.append(f"at {op.location}")
    parent = op.parent_op()
    while parent is not None and not isinstance(parent, func.FuncOp):
        parent = parent.parent_op()
    if isinstance(parent, func.FuncOp):
        parts.append(f"in function @{parent.sym_name.data}")
    return " ".join(parts) if parts else "at module level"


def unsupported_op_error(op: Operation) -> DiagnosticException:
    """The one-line error for an op the C backend cannot print."""
    where = describe_location(op)
    if op.name in UNPLANNED_ALLOCATIONS:
        passes = "usmp" if op.name.startswith("usmp.") else "usmp-import-memref,usmp"
        return DiagnosticException(
            f"C backend: unplanned allocation '{op.name}' {where}; run the `usmp` pass first "
            f"(usmp-opt -p {passes} -t c)"
        )
    lowering = _LOWERING_PASSES.get(op.name) or _LOWERING_PASSES.get(op.name.split(".")[0])
    hint = f"; lower it first with `{lowering}`" if lowering else ""
    return DiagnosticException(f"C backend: cannot print '{op.name}' {where}{hint}")


def check_planned(ops: Iterable[Operation]) -> None:
    """Fails with the `usmp` hint when any allocation in `ops` is still unplanned."""
    for top in ops:
        for op in top.walk():
            if op.name in UNPLANNED_ALLOCATIONS:
                raise unsupported_op_error(op)


@dataclass(frozen=True)
class MemrefValue:
    """How a memref value is reached in C: a pointer to its element (0, ..., 0)."""

    name: str
    element_type: Attribute
    shape: tuple[int, ...]
    strides: tuple[int, ...]
    const: bool
    is_pool: bool = False  # a whole pool: bytes, printed as uint8_t

    @property
    def element_c(self) -> str:
        return "uint8_t" if self.is_pool else c_types.c_type(self.element_type)

    @property
    def pointer_c(self) -> str:
        return f"{'const ' if self.const else ''}{self.element_c}*"

    @property
    def is_contiguous(self) -> bool:
        return self.strides == row_major_strides(self.shape)


def is_dead_use(use: Use, dead: set[Operation], dropped: Mapping[str, frozenset[int]]) -> bool:
    """Whether the C code does not print `use`: its op is dead, or it is a call argument the
    callee's C function does not take (`dropped`: function name -> dropped positions)."""
    user = use.operation
    if user in dead:
        return True
    return isinstance(user, func.CallOp) and use.index in dropped.get(
        user.callee.root_reference.data, frozenset()
    )


def dead_ops(
    function: Operation, dropped: Mapping[str, frozenset[int]] | None = None
) -> set[Operation]:
    """Side-effect-free ops whose results nothing printed uses (C rejects unused locals).

    `dropped` names the call arguments that are not printed (pool parameters a callee does not
    use), so a value only passed there is dead too."""
    dropped = dropped or {}
    ops = list(function.walk())
    dead: set[Operation] = set()
    changed = True
    while changed:
        changed = False
        for op in reversed(ops):
            if op in dead or not isinstance(op, _PURE_OPS) or not op.results:
                continue
            if all(is_dead_use(use, dead, dropped) for result in op.results for use in result.uses):
                dead.add(op)
                changed = True
    return dead


def row_major_strides(shape: Sequence[int]) -> tuple[int, ...]:
    strides: list[int] = []
    running = 1
    for dim in reversed(shape):
        strides.append(running)
        running *= max(dim, 0)
    return tuple(reversed(strides))


def static_strides(memref_type: MemRefType, op: Operation | None) -> tuple[int, ...]:
    """The element strides of a memref type; dynamic strides are an error."""
    strides = memref_type.get_strides()
    if strides is None or any(s is None for s in strides):
        where = f"'{op.name}' {describe_location(op)}" if op is not None else "a value"
        raise DiagnosticException(
            f"C backend: {where} has dynamic strides ({memref_type}); only static strides "
            "are supported"
        )
    return tuple(int(s) for s in strides if s is not None)


@dataclass(frozen=True)
class FunctionSignature:
    """What callers need to know about a printed function."""

    c_name: str
    const_params: tuple[bool, ...]
    # Pool parameters the function does not use: neither its C prototype nor its calls have them.
    dropped: frozenset[int] = frozenset()


@dataclass
class ModuleContext:
    """Module-wide facts the body printer consults."""

    functions: dict[str, FunctionSignature]
    pool_expressions: dict[str, tuple[str, bool]]  # pool name -> (C expression, is constant)
    globals: dict[str, tuple[str, bool]]  # memref.global name -> (C name, is constant)
    global_names: NameTable
    dead_ops: set[Operation] = field(default_factory=set[Operation])
    helpers: set[str] = field(default_factory=set[str])
    uses_math: bool = False
    provenances: loops.Provenances = field(default_factory=loops.Provenances)
    uses_arm_dsp: bool = False
    """Whether a loop has a Cortex-M DSP variant (`<arm_acle.h>` under __ARM_FEATURE_DSP)."""
    uses_arm_sxtab16: bool = False
    """Whether a DSP variant widens offset inputs (`usmp_sxtab16_ror8`)."""
    """Where memref values point (register accumulators and hoisted loads need it)."""
    """Whether the printed code calls a `<math.h>` function or uses its macros (NAN, isnan)."""


ARM_SXTB16_ROR8 = (
    "/* SXTB16 of a word rotated right by 8 bits (its bytes 1 and 3), one instruction. */\n"
    "static inline int32_t usmp_sxtb16_ror8(int32_t word) {\n"
    "  int32_t pair;\n"
    '  __asm__("sxtb16 %0, %1, ror #8" : "=r"(pair) : "r"(word));\n'
    "  return pair;\n"
    "}"
)
"""Printed with `<arm_acle.h>` (under `__ARM_FEATURE_DSP`): gcc does not fold the rotation of
`__sxtb16(ror(x, 8))` into the instruction's operand, which costs an instruction per word."""

ARM_SXTAB16_ROR8 = (
    "/* SXTAB16 of a word rotated right by 8 bits: its bytes 1 and 3 plus two halves. */\n"
    "static inline int32_t usmp_sxtab16_ror8(int32_t halves, int32_t word) {\n"
    "  int32_t pair;\n"
    '  __asm__("sxtab16 %0, %1, %2, ror #8" : "=r"(pair) : "r"(halves), "r"(word));\n'
    "  return pair;\n"
    "}"
)
"""`ARM_SXTB16_ROR8` with an addend: an offset input's odd bytes widened, offset included."""

# The C helpers some ops need, printed once before the functions that use them.
HELPERS: dict[str, str] = {
    "minimumf": (
        "static inline float usmp_minimumf(float a, float b) {\n"
        "  if (isnan(a) || isnan(b)) return NAN;\n"
        "  if (a == b) return signbit(a) ? a : b;\n"
        "  return a < b ? a : b;\n"
        "}"
    ),
    "maximumf": (
        "static inline float usmp_maximumf(float a, float b) {\n"
        "  if (isnan(a) || isnan(b)) return NAN;\n"
        "  if (a == b) return signbit(a) ? b : a;\n"
        "  return a > b ? a : b;\n"
        "}"
    ),
    "minimum": (
        "static inline double usmp_minimum(double a, double b) {\n"
        "  if (isnan(a) || isnan(b)) return (double)NAN;\n"
        "  if (a == b) return signbit(a) ? a : b;\n"
        "  return a < b ? a : b;\n"
        "}"
    ),
    "maximum": (
        "static inline double usmp_maximum(double a, double b) {\n"
        "  if (isnan(a) || isnan(b)) return (double)NAN;\n"
        "  if (a == b) return signbit(a) ? b : a;\n"
        "  return a > b ? a : b;\n"
        "}"
    ),
    "noinline": (
        "/* A kernel gcc compiles worse inlined into the run function (its register block\n"
        "   spilled under the pressure of the caller's values). */\n"
        "#if defined(__GNUC__)\n"
        "#define USMP_NOINLINE __attribute__((noinline))\n"
        "#else\n"
        "#define USMP_NOINLINE\n"
        "#endif"
    ),
    **{
        f"saturate_i{bits}": (
            "#if defined(__ARM_FEATURE_SAT)\n"
            "#include <arm_acle.h>\n"
            "#endif\n"
            f"/* int32 saturated to int{bits} (SSAT where the core has it). */\n"
            f"static inline int32_t usmp_saturate_i{bits}(int32_t value) {{\n"
            "#if defined(__ARM_FEATURE_SAT)\n"
            "#pragma GCC diagnostic push\n"
            "/* gcc's arm_acle.h assigns the builtin's unsigned result to an int32_t */\n"
            '#pragma GCC diagnostic ignored "-Wsign-conversion"\n'
            f"  return __ssat(value, {bits});\n"
            "#pragma GCC diagnostic pop\n"
            "#else\n"
            f"  return value < {-(1 << (bits - 1))} ? {-(1 << (bits - 1))} : "
            f"value > {(1 << (bits - 1)) - 1} ? {(1 << (bits - 1)) - 1} : value;\n"
            "#endif\n"
            "}"
        )
        for bits in (8, 16)
    },
}

_INT_WRAP_BINOPS: dict[type[Operation], str] = {
    arith.AddiOp: "+",
    arith.SubiOp: "-",
    arith.MuliOp: "*",
}
_INT_BITWISE_BINOPS: dict[type[Operation], str] = {
    arith.AndIOp: "&",
    arith.OrIOp: "|",
    arith.XOrIOp: "^",
}
_FLOAT_BINOPS: dict[type[Operation], str] = {
    arith.AddfOp: "+",
    arith.SubfOp: "-",
    arith.MulfOp: "*",
    arith.DivfOp: "/",
}
# math op -> C function (the float variant gets an `f` suffix)
_MATH_UNARY: dict[type[Operation], str] = {
    math.AbsFOp: "fabs",
    math.AcosOp: "acos",
    math.AcoshOp: "acosh",
    math.AsinOp: "asin",
    math.AsinhOp: "asinh",
    math.AtanOp: "atan",
    math.AtanhOp: "atanh",
    math.CbrtOp: "cbrt",
    math.CeilOp: "ceil",
    math.CosOp: "cos",
    math.CoshOp: "cosh",
    math.ErfOp: "erf",
    math.Exp2Op: "exp2",
    math.ExpM1Op: "expm1",
    math.ExpOp: "exp",
    math.FloorOp: "floor",
    math.Log10Op: "log10",
    math.Log1pOp: "log1p",
    math.Log2Op: "log2",
    math.LogOp: "log",
    math.RoundEvenOp: "nearbyint",
    math.RoundOp: "round",
    math.SinOp: "sin",
    math.SinhOp: "sinh",
    math.SqrtOp: "sqrt",
    math.TanOp: "tan",
    math.TanhOp: "tanh",
    math.TruncOp: "trunc",
}
_MATH_BINARY: dict[type[Operation], str] = {
    math.Atan2Op: "atan2",
    math.CopySignOp: "copysign",
    math.PowFOp: "pow",
    RemfOp: "fmod",  # C's fmod is LLVM's frem: the remainder of the truncated quotient
}
_CMPI: dict[str, tuple[str, str]] = {  # predicate -> (C operator, signedness)
    "eq": ("==", ""),
    "ne": ("!=", ""),
    "slt": ("<", "s"),
    "sle": ("<=", "s"),
    "sgt": (">", "s"),
    "sge": (">=", "s"),
    "ult": ("<", "u"),
    "ule": ("<=", "u"),
    "ugt": (">", "u"),
    "uge": (">=", "u"),
}


def _linear_index(indices: Sequence[str], strides: Sequence[int]) -> str:
    terms = [i if s == 1 else f"{i} * {s}" for i, s in zip(indices, strides, strict=True) if s]
    return " + ".join(terms) or "0"


def math_function(name: str, type_: Attribute) -> str:
    return name + ("f" if c_types.width(type_) == 32 else "")


@dataclass(eq=False, repr=False)
class CFunctionPrinter(BasePrinter):
    """Prints the body of one function as C statements."""

    module: ModuleContext = field(kw_only=True)
    names: NameTable = field(kw_only=True)
    is_entry: bool = field(default=False, kw_only=True)
    scalars: dict[SSAValue, str] = field(default_factory=dict[SSAValue, str], init=False)
    memrefs: dict[SSAValue, MemrefValue] = field(
        default_factory=dict[SSAValue, MemrefValue], init=False
    )
    # Where `scf.yield` / `scf.condition` / `scf.reduce.return` write their operands.
    yield_targets: list[str] = field(default_factory=list[str], init=False)
    # Elements an enclosing loop keeps in a local (register accumulators), by (memref, indices).
    promoted: dict[tuple[SSAValue, loops.IndexKey], str] = field(
        default_factory=dict[tuple[SSAValue, loops.IndexKey], str], init=False
    )
    # Loads an enclosing loop made once before it: the local holding the value.
    hoisted: dict[Operation, str] = field(default_factory=dict[Operation, str], init=False)

    # ---- output helpers ----------------------------------------------------------------

    def line(self, text: str) -> None:
        """One statement (or brace line) at the current indentation."""
        self.print_string(" " * (self._indent * self.indent_num_spaces) + text + "\n", indent=0)

    def fresh_name(self, value: SSAValue, fallback: str = "v") -> str:
        return self.names.fresh(value.name_hint or fallback)

    # ---- values ------------------------------------------------------------------------

    def expr(self, value: SSAValue) -> str:
        """The C expression of a scalar value (a literal for constants)."""
        if value in self.scalars:
            return self.scalars[value]
        owner = value.owner
        if isinstance(owner, arith.ConstantOp):
            return self.constant_literal(owner)
        raise DiagnosticException(f"C backend: value {value} of type {value.type} has no C name")

    def mem(self, value: SSAValue) -> MemrefValue:
        if value not in self.memrefs:
            raise DiagnosticException(f"C backend: memref value of type {value.type} is unknown")
        return self.memrefs[value]

    def constant_literal(self, op: arith.ConstantOp) -> str:
        value = op.value
        if isinstance(value, IntegerAttr) and c_types.is_integer(op.result.type):
            return c_types.int_literal(value.value.data, op.result.type)
        if isinstance(value, FloatAttr) and c_types.is_float(op.result.type):
            literal = c_types.float_literal(value.value.data, op.result.type)
            if not pymath.isfinite(value.value.data):
                self.module.uses_math = True  # NAN, INFINITY
            return literal
        raise unsupported_op_error(op)

    def constant_int(self, value: SSAValue) -> int | None:
        owner = value.owner
        if isinstance(owner, arith.ConstantOp) and isinstance(owner.value, IntegerAttr):
            return owner.value.value.data
        return None

    def define(self, result: SSAValue, expression: str, fallback: str = "v") -> str:
        """Declares a C local for a scalar result initialised with `expression`."""
        name = self.fresh_name(result, fallback)
        self.line(f"{c_types.c_type(result.type)} {name} = {expression};")
        self.scalars[result] = name
        return name

    def declare(self, result: SSAValue, init: str | None, fallback: str = "v") -> str:
        name = self.fresh_name(result, fallback)
        c_type = c_types.c_type(result.type)
        self.line(f"{c_type} {name} = {init};" if init is not None else f"{c_type} {name};")
        self.scalars[result] = name
        return name

    def define_memref(
        self, result: SSAValue, source: MemrefValue, pointer: str, comment: str | None = None
    ) -> None:
        memref_type = result.type
        assert isinstance(memref_type, MemRefType)
        owner = result.owner
        assert isinstance(owner, Operation)
        strides = static_strides(memref_type, owner)
        if comment is not None:
            self.line(f"// {comment}")
        view = MemrefValue(
            self.fresh_name(result, "view"),
            memref_type.element_type,
            tuple(memref_type.get_shape()),
            strides,
            source.const,
        )
        self.line(f"{view.pointer_c} {view.name} = {pointer};")
        self.memrefs[result] = view

    def bind_argument(
        self, arg: BlockArgument, const: bool, name: str | None = None, is_pool: bool = False
    ) -> str:
        """Names a function argument (a memref becomes a pointer parameter)."""
        c_name = name or self.fresh_name(arg, f"arg{arg.index}")
        if isinstance(arg.type, MemRefType):
            strides = static_strides(arg.type, arg.owner.parent_op())
            self.memrefs[arg] = MemrefValue(
                c_name, arg.type.element_type, tuple(arg.type.get_shape()), strides, const, is_pool
            )
        else:
            self.scalars[arg] = c_name
        return c_name

    def element_index(self, view: MemrefValue, indices: Sequence[SSAValue]) -> str:
        """The flat element index of `indices` in `view` (constants folded)."""
        constant_part = 0
        terms: list[str] = []
        for index, stride in zip(indices, view.strides, strict=True):
            known = self.constant_int(index)
            if known is not None:
                constant_part += known * stride
            elif stride == 1:
                terms.append(self.expr(index))
            elif stride != 0:
                terms.append(f"{self.expr(index)} * {stride}")
        if constant_part or not terms:
            terms.append(str(constant_part))
        return " + ".join(terms)

    # ---- regions -----------------------------------------------------------------------

    def print_block(self, block: Block) -> None:
        for op in block.ops:
            self.print_op_checked(op)

    def print_region_with_targets(
        self, region: Region, targets: list[str], indent: int = 1
    ) -> None:
        saved = self.yield_targets
        self.yield_targets = targets
        with self.indented(indent):
            self.print_block(region.block)
        self.yield_targets = saved

    def assign_all(self, targets: Sequence[str], values: Sequence[SSAValue]) -> None:
        """Parallel assignment (loop-carried values may swap places)."""
        pending = [
            (target, self.expr(value), value)
            for target, value in zip(targets, values, strict=True)
            if target != self.expr(value)
        ]
        if len(pending) > 1 and any(expression in targets for _, expression, _ in pending):
            staged: list[tuple[str, str, SSAValue]] = []
            for target, expression, value in pending:
                temporary = self.names.fresh(f"{target}_next")
                self.line(f"{c_types.c_type(value.type)} {temporary} = {expression};")
                staged.append((target, temporary, value))
            pending = staged
        for target, expression, _ in pending:
            self.line(f"{target} = {expression};")

    def print_op_checked(self, op: Operation) -> None:
        if op in self.module.dead_ops:
            if isinstance(op, memref.ViewOp) and "usmp.buffer" in op.attributes:
                self.line(f"// {self.buffer_comment(op)} (unused)")
            return
        # `singledispatchmethod` builds a new bound wrapper on every attribute access; the
        # dispatcher's own per-class cache is enough (same function as `self.print_op(op)`).
        _PRINT_OP_DISPATCH(type(op))(self, op)

    def buffer_comment(self, op: memref.ViewOp) -> str:
        """Where a planned buffer lives: its pool, byte offset and size."""
        buffer = op.attributes["usmp.buffer"]
        name = buffer.data if isinstance(buffer, StringAttr) else str(buffer)
        offset = self.constant_int(op.byte_shift)
        shift = str(offset) if offset is not None else "(dynamic)"
        pool_name = self.pool_of(op.source) or "?"
        result_type = op.result.type
        assert isinstance(result_type, MemRefType)
        return (
            f"buffer {name}: pool {pool_name}, offset {shift}, "
            f"{buffer_size_bytes(result_type)} bytes"
        )

    # ---- dispatch ----------------------------------------------------------------------

    @singledispatchmethod
    def print_op(self, op: Operation) -> None:
        raise unsupported_op_error(op)

    # affine (what convert-linalg-to-loops leaves for index arithmetic) ------------------

    def affine_expr(self, expr: AffineExpr, operands: Sequence[SSAValue], num_dims: int) -> str:
        """An index-typed C expression for `expr` (loop indices: no overflow concerns)."""
        if isinstance(expr, AffineConstantExpr):
            return c_types.int_literal(expr.value, IndexType())
        if isinstance(expr, AffineDimExpr):
            return self.expr(operands[expr.position])
        if isinstance(expr, AffineSymExpr):
            return self.expr(operands[num_dims + expr.position])
        assert isinstance(expr, AffineBinaryOpExpr)
        lhs = self.affine_expr(expr.lhs, operands, num_dims)
        rhs = self.affine_expr(expr.rhs, operands, num_dims)
        match expr.kind:
            case AffineBinaryOpKind.Add:
                return f"({lhs} + {rhs})"
            case AffineBinaryOpKind.Mul:
                return f"({lhs} * {rhs})"
            case AffineBinaryOpKind.Mod:
                return f"((({lhs} % {rhs}) + {rhs}) % {rhs})"
            case AffineBinaryOpKind.FloorDiv:
                return f"({lhs} / {rhs} - ((({lhs} % {rhs}) != 0) && (({lhs} < 0) != ({rhs} < 0))))"
            case AffineBinaryOpKind.CeilDiv:
                return f"({lhs} / {rhs} + ((({lhs} % {rhs}) != 0) && (({lhs} < 0) == ({rhs} < 0))))"

    @print_op.register
    def _(self, op: affine.ApplyOp) -> None:
        affine_map = op.map.data
        (result_expr,) = affine_map.results
        text = self.affine_expr(result_expr, op.mapOperands, affine_map.num_dims)
        if text.startswith("(") and text.endswith(")"):
            inner = text[1:-1]
            if inner.count("(") == inner.count(")") and "(" not in inner:
                text = inner
        self.define(op.result, text)

    # func --------------------------------------------------------------------------------

    @print_op.register
    def _(self, op: func.ReturnOp) -> None:
        if self.is_entry:
            if op.arguments:
                raise DiagnosticException(
                    f"C backend: the entry function returns values {describe_location(op)}; "
                    "model outputs must be memref arguments"
                )
            self.line("return 0;")
            return
        if len(op.arguments) > 1:
            raise DiagnosticException(
                f"C backend: 'func.return' of {len(op.arguments)} values "
                f"{describe_location(op)}; C functions return at most one scalar"
            )
        if op.arguments:
            if isinstance(op.arguments[0].type, MemRefType):
                raise DiagnosticException(
                    f"C backend: a memref escapes through 'func.return' {describe_location(op)}"
                )
            self.line(f"return {self.expr(op.arguments[0])};")
        elif op.next_op is not None or not isinstance(op.parent_op(), func.FuncOp):
            self.line("return;")

    @print_op.register
    def _(self, op: func.CallOp) -> None:
        callee = op.callee.root_reference.data
        signature = self.module.functions.get(callee)
        if signature is None:
            raise DiagnosticException(
                f"C backend: call to unknown function @{callee} {describe_location(op)}"
            )
        arguments: list[str] = []
        for position, operand in enumerate(op.arguments):
            if position in signature.dropped:
                continue
            if isinstance(operand.type, MemRefType):
                view = self.mem(operand)
                const_param = (
                    signature.const_params[position]
                    if position < len(signature.const_params)
                    else False
                )
                if view.const and not const_param:
                    raise DiagnosticException(
                        f"C backend: @{callee} may write its argument #{position}, which is "
                        f"read-only data (a constant) {describe_location(op)}; external "
                        "functions are assumed to write their memref arguments"
                    )
                arguments.append(view.name)
            else:
                arguments.append(self.expr(operand))
        call = f"{signature.c_name}({', '.join(arguments)})"
        if len(op.res) > 1:
            raise DiagnosticException(
                f"C backend: call to @{callee} with {len(op.res)} results "
                f"{describe_location(op)}; C functions return at most one scalar"
            )
        if op.res:
            self.define(op.res[0], call, callee)
        else:
            self.line(f"{call};")

    # arith ---------------------------------------------------------------------------------

    @print_op.register
    def _(self, op: arith.ConstantOp) -> None:
        # Scalar constants are printed inline where they are used.
        self.constant_literal(op)

    @print_op.register(arith.AddiOp)
    @print_op.register(arith.SubiOp)
    @print_op.register(arith.MuliOp)
    def _(self, op: arith.SignlessIntegerBinaryOperation) -> None:
        symbol = _INT_WRAP_BINOPS[type(op)]
        type_ = op.result.type
        lhs, rhs = self.expr(op.lhs), self.expr(op.rhs)
        if c_types.width(type_) == 1:
            self.define(op.result, f"(uint8_t)(({lhs} {symbol} {rhs}) & 1)")
            return
        wide = c_types.wide_unsigned_type(type_)
        self.define(op.result, f"({c_types.c_type(type_)})(({wide}){lhs} {symbol} ({wide}){rhs})")

    @print_op.register(arith.AndIOp)
    @print_op.register(arith.OrIOp)
    @print_op.register(arith.XOrIOp)
    def _(self, op: arith.SignlessIntegerBinaryOperation) -> None:
        symbol = _INT_BITWISE_BINOPS[type(op)]
        type_ = op.result.type
        self.define(
            op.result,
            f"({c_types.c_type(type_)})({self.expr(op.lhs)} {symbol} {self.expr(op.rhs)})",
        )

    def signed_expr(self, value: SSAValue) -> str:
        """`value` read as a signed number (an i1 `true` is -1)."""
        if c_types.width(value.type) == 1:
            return f"(-(int32_t){self.expr(value)})"
        return self.expr(value)

    def unsigned_expr(self, value: SSAValue) -> str:
        return f"({c_types.unsigned_type(value.type)}){self.expr(value)}"

    @print_op.register(arith.DivSIOp)
    @print_op.register(arith.RemSIOp)
    def _(self, op: arith.SignlessIntegerBinaryOperation) -> None:
        symbol = "/" if isinstance(op, arith.DivSIOp) else "%"
        type_ = op.result.type
        lhs, rhs = self.signed_expr(op.lhs), self.signed_expr(op.rhs)
        self.define(op.result, f"({c_types.c_type(type_)})({lhs} {symbol} {rhs})")

    @print_op.register(arith.DivUIOp)
    @print_op.register(arith.RemUIOp)
    def _(self, op: arith.SignlessIntegerBinaryOperation) -> None:
        symbol = "/" if isinstance(op, arith.DivUIOp) else "%"
        type_ = op.result.type
        lhs, rhs = self.unsigned_expr(op.lhs), self.unsigned_expr(op.rhs)
        self.define(op.result, f"({c_types.c_type(type_)})({lhs} {symbol} {rhs})")

    @print_op.register
    def _(self, op: arith.FloorDivSIOp) -> None:
        a, b = self.signed_expr(op.lhs), self.signed_expr(op.rhs)
        self.define(
            op.result,
            f"({c_types.c_type(op.result.type)})({a} / {b} - "
            f"(({a} % {b} != 0) && (({a} % {b} < 0) != ({b} < 0))))",
        )

    @print_op.register
    def _(self, op: arith.CeilDivSIOp) -> None:
        a, b = self.signed_expr(op.lhs), self.signed_expr(op.rhs)
        self.define(
            op.result,
            f"({c_types.c_type(op.result.type)})({a} / {b} + "
            f"(({a} % {b} != 0) && (({a} % {b} < 0) == ({b} < 0))))",
        )

    @print_op.register
    def _(self, op: arith.CeilDivUIOp) -> None:
        a, b = self.unsigned_expr(op.lhs), self.unsigned_expr(op.rhs)
        self.define(op.result, f"({c_types.c_type(op.result.type)})({a} / {b} + ({a} % {b} != 0))")

    def saturation_bits(self, op: Operation) -> int | None:
        """`n` when `op` is the `maxsi(x, -2**(n-1))` of an i32 clamp `minsi(maxsi(x,
        -2**(n-1)), 2**(n-1) - 1)` to int8 or int16 (its only use): printed as one saturation
        (`usmp_saturate_i<n>`, a Cortex-M `SSAT`; gcc forms SSAT from the two comparisons
        only when the bounds are not hoisted out of a loop as registers, which in a loop they
        are)."""
        if not isinstance(op, arith.MaxSIOp) or op.result.type != IntegerType(32):
            return None
        if op.result.uses.get_length() != 1:
            return None
        (use,) = op.result.uses
        outer = use.operation
        if not isinstance(outer, arith.MinSIOp) or outer.lhs is not op.result:
            return None
        for bits in (8, 16):
            low, high = -(1 << (bits - 1)), (1 << (bits - 1)) - 1
            if self.constant_int(op.rhs) == low and self.constant_int(outer.rhs) == high:
                return bits
        return None

    @print_op.register(arith.MinSIOp)
    @print_op.register(arith.MaxSIOp)
    @print_op.register(arith.MinUIOp)
    @print_op.register(arith.MaxUIOp)
    def _(self, op: arith.SignlessIntegerBinaryOperation) -> None:
        bits = self.saturation_bits(op)
        if bits is not None:
            self.module.helpers.add(f"saturate_i{bits}")
            self.define(op.result, f"usmp_saturate_i{bits}({self.expr(op.lhs)})")
            return
        inner = op.lhs.owner
        if (
            isinstance(op, arith.MinSIOp)
            and isinstance(inner, Operation)
            and self.saturation_bits(inner) is not None
        ):  # printed with its maxsi
            self.scalars[op.result] = self.expr(op.lhs)
            return
        unsigned = isinstance(op, arith.MinUIOp | arith.MaxUIOp)
        symbol = "<" if isinstance(op, arith.MinSIOp | arith.MinUIOp) else ">"
        if unsigned:
            a, b = self.unsigned_expr(op.lhs), self.unsigned_expr(op.rhs)
        else:
            a, b = self.signed_expr(op.lhs), self.signed_expr(op.rhs)
        self.define(op.result, f"{a} {symbol} {b} ? {self.expr(op.lhs)} : {self.expr(op.rhs)}")

    @print_op.register
    def _(self, op: arith.ShLIOp) -> None:
        type_ = op.result.type
        lhs, rhs = self.expr(op.lhs), self.unsigned_expr(op.rhs)
        if c_types.width(type_) == 1:
            self.define(op.result, f"(uint8_t)(({lhs} << {rhs}) & 1)")
            return
        wide = c_types.wide_unsigned_type(type_)
        self.define(op.result, f"({c_types.c_type(type_)})(({wide}){lhs} << {rhs})")

    @print_op.register
    def _(self, op: arith.ShRUIOp) -> None:
        type_ = op.result.type
        self.define(
            op.result,
            f"({c_types.c_type(type_)})({self.unsigned_expr(op.lhs)} >> "
            f"{self.unsigned_expr(op.rhs)})",
        )

    @print_op.register
    def _(self, op: arith.ShRSIOp) -> None:
        type_ = op.result.type
        if c_types.width(type_) == 1:
            # An i1 shifted arithmetically keeps its only (sign) bit.
            self.define(op.result, self.expr(op.lhs))
            return
        self.define(
            op.result,
            f"({c_types.c_type(type_)})({self.expr(op.lhs)} >> {self.unsigned_expr(op.rhs)})",
        )

    @print_op.register
    def _(self, op: arith.CmpiOp) -> None:
        predicate = arith.CMPI_COMPARISON_OPERATIONS[op.predicate.value.data]
        symbol, signedness = _CMPI[predicate]
        lhs_zero = self.constant_int(op.lhs) == 0
        rhs_zero = self.constant_int(op.rhs) == 0
        if signedness == "u" and (rhs_zero or lhs_zero):
            # Unsigned comparisons with zero that are always true or false (gcc's
            # -Wtype-limits rejects them as written).
            always = {
                ("ult", "rhs"): "0",
                ("uge", "rhs"): "1",
                ("ugt", "lhs"): "0",
                ("ule", "lhs"): "1",
            }.get((predicate, "rhs" if rhs_zero else "lhs"))
            if always is not None:
                self.define(op.result, always)
                return
        if signedness == "u":
            lhs, rhs = self.unsigned_expr(op.lhs), self.unsigned_expr(op.rhs)
        elif signedness == "s":
            lhs, rhs = self.signed_expr(op.lhs), self.signed_expr(op.rhs)
        else:
            lhs, rhs = self.expr(op.lhs), self.expr(op.rhs)
        self.define(op.result, f"{lhs} {symbol} {rhs}")

    @print_op.register
    def _(self, op: arith.CmpfOp) -> None:
        predicate = arith.CMPF_COMPARISON_OPERATIONS[op.predicate.value.data]
        a, b = self.expr(op.lhs), self.expr(op.rhs)
        expressions = {
            "false": "0",
            "oeq": f"{a} == {b}",
            "ogt": f"{a} > {b}",
            "oge": f"{a} >= {b}",
            "olt": f"{a} < {b}",
            "ole": f"{a} <= {b}",
            "one": f"({a} < {b} || {a} > {b})",
            "ord": f"(!isnan({a}) && !isnan({b}))",
            "ueq": f"!({a} < {b} || {a} > {b})",
            "ugt": f"!({a} <= {b})",
            "uge": f"!({a} < {b})",
            "ult": f"!({a} >= {b})",
            "ule": f"!({a} > {b})",
            "une": f"{a} != {b}",
            "uno": f"(isnan({a}) || isnan({b}))",
            "true": "1",
        }
        if predicate in ("ord", "uno"):
            self.module.uses_math = True
        self.define(op.result, expressions[predicate])

    @print_op.register
    def _(self, op: arith.SelectOp) -> None:
        condition = self.expr(op.cond)
        if isinstance(op.result.type, MemRefType):
            true_view, false_view = self.mem(op.lhs), self.mem(op.rhs)
            source = true_view if true_view.const else false_view
            self.define_memref(
                op.result, source, f"{condition} ? {true_view.name} : {false_view.name}"
            )
            return
        self.define(op.result, f"{condition} ? {self.expr(op.lhs)} : {self.expr(op.rhs)}")

    @print_op.register(arith.AddfOp)
    @print_op.register(arith.SubfOp)
    @print_op.register(arith.MulfOp)
    @print_op.register(arith.DivfOp)
    def _(self, op: arith.FloatingPointLikeBinaryOperation) -> None:
        symbol = _FLOAT_BINOPS[type(op)]
        self.define(op.result, f"{self.expr(op.lhs)} {symbol} {self.expr(op.rhs)}")

    @print_op.register
    def _(self, op: arith.NegfOp) -> None:
        self.define(op.result, f"-{self.expr(op.operand)}")

    @print_op.register(arith.MinimumfOp)
    @print_op.register(arith.MaximumfOp)
    @print_op.register(arith.MinnumfOp)
    @print_op.register(arith.MaxnumfOp)
    def _(self, op: arith.FloatingPointLikeBinaryOperation) -> None:
        a, b = self.expr(op.lhs), self.expr(op.rhs)
        is_f32 = c_types.width(op.result.type) == 32
        if isinstance(op, arith.MinnumfOp | arith.MaxnumfOp):
            function = math_function(
                "fmin" if isinstance(op, arith.MinnumfOp) else "fmax", op.result.type
            )
        else:
            helper = "minimum" if isinstance(op, arith.MinimumfOp) else "maximum"
            helper += "f" if is_f32 else ""
            self.module.helpers.add(helper)
            function = f"usmp_{helper}"
        self.module.uses_math = True
        self.define(op.result, f"{function}({a}, {b})")

    @print_op.register(arith.ExtSIOp)
    @print_op.register(arith.IndexCastOp)
    def _(self, op: arith.ExtSIOp | arith.IndexCastOp) -> None:
        source_type, result_type = op.input.type, op.result.type
        c_result = c_types.c_type(result_type)
        if c_types.width(result_type) == 1:
            self.define(op.result, f"(uint8_t)({self.expr(op.input)} & 1)")
        elif c_types.width(source_type) == 1:
            self.define(op.result, f"({c_result})(-({c_result}){self.expr(op.input)})")
        else:
            self.define(op.result, f"({c_result}){self.expr(op.input)}")

    @print_op.register
    def _(self, op: arith.ExtUIOp) -> None:
        self.define(op.result, f"({c_types.c_type(op.result.type)}){self.unsigned_expr(op.input)}")

    @print_op.register
    def _(self, op: arith.TruncIOp) -> None:
        if c_types.width(op.result.type) == 1:
            self.define(op.result, f"(uint8_t)({self.expr(op.input)} & 1)")
            return
        self.define(op.result, f"({c_types.c_type(op.result.type)}){self.expr(op.input)}")

    @print_op.register
    def _(self, op: arith.SIToFPOp) -> None:
        self.define(op.result, f"({c_types.c_type(op.result.type)}){self.signed_expr(op.input)}")

    @print_op.register
    def _(self, op: arith.UIToFPOp) -> None:
        self.define(op.result, f"({c_types.c_type(op.result.type)}){self.unsigned_expr(op.input)}")

    @print_op.register
    def _(self, op: arith.FPToSIOp) -> None:
        self.define(op.result, f"({c_types.c_type(op.result.type)}){self.expr(op.input)}")

    @print_op.register
    def _(self, op: arith.FPToUIOp) -> None:
        unsigned = c_types.unsigned_type(op.result.type)
        self.define(
            op.result, f"({c_types.c_type(op.result.type)})({unsigned}){self.expr(op.input)}"
        )

    @print_op.register(arith.ExtFOp)
    @print_op.register(arith.TruncFOp)
    def _(self, op: arith.ExtFOp | arith.TruncFOp) -> None:
        self.define(op.result, f"({c_types.c_type(op.result.type)}){self.expr(op.input)}")

    @print_op.register
    def _(self, op: arith.BitcastOp) -> None:
        name = self.declare(op.result, None)
        source_c = c_types.c_type(op.input.type)
        self.line(f"memcpy(&{name}, &({source_c}){{{self.expr(op.input)}}}, sizeof {name});")

    # math ------------------------------------------------------------------------------------

    @print_op.register(math.AbsFOp)
    @print_op.register(math.AcosOp)
    @print_op.register(math.AcoshOp)
    @print_op.register(math.AsinOp)
    @print_op.register(math.AsinhOp)
    @print_op.register(math.AtanOp)
    @print_op.register(math.AtanhOp)
    @print_op.register(math.CbrtOp)
    @print_op.register(math.CeilOp)
    @print_op.register(math.CosOp)
    @print_op.register(math.CoshOp)
    @print_op.register(math.ErfOp)
    @print_op.register(math.Exp2Op)
    @print_op.register(math.ExpM1Op)
    @print_op.register(math.ExpOp)
    @print_op.register(math.FloorOp)
    @print_op.register(math.Log10Op)
    @print_op.register(math.Log1pOp)
    @print_op.register(math.Log2Op)
    @print_op.register(math.LogOp)
    @print_op.register(math.RoundEvenOp)
    @print_op.register(math.RoundOp)
    @print_op.register(math.SinOp)
    @print_op.register(math.SinhOp)
    @print_op.register(math.SqrtOp)
    @print_op.register(math.TanOp)
    @print_op.register(math.TanhOp)
    @print_op.register(math.TruncOp)
    def _(self, op: Operation) -> None:
        (operand,) = op.operands
        (result,) = op.results
        function = math_function(_MATH_UNARY[type(op)], result.type)
        self.module.uses_math = True
        self.define(result, f"{function}({self.expr(operand)})")

    @print_op.register(math.Atan2Op)
    @print_op.register(math.CopySignOp)
    @print_op.register(math.PowFOp)
    @print_op.register(RemfOp)
    def _(self, op: Operation) -> None:
        lhs, rhs = op.operands
        (result,) = op.results
        function = math_function(_MATH_BINARY[type(op)], result.type)
        self.module.uses_math = True
        self.define(result, f"{function}({self.expr(lhs)}, {self.expr(rhs)})")

    @print_op.register
    def _(self, op: math.RsqrtOp) -> None:
        one = "1.0f" if c_types.width(op.result.type) == 32 else "1.0"
        sqrt = math_function("sqrt", op.result.type)
        self.module.uses_math = True
        self.define(op.result, f"{one} / {sqrt}({self.expr(op.operand)})")

    @print_op.register
    def _(self, op: math.FmaOp) -> None:
        function = math_function("fma", op.result.type)
        self.module.uses_math = True
        self.define(
            op.result,
            f"{function}({self.expr(op.a)}, {self.expr(op.b)}, {self.expr(op.c)})",
        )

    @print_op.register
    def _(self, op: math.AbsIOp) -> None:
        type_ = op.result.type
        if c_types.width(type_) == 1:
            self.define(op.result, self.expr(op.operand))
            return
        value = self.expr(op.operand)
        wide = c_types.wide_unsigned_type(type_)
        self.define(
            op.result,
            f"({c_types.c_type(type_)})({value} < 0 ? ({wide})0 - ({wide}){value} : "
            f"({wide}){value})",
        )

    @print_op.register(math.CtPopOp)
    @print_op.register(math.CountLeadingZerosOp)
    @print_op.register(math.CountTrailingZerosOp)
    def _(self, op: Operation) -> None:
        (operand,) = op.operands
        (result,) = op.results
        bits = c_types.width(result.type)
        value = f"(uint64_t){self.unsigned_expr(operand)}"
        if isinstance(op, math.CtPopOp):
            expression = f"__builtin_popcountll({value})"
        elif isinstance(op, math.CountLeadingZerosOp):
            expression = f"{value} == 0 ? {bits} : __builtin_clzll({value}) - {64 - bits}"
        else:
            expression = f"{value} == 0 ? {bits} : __builtin_ctzll({value})"
        self.define(result, f"({c_types.c_type(result.type)})({expression})")

    # memref -------------------------------------------------------------------------------

    @print_op.register
    def _(self, op: memref.LoadOp) -> None:
        if op in self.hoisted:
            self.scalars[op.res] = self.hoisted[op]
            return
        local = self.promoted.get((op.memref, loops.index_key(op.indices)))
        if local is not None:
            self.define(op.res, local)  # a copy: a later store may change the local
            return
        view = self.mem(op.memref)
        self.define(op.res, f"{view.name}[{self.element_index(view, op.indices)}]")

    @print_op.register
    def _(self, op: memref.StoreOp) -> None:
        view = self.mem(op.memref)
        if view.const:
            raise DiagnosticException(
                f"C backend: 'memref.store' into read-only data {describe_location(op)}"
            )
        local = self.promoted.get((op.memref, loops.index_key(op.indices)))
        if local is not None:
            self.line(f"{local} = {self.expr(op.value)};")
            return
        self.line(f"{view.name}[{self.element_index(view, op.indices)}] = {self.expr(op.value)};")

    @print_op.register
    def _(self, op: memref.ViewOp) -> None:
        if op.sizes:
            raise DiagnosticException(
                f"C backend: 'memref.view' with dynamic sizes {describe_location(op)}"
            )
        source = self.mem(op.source)
        result_type = op.result.type
        assert isinstance(result_type, MemRefType)
        qualifier = "const " if source.const else ""
        element_c = c_types.c_type(result_type.element_type)
        offset = self.constant_int(op.byte_shift)
        shift = str(offset) if offset is not None else self.expr(op.byte_shift)
        base = source.name if shift == "0" else f"({source.name} + {shift})"
        if element_c not in ("int8_t", "uint8_t") or source.element_c not in ("int8_t", "uint8_t"):
            # Through `void*`: the planner aligned the offset (and the pool array) for the
            # element type, which -Wcast-align=strict cannot see from a byte pointer.
            base = f"({qualifier}void*){base}"
        comment = self.buffer_comment(op) if "usmp.buffer" in op.attributes else None
        self.define_memref(op.result, source, f"({qualifier}{element_c}*){base}", comment)

    def pool_of(self, value: SSAValue) -> str | None:
        """The pool a pool-base value stands for."""
        owner = value.owner
        if isinstance(owner, pool.BaseOp):
            return owner.pool.root_reference.data
        if isinstance(value, BlockArgument) and isinstance(value.owner, Block):
            function = value.owner.parent_op()
            if isinstance(function, func.FuncOp) and function.arg_attrs is not None:
                attrs = function.arg_attrs.data[value.index].data
                ref = attrs.get("pool.pool")
                if isinstance(ref, SymbolRefAttr):
                    return ref.root_reference.data
        return None

    def offset_pointer(self, source: MemrefValue, element_offset: str) -> str:
        if element_offset == "0":
            return source.name
        return f"{source.name} + {element_offset}"

    @print_op.register
    def _(self, op: memref.SubviewOp) -> None:
        source = self.mem(op.source)
        dynamic = iter(op.offsets)
        offsets: list[SSAValue | int] = []
        for static in op.static_offsets.get_values():
            offsets.append(next(dynamic) if static == DYNAMIC_INDEX else static)
        constant_part = 0
        terms: list[str] = []
        for offset, stride in zip(offsets, source.strides, strict=True):
            if isinstance(offset, int):
                constant_part += offset * stride
            else:
                known = self.constant_int(offset)
                if known is not None:
                    constant_part += known * stride
                else:
                    terms.append(self.expr(offset) + (f" * {stride}" if stride != 1 else ""))
        if constant_part:
            terms.append(str(constant_part))
        self.define_memref(op.result, source, self.offset_pointer(source, " + ".join(terms) or "0"))

    @print_op.register(memref.CastOp)
    @print_op.register(memref.CollapseShapeOp)
    @print_op.register(memref.ExpandShapeOp)
    def _(self, op: memref.CastOp | memref.CollapseShapeOp | memref.ExpandShapeOp) -> None:
        source_value = op.source if isinstance(op, memref.CastOp) else op.src
        source = self.mem(source_value)
        result = op.results[0]
        result_type = result.type
        if not isinstance(result_type, MemRefType):
            raise unsupported_op_error(op)
        strides = result_type.get_strides()
        dynamic_layout = strides is None or any(s is None for s in strides)
        if (
            dynamic_layout
            and isinstance(op, memref.CastOp)
            and len(source.shape) == result_type.get_num_dims()
        ):
            # A cast to a less static type keeps the source's layout.
            view = MemrefValue(
                self.fresh_name(result, "cast"),
                source.element_type,
                source.shape,
                source.strides,
                source.const,
            )
            self.memrefs[result] = view
            self.line(f"{view.pointer_c} {view.name} = {source.name};")
            return
        self.define_memref(result, source, source.name)

    @print_op.register
    def _(self, op: memref.ExtractStridedMetaDataOp) -> None:
        """In C a memref is a pointer to its first element, so its base buffer is that pointer
        and its offset 0 (a cast of the base at offset `0 + k` is then the pointer plus k, as
        the cast of the true base at the true offset plus k is); sizes and strides are the
        type's, which must be static. Nothing is printed."""
        source = self.mem(op.source)
        source_type = op.source.type
        assert isinstance(source_type, MemRefType)
        self.memrefs[op.base_buffer] = MemrefValue(
            source.name, source.element_type, (), (), source.const, source.is_pool
        )
        self.scalars[op.offset] = "0"
        for size, extent in zip(op.sizes, source.shape, strict=True):
            self.scalars[size] = str(extent)
        for stride, step in zip(op.strides, source.strides, strict=True):
            self.scalars[stride] = str(step)

    @print_op.register
    def _(self, op: memref.ReinterpretCastOp) -> None:
        source = self.mem(op.source)
        source_type = op.source.type
        assert isinstance(source_type, MemRefType)
        source_offset = source_type.get_offset()
        static_offsets = op.static_offsets.get_values()
        if source_offset is not None and len(op.offsets) == 1 and len(static_offsets) == 1:
            # A dynamic offset (kernels' views of equally spaced runs): the source's pointer
            # plus the offset, relative to the source's own.
            shift_c = self.expr(op.offsets[0])
            if source_offset:
                shift_c = f"({shift_c} - {source_offset})"
            self.define_memref(op.result, source, self.offset_pointer(source, shift_c))
            return
        if source_offset is None or op.offsets or any(o < 0 for o in static_offsets):
            raise DiagnosticException(
                f"C backend: 'memref.reinterpret_cast' with a dynamic offset "
                f"{describe_location(op)}"
            )
        shift = static_offsets[0] - source_offset if static_offsets else -source_offset
        if shift == 0:
            pointer = source.name
        else:
            pointer = f"{source.name} {'+' if shift > 0 else '-'} {abs(shift)}"
        self.define_memref(op.result, source, pointer)

    @print_op.register
    def _(self, op: memref.DimOp) -> None:
        source_type = op.source.type
        index = self.constant_int(op.index)
        if not isinstance(source_type, MemRefType) or index is None:
            raise unsupported_op_error(op)
        self.define(op.result, str(source_type.get_shape()[index]), "dim")

    @print_op.register
    def _(self, op: memref.CopyOp) -> None:
        source, destination = self.mem(op.source), self.mem(op.destination)
        if destination.const:
            raise DiagnosticException(
                f"C backend: 'memref.copy' into read-only data {describe_location(op)}"
            )
        if source.is_contiguous and destination.is_contiguous:
            count = 1
            for dim in source.shape:
                count *= dim
            # memmove: a copy may read and write the same bytes (a buffer copied onto itself,
            # or a view of it), which memcpy leaves undefined.
            self.line(
                f"memmove({destination.name}, {source.name}, {count} * sizeof({source.element_c}));"
            )
            return
        indices = [self.names.fresh(f"copy_i{d}") for d in range(len(source.shape))]
        for index, size in zip(indices, source.shape, strict=True):
            self.line(f"for (int64_t {index} = 0; {index} < {size}; {index} += 1) {{")
            self._indent += 1
        source_index = _linear_index(indices, source.strides)
        destination_index = _linear_index(indices, destination.strides)
        self.line(f"{destination.name}[{destination_index}] = {source.name}[{source_index}];")
        for _ in indices:
            self._indent -= 1
            self.line("}")

    @print_op.register
    def _(self, op: memref.GetGlobalOp) -> None:
        name = op.name_.root_reference.data
        if name not in self.module.globals:
            raise DiagnosticException(
                f"C backend: 'memref.get_global' of unknown global @{name} {describe_location(op)}"
            )
        c_name, const = self.module.globals[name]
        result_type = op.memref.type
        assert isinstance(result_type, MemRefType)
        element_c = c_types.c_type(result_type.element_type)
        view = MemrefValue(
            self.fresh_name(op.memref, name),
            result_type.element_type,
            tuple(result_type.get_shape()),
            static_strides(result_type, op),
            const,
        )
        self.line(
            f"{view.pointer_c} {view.name} = {'(const ' if const else '('}{element_c}*){c_name};"
        )
        self.memrefs[op.memref] = view

    @print_op.register
    def _(self, op: memref.AssumeAlignmentOp) -> None:
        # Alignment is the planner's business; the pointer is unchanged.
        for result in op.results:
            self.memrefs[result] = self.mem(op.operands[0])

    # pool ----------------------------------------------------------------------------------

    @print_op.register
    def _(self, op: pool.BaseOp) -> None:
        name = op.pool.root_reference.data
        if not self.is_entry:
            raise DiagnosticException(
                f"C backend: 'pool.base' of @{name} outside the entry function "
                f"{describe_location(op)}; operator functions receive pools as arguments"
            )
        if name not in self.module.pool_expressions:
            raise DiagnosticException(
                f"C backend: 'pool.base' of unknown pool @{name} {describe_location(op)}"
            )
        expression, const = self.module.pool_expressions[name]
        view = MemrefValue(
            self.names.fresh(op.memref.name_hint or name),
            IntegerType(8),
            tuple(op.memref.type.get_shape()) if isinstance(op.memref.type, MemRefType) else (),
            (1,),
            const,
            is_pool=True,
        )
        self.line(f"{view.pointer_c} {view.name} = {expression};")
        self.memrefs[op.memref] = view

    # scf -------------------------------------------------------------------------------------

    def carried_name(self, result: SSAValue, argument: SSAValue | None, fallback: str) -> str:
        hint = result.name_hint or (argument.name_hint if argument is not None else None)
        return self.names.fresh(hint or fallback)

    @print_op.register
    def _(self, op: scf.ForOp) -> None:
        iv = op.body.block.args[0]
        carried: list[str] = []
        for result, init, argument in zip(
            op.res, op.iter_args, op.body.block.args[1:], strict=True
        ):
            if isinstance(result.type, MemRefType):
                raise DiagnosticException(
                    f"C backend: memref loop-carried values are not supported "
                    f"{describe_location(op)}"
                )
            name = self.carried_name(result, argument, "acc")
            self.line(f"{c_types.c_type(result.type)} {name} = {self.expr(init)};")
            self.scalars[result] = name
            self.scalars[argument] = name
            carried.append(name)
        accumulators = self.move_out_of_loop(op)
        iv_name = self.fresh_name(iv, "i")
        self.scalars[iv] = iv_name
        iv_c = c_types.c_type(iv.type)
        lower, upper, step = self.expr(op.lb), self.expr(op.ub), self.expr(op.step)
        dot = loops.int8_dot_product(op, set(self.promoted), lambda value: self.mem(value).strides)
        tail = 0
        if dot is not None:
            locals_ = carried if dot.accumulator is None else [self.promoted[dot.accumulator]]
            trips = loops.static_trip_count(op) or 0
            tail = trips % 4
            first = self.constant_int(op.lb)
            whole = str((first or 0) + trips - tail) if tail else upper
            self.print_dsp_dot_product(dot, locals_, iv_c, iv_name, lower, whole)
            if tail:
                # The last `tail` elements run the portable body, whose loop header the DSP
                # variant shares: `for` headers under #if / #else, one body.
                if tail > 1:
                    self.print_string(f"#pragma GCC unroll {tail}\n", indent=0)
                self.line(
                    f"for ({iv_c} {iv_name} = {whole}; {iv_name} < {upper}; {iv_name} += 1) {{"
                )
            self.print_string("#else\n", indent=0)
        lanes = None
        if dot is None:
            lanes = loops.int8_lane_sums(op, lambda value: self.mem(value).strides)
        if lanes is not None:
            self.print_dsp_lane_sums(lanes, carried, iv_c, iv_name, (lower, upper), op)
            self.print_string("#else\n", indent=0)
        unroll = loops.unroll_factor(op)
        if unroll is not None:
            self.print_string(f"#pragma GCC unroll {unroll}\n", indent=0)
        self.line(f"for ({iv_c} {iv_name} = {lower}; {iv_name} < {upper}; {iv_name} += {step}) {{")
        if tail:
            self.print_string("#endif\n", indent=0)
        self.print_region_with_targets(op.body, carried)
        self.line("}")
        if (dot is not None and not tail) or lanes is not None:
            self.print_string("#endif\n", indent=0)
        for result, argument, name in zip(op.res, op.body.block.args[1:], carried, strict=True):
            if not result.uses and not argument.uses:
                self.line(f"(void){name};")
        for key, element, local in accumulators:
            self.line(f"{element} = {local};")
            del self.promoted[key]

    def print_dsp_dot_product(
        self,
        dot: loops.DotProduct,
        accumulators: Sequence[str],
        iv_c: str,
        iv_name: str,
        lower: str,
        upper: str,
    ) -> None:
        """The Cortex-M DSP variant of int8 dot products (`#if`; the caller prints the portable
        loop as its `#else`, and the loop of the last elements when `upper` leaves some for the
        portable body): four elements per step, every input word loaded and sign-extended
        into its two byte pairs once, then two SMLADs per term. Integer addition modulo 2**32
        does not depend on the order: same result."""
        self.module.uses_arm_dsp = True
        first_operands = {a for _, a, _ in dot.terms}
        words = [
            self.names.fresh("x4" if i in first_operands else "w4") for i in range(len(dot.inputs))
        ]
        self.print_string("#if defined(__ARM_FEATURE_DSP)\n", indent=0)
        # A block of terms already fills the registers: unrolled, gcc spills (measured on the
        # M4F: 2.01 instead of 1.92 instructions per MAC for a 2 x 2 block).
        self.print_string(f"#pragma GCC unroll {4 if len(dot.terms) == 1 else 1}\n", indent=0)
        self.line(f"for ({iv_c} {iv_name} = {lower}; {iv_name} < {upper}; {iv_name} += 4) {{")
        with self.indented():
            # Every second operand widened first (two weights), then each first operand in
            # turn with its terms (CMSIS-NN's order): at most the accumulators, the second
            # operands' halves and one first operand live, which fits the 13 registers.
            halves: dict[int, tuple[str, str]] = {}

            def widen(position: int) -> None:
                if position in halves:
                    return
                word, load = words[position], dot.inputs[position]
                view = self.mem(load.memref)
                index = self.element_index(view, load.indices)
                even, odd = self.names.fresh(f"{word}_even"), self.names.fresh(f"{word}_odd")
                self.line(f"int32_t {word};")
                self.line(f"memcpy(&{word}, {view.name} + {index}, 4);")
                offset = dot.offsets[position] if dot.offsets else 0
                if offset:
                    # Both halves plus the offset (a quantised input's zero point) while
                    # widening: the int16 sums are exact (|offset| <= loops.OFFSET_LIMIT).
                    self.module.uses_arm_sxtab16 = True
                    pair = (offset & 0xFFFF) << 16 | (offset & 0xFFFF)
                    halves_c = str(pair - (1 << 32) if pair >= 1 << 31 else pair)
                    self.line(f"int32_t {even} = __sxtab16({halves_c}, {word});")
                    self.line(f"int32_t {odd} = usmp_sxtab16_ror8({halves_c}, {word});")
                else:
                    self.line(f"int32_t {even} = __sxtb16({word});")
                    self.line(f"int32_t {odd} = usmp_sxtb16_ror8({word});")
                halves[position] = (even, odd)

            for _, _, b in dot.terms:
                widen(b)
            for first in dict.fromkeys(a for _, a, _ in dot.terms):
                widen(first)
                for half in (0, 1):
                    for accumulator, a, b in dot.terms:
                        if a == first:
                            local = accumulators[accumulator]
                            pair_a, pair_b = halves[a][half], halves[b][half]
                            self.line(f"{local} = __smlad({pair_a}, {pair_b}, {local});")
        self.line("}")

    def print_dsp_lane_sums(
        self,
        lanes: loops.LaneSums,
        carried: Sequence[str],
        iv_c: str,
        iv_name: str,
        bounds: tuple[str, str],
        op: scf.ForOp,
    ) -> None:
        """The Cortex-M DSP variant of four int8 sums over consecutive bytes (`#if`; the
        caller prints the portable loop as its `#else`): per iteration one word loaded and
        added in two `SXTAB16`s to int16 halves (bytes 0 and 2, bytes 1 and 3), which are
        then added to the carried values. At most `loops.LANE_SUM_TRIPS` iterations: the
        halves never wrap, so the sums are the portable loop's."""
        self.module.uses_arm_dsp = True
        self.module.uses_arm_sxtab16 = True
        view = self.mem(lanes.first.memref)
        even, odd = self.names.fresh("even"), self.names.fresh("odd")
        word = self.names.fresh("word")
        lower, upper = bounds
        self.print_string("#if defined(__ARM_FEATURE_DSP)\n", indent=0)
        self.line(f"int32_t {even} = 0;")
        self.line(f"int32_t {odd} = 0;")
        unroll = loops.unroll_factor(op)
        if unroll is not None:
            self.print_string(f"#pragma GCC unroll {unroll}\n", indent=0)
        self.line(f"for ({iv_c} {iv_name} = {lower}; {iv_name} < {upper}; {iv_name} += 1) {{")
        with self.indented():
            index = self.element_index(view, lanes.first.indices)
            self.line(f"int32_t {word};")
            self.line(f"memcpy(&{word}, {view.name} + {index}, 4);")
            self.line(f"{even} = __sxtab16({even}, {word});")
            self.line(f"{odd} = usmp_sxtab16_ror8({odd}, {word});")
        self.line("}")
        halves = (f"(int16_t){even}", f"(int16_t){odd}", f"({even} >> 16)", f"({odd} >> 16)")
        for name, half in zip(carried, halves, strict=True):
            self.line(f"{name} = (int32_t)((uint32_t){name} + (uint32_t){half});")

    def move_out_of_loop(
        self, op: scf.ForOp
    ) -> list[tuple[tuple[SSAValue, loops.IndexKey], str, str]]:
        """Prints the loads `loops.plan_loop` moves before `op` (register accumulators and
        hoisted loads); returns (key, C element, local) of each accumulator to store back."""
        plan = loops.plan_loop(op, self.module.provenances, set(self.promoted), set(self.hoisted))
        accumulators: list[tuple[tuple[SSAValue, loops.IndexKey], str, str]] = []
        for value, key, indices in plan.accumulators:
            view = self.mem(value)
            element = f"{view.name}[{self.element_index(view, indices)}]"
            local = self.names.fresh(f"{view.name}_acc")
            self.line(f"{view.element_c} {local} = {element};")
            self.promoted[(value, key)] = local
            accumulators.append(((value, key), element, local))
        for load in plan.hoisted:
            if load in self.module.dead_ops:
                continue
            view = self.mem(load.memref)
            local = self.names.fresh(f"{load.res.name_hint or view.name}_invariant")
            self.line(
                f"{view.element_c} {local} = {view.name}[{self.element_index(view, load.indices)}];"
            )
            self.hoisted[load] = local
        for load, first in plan.same_load.items():
            if first in self.hoisted:
                self.hoisted[load] = self.hoisted[first]
        return accumulators

    @print_op.register
    def _(self, op: scf.YieldOp) -> None:
        self.assign_all(self.yield_targets, op.arguments)

    @print_op.register
    def _(self, op: scf.IfOp) -> None:
        targets = [self.declare(result, None, "if_result") for result in op.output]
        self.line(f"if ({self.expr(op.cond)}) {{")
        self.print_region_with_targets(op.true_region, targets)
        if op.false_region.blocks and op.false_region.block.ops.first is not None:
            has_statements = any(
                not isinstance(o, scf.YieldOp) or o.operands for o in op.false_region.block.ops
            )
            if has_statements:
                self.line("} else {")
                self.print_region_with_targets(op.false_region, targets)
        self.line("}")

    @print_op.register
    def _(self, op: scf.WhileOp) -> None:
        before_args = op.before_region.block.args
        after_args = op.after_region.block.args
        state: list[str] = []
        for argument, init in zip(before_args, op.arguments, strict=True):
            name = self.fresh_name(argument, "state")
            self.line(f"{c_types.c_type(argument.type)} {name} = {self.expr(init)};")
            self.scalars[argument] = name
            state.append(name)
        results: list[str] = []
        for result, argument in zip(op.res, after_args, strict=True):
            name = self.carried_name(result, argument, "while_result")
            self.line(f"{c_types.c_type(result.type)} {name};")
            self.scalars[result] = name
            self.scalars[argument] = name
            results.append(name)
        self.line("while (1) {")
        self.print_region_with_targets(op.before_region, results)
        self.print_region_with_targets(op.after_region, state)
        self.line("}")
        for result, argument, name in zip(op.res, after_args, results, strict=True):
            if not result.uses and not argument.uses:
                self.line(f"(void){name};")

    @print_op.register
    def _(self, op: scf.ConditionOp) -> None:
        self.assign_all(self.yield_targets, op.args)
        self.line(f"if (!{self.expr(op.condition)}) break;")

    @print_op.register
    def _(self, op: scf.ParallelOp) -> None:
        accumulators: list[str] = []
        for result, init in zip(op.res, op.initVals, strict=True):
            name = self.carried_name(result, None, "reduction")
            self.line(f"{c_types.c_type(result.type)} {name} = {self.expr(init)};")
            self.scalars[result] = name
            accumulators.append(name)
        ivs = op.body.block.args
        for iv, lower, upper, step in zip(ivs, op.lowerBound, op.upperBound, op.step, strict=True):
            name = self.fresh_name(iv, "i")
            self.scalars[iv] = name
            self.line(
                f"for (int64_t {name} = {self.expr(lower)}; {name} < {self.expr(upper)}; "
                f"{name} += {self.expr(step)}) {{"
            )
            self._indent += 1
        self.print_region_with_targets(op.body, accumulators, indent=0)
        for _ in ivs:
            self._indent -= 1
            self.line("}")

    @print_op.register
    def _(self, op: scf.ReduceOp) -> None:
        accumulators = self.yield_targets
        for accumulator, operand, region in zip(accumulators, op.args, op.reductions, strict=True):
            lhs, rhs = region.block.args
            self.scalars[lhs] = accumulator
            self.scalars[rhs] = self.expr(operand)
            self.line("{")
            self.print_region_with_targets(region, [accumulator])
            self.line("}")

    @print_op.register
    def _(self, op: scf.ReduceReturnOp) -> None:
        self.assign_all(self.yield_targets, [op.result])

    @print_op.register
    def _(self, op: scf.ExecuteRegionOp) -> None:
        targets = [self.declare(result, None, "region_result") for result in op.outs]
        if len(op.region.blocks) != 1:
            raise DiagnosticException(
                f"C backend: 'scf.execute_region' with several blocks {describe_location(op)}"
            )
        self.line("{")
        self.print_region_with_targets(op.region, targets)
        self.line("}")


_PRINT_OP_DISPATCH: Callable[[type[Operation]], Callable[[CFunctionPrinter, Operation], None]] = (
    CFunctionPrinter.__dict__["print_op"].dispatcher.dispatch
)
"""`CFunctionPrinter.print_op`'s handler for an op class (called with the printer and the op)."""
