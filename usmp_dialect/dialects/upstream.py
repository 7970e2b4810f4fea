"""Upstream MLIR's printed forms that xDSL 0.74 does not parse yet, kept in one place.

What LLVM's `mlir-opt` (22) prints after bufferization must parse as printed, so this module
extends xDSL's `memref`, `linalg` and `bufferization` dialects (`extended_memref`,
`extended_linalg`, `extended_bufferization`):

* `memref.global` in its custom syntax (`memref.global "private" constant @w : memref<4xf32> =
  dense<...> {alignment = 64 : i64}`, `= uninitialized`), `memref.copy`, `memref.cast` and
  `memref.extract_aligned_pointer_as_index` in their assembly formats. Printing uses the same
  syntax, so our output reads back in `mlir-opt`. Newer MLIR's (IREE 3.13's `iree-opt`)
  `alignment = 64` keyword on `memref.global`, `memref.alloc` and `memref.alloca` parses too
  (printed back in LLVM 22's `{alignment = 64 : i64}`).
* `linalg.map`, `linalg.reduce` and `linalg.broadcast`, in the long form with an explicit body
  and the short form `linalg.map { arith.addf } ins(...) outs(...)`: they parse into the
  `linalg.generic` they stand for, which xDSL's `convert-linalg-to-loops` lowers.
* Named ops upstream emits that xDSL lacks or gets wrong: elementwise `linalg.div`, `abs`,
  `negf`, `floor`, `ceil`, `tanh`, `rsqrt`, `erf`, `powf`, `square`; pooling
  `linalg.pooling_{nchw,nhwc,ndhwc}_{max,min,sum}` (xDSL's `pooling_nchw_max` computes
  max(input, window)); contractions `linalg.batch_matmul`, `matvec`, `vecmat`; depthwise
  convolutions `linalg.depthwise_conv_2d_nchw_chw` and `_nhwc_hwc` (IREE's ONNX grouped Conv).
* `bufferization.dealloc`, known only to refuse it with a clear message.

The extended dialects replace xDSL's in the `xdsl.universe` registry (usmp_dialect/universe.py),
so `usmp-opt` and a stock `xdsl-opt` with the package installed both parse them. The classes
subclass xDSL's where xDSL has the op, so `isinstance(op, memref.GlobalOp)` still holds. Drop an
override here once xDSL parses the form itself.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any, ClassVar, TypeVar

from xdsl.builder import Builder
from xdsl.dialects import arith, bufferization, linalg, math, memref
from xdsl.dialects.builtin import (
    AffineMapAttr,
    AnyFloat,
    ArrayAttr,
    DenseArrayBase,
    DenseIntOrFPElementsAttr,
    IndexType,
    IntegerAttr,
    IntegerType,
    MemRefType,
    ShapedType,
    StringAttr,
    TensorType,
    UnitAttr,
    i64,
)
from xdsl.dialects.linalg.abstract_ops import (
    ConvOperation,
    ElementwiseOperation,
    LinalgStructuredOperation,
    NamedOperation,
    PoolingOperation,
)
from xdsl.dialects.linalg.attrs import IteratorTypeAttr
from xdsl.dialects.linalg.ops import GenericOp, YieldOp
from xdsl.ir import Attribute, Block, BlockArgument, Dialect, Operation, Region, SSAValue
from xdsl.ir.affine import AffineDimExpr, AffineMap
from xdsl.irdl import (
    AttrSizedOperandSegments,
    IRDLOperation,
    irdl_op_definition,
    prop_def,
    region_def,
    traits_def,
    var_operand_def,
    var_result_def,
)
from xdsl.irdl.declarative_assembly_format import FormatProgram
from xdsl.parser import Parser, UnresolvedOperand
from xdsl.printer import Printer
from xdsl.traits import Pure
from xdsl.utils.exceptions import VerifyException

IRDLOperationT = TypeVar("IRDLOperationT", bound=IRDLOperation)

# ---- memref -------------------------------------------------------------------------------


def _parse_optional_alignment(parser: Parser) -> IntegerAttr | None:
    """Newer MLIR's (IREE 3.13's) `alignment = 64` before the attribute dictionary, where
    LLVM 22 prints `{alignment = 64 : i64}` in it."""
    if parser.parse_optional_keyword("alignment") is None:
        return None
    parser.parse_punctuation("=")
    return IntegerAttr(parser.parse_integer(allow_boolean=False, allow_negative=False), 64)


class GlobalOp(memref.GlobalOp):
    """`memref.global` with upstream's custom syntax:
    `memref.global ("private")? (constant)? @name : type (= dense<...> | = uninitialized)?
    attr-dict`. An external declaration (no initial value) is not representable in xDSL."""

    @classmethod
    def parse(cls, parser: Parser) -> GlobalOp:
        visibility = parser.parse_optional_str_literal()
        constant = UnitAttr() if parser.parse_optional_keyword("constant") else None
        sym_name = parser.parse_symbol_name()
        parser.parse_punctuation(":")
        memref_type = parser.parse_type()
        if parser.parse_optional_punctuation("=") is None:
            parser.raise_error(
                f"memref.global @{sym_name.data} has no initial value: external globals are "
                "not supported"
            )
        initial_value: Attribute
        if parser.parse_optional_keyword("uninitialized"):
            initial_value = UnitAttr()
        else:
            # Upstream prints the data without its type (the memref's, as a tensor).
            if not isinstance(memref_type, MemRefType):
                parser.raise_error("memref.global needs a memref type")
            parser.parse_keyword("dense")
            initial_value = parser.parse_dense_int_or_fp_elements_attr(
                TensorType(memref_type.element_type, memref_type.get_shape())
            )
        alignment = _parse_optional_alignment(parser)
        attributes = parser.parse_optional_attr_dict()
        if "alignment" in attributes:
            alignment = attributes.pop("alignment")
        op = cls.build(
            properties={
                "sym_name": sym_name,
                "sym_visibility": StringAttr(visibility if visibility is not None else "public"),
                "type": memref_type,
                "initial_value": initial_value,
                "constant": constant,
                "alignment": alignment,
            },
            attributes=attributes,
        )
        return op

    def print(self, printer: Printer) -> None:
        if self.sym_visibility.data != "public":
            printer.print_string(" ")
            printer.print_string_literal(self.sym_visibility.data)
        if self.constant is not None:
            printer.print_string(" constant")
        printer.print_string(" ")
        printer.print_symbol_name(self.sym_name.data)
        printer.print_string(" : ")
        printer.print_attribute(self.type)
        printer.print_string(" = ")
        if isinstance(self.initial_value, UnitAttr):
            printer.print_string("uninitialized")
        else:
            self.initial_value.print_without_type(printer)
        extra: dict[str, Attribute] = dict(self.attributes)
        if self.alignment is not None:
            extra["alignment"] = self.alignment
        printer.print_op_attributes(extra)


def _parse_allocation(cls: type[IRDLOperationT], parser: Parser) -> IRDLOperationT:
    """`memref.alloc`/`alloca`: `(sizes)([symbols])? (alignment = N)? attr-dict : type`, the
    alignment either as newer MLIR prints it or in the attribute dictionary (LLVM 22)."""
    sizes = parser.parse_comma_separated_list(
        parser.Delimiter.PAREN, parser.parse_unresolved_operand
    )
    symbols = (
        parser.parse_optional_comma_separated_list(
            parser.Delimiter.SQUARE, parser.parse_unresolved_operand
        )
        or []
    )
    alignment = _parse_optional_alignment(parser)
    attributes = parser.parse_optional_attr_dict()
    if "alignment" in attributes:
        alignment = attributes.pop("alignment")
    parser.parse_punctuation(":")
    result_type = parser.parse_type()
    index = IndexType()
    return cls.build(
        operands=[
            [parser.resolve_operand(size, index) for size in sizes],
            [parser.resolve_operand(symbol, index) for symbol in symbols],
        ],
        result_types=[result_type],
        properties={"alignment": alignment},
        attributes=attributes,
    )


def _with_alignment_keyword(base: type[IRDLOperationT]) -> type[IRDLOperationT]:
    """The parsing entry for xDSL's `memref.alloc`/`alloca` that also reads `alignment = N`.

    What it parses, in either form (custom or generic), is an instance of `base` itself, not of
    this class: passes, rewrite patterns and xDSL's interpreter (whose implementations are keyed
    by the exact op class) see the ordinary op. Printing is `base`'s (LLVM 22's form)."""

    def parse(cls: type[IRDLOperationT], parser: Parser) -> IRDLOperationT:
        return _parse_allocation(base, parser)

    def create(cls: type[IRDLOperationT], **fields: Any) -> IRDLOperationT:
        return base.create(**fields)

    return type(
        base.__name__,
        (base,),
        {
            "parse": classmethod(parse),
            "create": classmethod(create),
            "__doc__": f"`{base.name}` also in newer MLIR's `alignment = N` form.",
            "__module__": __name__,
        },
    )


AllocOp = _with_alignment_keyword(memref.AllocOp)
AllocaOp = _with_alignment_keyword(memref.AllocaOp)


def global_op(
    name: str,
    memref_type: MemRefType,
    initial_value: DenseIntOrFPElementsAttr | None,
    *,
    constant: bool,
    alignment: int | None,
    visibility: str = "private",
) -> GlobalOp:
    """A `memref.global` (uninitialised when `initial_value` is None)."""
    return GlobalOp.build(
        properties={
            "sym_name": StringAttr(name),
            "sym_visibility": StringAttr(visibility),
            "type": memref_type,
            "initial_value": UnitAttr() if initial_value is None else initial_value,
            "constant": UnitAttr() if constant else None,
            "alignment": None if alignment is None else IntegerAttr(alignment, 64),
        }
    )


def _with_format(
    base: type[IRDLOperationT], assembly_format: str, doc: str
) -> type[IRDLOperationT]:
    """A subclass of the xDSL op `base` (same definition) parsed and printed with
    `assembly_format`. (A decorated op class cannot be re-decorated.)"""
    program = FormatProgram.from_str(assembly_format, base.get_irdl_definition())

    def parse(cls: type[IRDLOperationT], parser: Parser) -> IRDLOperationT:
        return program.parse(parser, cls)

    def print_op(self: IRDLOperation, printer: Printer) -> None:
        program.print(printer, self)

    return type(
        base.__name__,
        (base,),
        {"parse": classmethod(parse), "print": print_op, "__doc__": doc, "__module__": __name__},
    )


CopyOp = _with_format(
    memref.CopyOp,
    "$source `,` $destination attr-dict `:` type($source) `to` type($destination)",
    "`memref.copy %a, %b : memref<...> to memref<...>`.",
)
ExtractAlignedPointerAsIndexOp = _with_format(
    memref.ExtractAlignedPointerAsIndexOp,
    "$source `:` type($source) `->` type($aligned_pointer) attr-dict",
    "`memref.extract_aligned_pointer_as_index %m : memref<...> -> index`.",
)
CastOp = _with_format(
    memref.CastOp,
    "$source attr-dict `:` type($source) `to` type($dest)",
    "`memref.cast %a : memref<...> to memref<...>`.",
)


# ---- linalg: map, reduce, broadcast ---------------------------------------------------------


def _identity_maps(rank: int, count: int) -> ArrayAttr[AffineMapAttr]:
    return ArrayAttr([AffineMapAttr(AffineMap.identity(rank))] * count)


def _dropping_map(rank: int, dropped: Sequence[int]) -> AffineMapAttr:
    """The map from `rank` loops to the dimensions not in `dropped`."""
    kept = tuple(AffineDimExpr(d) for d in range(rank) if d not in dropped)
    return AffineMapAttr(AffineMap(rank, 0, kept))


def _parse_operand_group(parser: Parser, keyword: str) -> list[SSAValue]:
    """`keyword(%a, %b : type, type)`, or nothing when the keyword is absent."""
    if not parser.parse_optional_characters(keyword):
        return []
    position = parser.pos
    parser.parse_punctuation("(")
    names: list[UnresolvedOperand] = parser.parse_comma_separated_list(
        Parser.Delimiter.NONE, parser.parse_unresolved_operand
    )
    parser.parse_punctuation(":")
    types = parser.parse_comma_separated_list(Parser.Delimiter.NONE, parser.parse_type)
    parser.parse_punctuation(")")
    return list(parser.resolve_operands(names, types, position))


def _element_type(value: SSAValue) -> Attribute:
    assert isinstance(value.type, ShapedType)
    return value.type.get_element_type()


def _parse_long_form_body(parser: Parser) -> Region:
    arguments = parser.parse_comma_separated_list(Parser.Delimiter.PAREN, parser.parse_argument)
    return parser.parse_region(arguments)


def _generalized(parser: Parser, op: LinalgStructuredOperation) -> GenericOp:
    """The `linalg.generic` that `op` stands for, after checking `op`'s shapes. Parsing gives
    the generic form at once: xDSL's `linalg.index` only lives inside `linalg.generic`, and
    every pass that handles `linalg.generic` (`convert-linalg-to-loops`) then handles it."""
    try:
        op.verify_()
    except VerifyException as error:
        parser.raise_error(str(error))
    maps, iterators = op.get_indexing_maps(), op.get_iterator_types()
    inputs, outputs = list(op.inputs), list(op.outputs)
    result_types = [r.type for r in op.res]
    body = op.detach_region(op.body)
    attributes = dict(op.attributes)
    op.erase()
    generic = GenericOp(inputs, outputs, body, maps, iterators, result_types)
    generic.attributes.update(attributes)
    return generic


def _results_for(outputs: Sequence[SSAValue]) -> list[Attribute]:
    return [value.type for value in outputs if isinstance(value.type, TensorType)]


class _ExplicitBodyOp(LinalgStructuredOperation):
    """A structured op written `ins(...) outs(...) <attribute>? (args) { body }` or with a
    short-form body `{ op }` before `ins`."""

    ATTRIBUTE: ClassVar[str | None] = None
    """The `name = [i, j]` i64 array printed after `outs`, if any."""

    irdl_options = (AttrSizedOperandSegments(as_property=True),)

    inputs = var_operand_def()
    outputs = var_operand_def(ShapedType)
    res = var_result_def(TensorType)
    body = region_def("single_block")

    @classmethod
    def parse(cls, parser: Parser) -> GenericOp:  # pyright: ignore[reportIncompatibleMethodOverride]
        short_form = parser.parse_optional_punctuation("{") is not None
        short_name = ""
        short_attrs: dict[str, Attribute] = {}
        if short_form:
            short_name = parser.parse_identifier()
            short_attrs = parser.parse_optional_attr_dict()
            parser.parse_punctuation("}")
        inputs = _parse_operand_group(parser, "ins")
        outputs = _parse_operand_group(parser, "outs")
        properties: dict[str, Attribute] = {}
        if cls.ATTRIBUTE is not None:
            parser.parse_keyword(cls.ATTRIBUTE)
            parser.parse_punctuation("=")
            values = parser.parse_comma_separated_list(
                Parser.Delimiter.SQUARE, parser.parse_integer
            )
            properties[cls.ATTRIBUTE] = DenseArrayBase.from_list(i64, values)
        attributes = parser.parse_optional_attr_dict()
        if short_form:
            block_types = [_element_type(v) for v in (*inputs, *outputs)]
            op_type = parser.ctx.get_optional_op(short_name)
            if op_type is None:
                parser.raise_error(f"unknown operation {short_name} in the short form")
            block = Block(arg_types=block_types)
            body_op = op_type.create(
                operands=block.args[: cls.short_form_operands(len(inputs), len(outputs))],
                result_types=[block_types[-1]],
                attributes=short_attrs,
            )
            block.add_ops([body_op, YieldOp(*body_op.results)])
            region = Region(block)
        else:
            region = _parse_long_form_body(parser)
        return _generalized(
            parser,
            cls.build(
                operands=[inputs, outputs],
                result_types=[_results_for(outputs)],
                properties=properties,
                attributes=attributes,
                regions=[region],
            ),
        )

    @classmethod
    def short_form_operands(cls, inputs: int, outputs: int) -> int:
        """How many block arguments the short form's op takes."""
        return inputs

    def _check_body(self) -> None:
        expected = [_element_type(v) for v in (*self.inputs, *self.outputs)]
        actual = list(self.body.block.arg_types)
        if actual != expected:
            raise VerifyException(
                f"{self.name}: the body takes ({', '.join(map(str, actual))}) but the operands "
                f"have element types ({', '.join(map(str, expected))})"
            )


@irdl_op_definition
class MapOp(_ExplicitBodyOp):
    """`linalg.map`: an elementwise body over inputs of the init's shape (the body also gets
    the init's element, as LLVM 22 prints it)."""

    name = "linalg.map"

    def verify_(self) -> None:
        if len(self.outputs) != 1:
            raise VerifyException("linalg.map takes exactly one init (outs)")
        for value in self.inputs:
            if _shape(value) != _shape(self.outputs[0]):
                raise VerifyException("linalg.map: every input must have the init's shape")
        self._check_body()

    def get_indexing_maps(self) -> ArrayAttr[AffineMapAttr]:
        return _identity_maps(len(_shape(self.outputs[0])), len(self.operands))

    def get_iterator_types(self) -> ArrayAttr[IteratorTypeAttr]:
        return ArrayAttr([IteratorTypeAttr.parallel()] * len(_shape(self.outputs[0])))


@irdl_op_definition
class ReduceOp(_ExplicitBodyOp):
    """`linalg.reduce`: folds the `dimensions` of each input into its init."""

    name = "linalg.reduce"
    ATTRIBUTE: ClassVar[str | None] = "dimensions"

    dimensions = prop_def(DenseArrayBase.constr(i64))

    @classmethod
    def short_form_operands(cls, inputs: int, outputs: int) -> int:
        return inputs + outputs

    def verify_(self) -> None:
        if len(self.inputs) != len(self.outputs) or not self.inputs:
            raise VerifyException("linalg.reduce takes as many inits as inputs")
        dims = self.dimensions.get_values()
        input_shape = _shape(self.inputs[0])
        kept = [size for d, size in enumerate(input_shape) if d not in dims]
        for value in self.inputs:
            if _shape(value) != input_shape:
                raise VerifyException("linalg.reduce: every input must have the same shape")
        for value in self.outputs:
            if list(_shape(value)) != kept:
                raise VerifyException(
                    "linalg.reduce: an init must have the input's shape without the reduced "
                    "dimensions"
                )
        self._check_body()

    def get_indexing_maps(self) -> ArrayAttr[AffineMapAttr]:
        rank = len(_shape(self.inputs[0]))
        dims = self.dimensions.get_values()
        return ArrayAttr(
            [AffineMapAttr(AffineMap.identity(rank))] * len(self.inputs)
            + [_dropping_map(rank, dims)] * len(self.outputs)
        )

    def get_iterator_types(self) -> ArrayAttr[IteratorTypeAttr]:
        dims = self.dimensions.get_values()
        return ArrayAttr(
            [
                IteratorTypeAttr.reduction() if d in dims else IteratorTypeAttr.parallel()
                for d in range(len(_shape(self.inputs[0])))
            ]
        )


def _shape(value: SSAValue) -> tuple[int, ...]:
    assert isinstance(value.type, ShapedType)
    return tuple(value.type.get_shape())


@irdl_op_definition
class StructuredBroadcastOp(_ExplicitBodyOp):
    """`linalg.broadcast` as a structured op (hidden body: yield the input)."""

    name = "linalg.broadcast"
    ATTRIBUTE: ClassVar[str | None] = "dimensions"

    dimensions = prop_def(DenseArrayBase.constr(i64))

    @classmethod
    def parse(cls, parser: Parser) -> GenericOp:  # pyright: ignore[reportIncompatibleMethodOverride]
        inputs = _parse_operand_group(parser, "ins")
        outputs = _parse_operand_group(parser, "outs")
        parser.parse_keyword("dimensions")
        parser.parse_punctuation("=")
        values = parser.parse_comma_separated_list(Parser.Delimiter.SQUARE, parser.parse_integer)
        attributes = parser.parse_optional_attr_dict()
        return _generalized(
            parser,
            cls.build(
                operands=[inputs, outputs],
                result_types=[_results_for(outputs)],
                properties={"dimensions": DenseArrayBase.from_list(i64, values)},
                attributes=attributes,
                regions=[_yield_first_region([*inputs, *outputs])],
            ),
        )

    def verify_(self) -> None:
        if len(self.inputs) != 1 or len(self.outputs) != 1:
            raise VerifyException("linalg.broadcast takes one input and one init")
        dims = self.dimensions.get_values()
        init_shape = _shape(self.outputs[0])
        kept = tuple(size for d, size in enumerate(init_shape) if d not in dims)
        if _shape(self.inputs[0]) != kept:
            raise VerifyException(
                "linalg.broadcast: the input must have the init's shape without the added "
                "dimensions"
            )

    def get_indexing_maps(self) -> ArrayAttr[AffineMapAttr]:
        rank = len(_shape(self.outputs[0]))
        return ArrayAttr(
            [
                _dropping_map(rank, self.dimensions.get_values()),
                AffineMapAttr(AffineMap.identity(rank)),
            ]
        )

    def get_iterator_types(self) -> ArrayAttr[IteratorTypeAttr]:
        return ArrayAttr([IteratorTypeAttr.parallel()] * len(_shape(self.outputs[0])))


def _yield_first_region(operands: Sequence[SSAValue]) -> Region:
    block = Block(arg_types=[_element_type(v) for v in operands])
    block.add_op(YieldOp(block.args[0]))
    return Region(block)


# ---- linalg: named elementwise ops ---------------------------------------------------------

_BodyBuilder = Callable[[Sequence[BlockArgument], Attribute], Operation]


def _named_definition(op: type[IRDLOperationT], name: str, doc: str) -> type[IRDLOperationT]:
    """The IRDL definition of the op class `op` built for the upstream op `name`
    (`linalg.pooling_nchw_max` becomes class `PoolingNchwMax`)."""
    op.name = name
    op.__name__ = op.__qualname__ = "".join(p.title() for p in name.split(".")[1].split("_"))
    op.__doc__ = doc
    return irdl_op_definition(op)


def _elementwise_op(name: str, build_body: _BodyBuilder, doc: str) -> type[ElementwiseOperation]:
    """A named elementwise op whose hidden body applies `build_body` to the inputs' elements."""

    class _Op(ElementwiseOperation):
        @classmethod
        def get_hidden_region(
            cls, inputs: Sequence[SSAValue], outputs: Sequence[SSAValue]
        ) -> Region:
            arg_types = cls.body_arg_types((*inputs, *outputs))

            @Builder.implicit_region(arg_types)
            def hidden_region(args: tuple[BlockArgument, ...]) -> None:
                result = build_body(args[: len(inputs)], arg_types[-1])
                YieldOp(*result.results)

            return hidden_region

    return _named_definition(_Op, name, doc)


def _float_or_int(float_op: type[Operation], int_op: type[Operation]) -> _BodyBuilder:
    def build(args: Sequence[BlockArgument], element: Attribute) -> Operation:
        op_type = float_op if isinstance(element, AnyFloat) else int_op
        return op_type(*args)  # pyright: ignore[reportCallIssue]

    return build


def _unary(op_type: type[Operation]) -> _BodyBuilder:
    def build(args: Sequence[BlockArgument], element: Attribute) -> Operation:
        return op_type(args[0])  # pyright: ignore[reportCallIssue]

    return build


def _square(args: Sequence[BlockArgument], element: Attribute) -> Operation:
    op_type = arith.MulfOp if isinstance(element, AnyFloat) else arith.MuliOp
    return op_type(args[0], args[0])


ELEMENTWISE_OPS: tuple[type[ElementwiseOperation], ...] = (
    _elementwise_op("linalg.div", _float_or_int(arith.DivfOp, arith.DivSIOp), "Elementwise a / b."),
    _elementwise_op("linalg.abs", _float_or_int(math.AbsFOp, math.AbsIOp), "Elementwise |a|."),
    _elementwise_op("linalg.negf", _unary(arith.NegfOp), "Elementwise -a."),
    _elementwise_op("linalg.floor", _unary(math.FloorOp), "Elementwise floor(a)."),
    _elementwise_op("linalg.ceil", _unary(math.CeilOp), "Elementwise ceil(a)."),
    _elementwise_op("linalg.tanh", _unary(math.TanhOp), "Elementwise tanh(a)."),
    _elementwise_op("linalg.rsqrt", _unary(math.RsqrtOp), "Elementwise 1/sqrt(a)."),
    _elementwise_op("linalg.erf", _unary(math.ErfOp), "Elementwise erf(a)."),
    _elementwise_op("linalg.powf", _float_or_int(math.PowFOp, math.PowFOp), "Elementwise a**b."),
    _elementwise_op("linalg.square", _square, "Elementwise a * a."),
)


def _pooling_op(name: str, layout: str, combine: _BodyBuilder, doc: str) -> type[PoolingOperation]:
    """A named pooling op: `O = combine(O, I)` over the window, `layout` "nchw", "nhwc" or
    "ndhwc" (3-D, as IREE lowers ONNX's LRN: a sum over a channel window)."""

    class _Op(PoolingOperation):
        @classmethod
        def get_hidden_region(
            cls, inputs: Sequence[SSAValue], outputs: Sequence[SSAValue]
        ) -> Region:
            arg_types = cls.body_arg_types((*inputs, *outputs))

            @Builder.implicit_region(arg_types)
            def hidden_region(args: tuple[BlockArgument, ...]) -> None:
                # (input element, window element, output element): the window only has a shape.
                result = combine([args[2], args[0]], arg_types[-1])
                YieldOp(*result.results)

            return hidden_region

        def get_default_indexing_maps(self) -> Sequence[AffineMap]:
            if layout == "ndhwc":
                n, od, oh, ow, c, kd, kh, kw = (AffineDimExpr(d) for d in range(8))
                window = (
                    o * stride + k * dilation
                    for o, k, stride, dilation in zip(
                        (od, oh, ow),
                        (kd, kh, kw),
                        self.strides.get_values(),
                        self.dilations.get_values(),
                        strict=True,
                    )
                )
                image = (n, *window, c)
                output = (n, od, oh, ow, c)
                return (
                    AffineMap(8, 0, image),
                    AffineMap(8, 0, (kd, kh, kw)),
                    AffineMap(8, 0, output),
                )
            stride_h, stride_w = self.strides.get_values()
            dilation_h, dilation_w = self.dilations.get_values()
            if layout == "nchw":
                n, c, oh, ow, kh, kw = (AffineDimExpr(d) for d in range(6))
                image = (n, c, oh * stride_h + kh * dilation_h, ow * stride_w + kw * dilation_w)
                output = (n, c, oh, ow)
            else:
                n, oh, ow, c, kh, kw = (AffineDimExpr(d) for d in range(6))
                image = (n, oh * stride_h + kh * dilation_h, ow * stride_w + kw * dilation_w, c)
                output = (n, oh, ow, c)
            return (AffineMap(6, 0, image), AffineMap(6, 0, (kh, kw)), AffineMap(6, 0, output))

        def get_iterator_types(self) -> ArrayAttr[IteratorTypeAttr]:
            window = 3 if layout == "ndhwc" else 2
            return ArrayAttr(
                [IteratorTypeAttr.parallel()] * (self.get_num_loops() - window)
                + [IteratorTypeAttr.reduction()] * window
            )

    return _named_definition(_Op, name, doc)


POOLING_OPS: tuple[type[PoolingOperation], ...] = tuple(
    _pooling_op(f"linalg.pooling_{layout}_{kind}", layout, combine, f"{kind} pooling, {layout}.")
    for layout in ("nchw", "nhwc", "ndhwc")
    for kind, combine in (
        ("max", _float_or_int(arith.MaximumfOp, arith.MaxSIOp)),
        ("min", _float_or_int(arith.MinimumfOp, arith.MinSIOp)),
        ("sum", _float_or_int(arith.AddfOp, arith.AddiOp)),
    )
)
"""xDSL 0.74's own `linalg.pooling_nchw_max` combines the input with the window tensor instead
of the output (it computes max(I, K)); these replace it."""


def _cast_to(value: SSAValue, element: Attribute) -> SSAValue:
    """`value` converted to `element` as upstream's named ops do (signed); the op goes into
    the enclosing implicit region builder's block."""
    source = value.type
    if source == element:
        return value
    op: Operation
    if isinstance(source, IntegerType) and isinstance(element, AnyFloat):
        op = arith.SIToFPOp(value, element)
    elif isinstance(source, AnyFloat) and isinstance(element, AnyFloat):
        widen = source.bitwidth < element.bitwidth
        op = arith.ExtFOp(value, element) if widen else arith.TruncFOp(value, element)
    elif isinstance(source, IntegerType) and isinstance(element, IntegerType):
        widen = source.width.data < element.width.data
        op = arith.ExtSIOp(value, element) if widen else arith.TruncIOp(value, element)
    else:
        raise VerifyException(f"cannot convert {source} to {element} in a linalg body")
    return op.results[0]


def _contraction_op(
    name: str, maps: Callable[[], Sequence[AffineMap]], reductions: int, doc: str
) -> type[NamedOperation]:
    """A named contraction `O += cast(A) * cast(B)` with fixed indexing maps; the last
    `reductions` loops are reductions."""

    class _Op(NamedOperation):
        PRINT_ATTRS_IN_FRONT: ClassVar[bool] = True

        @classmethod
        def get_hidden_region(
            cls, inputs: Sequence[SSAValue], outputs: Sequence[SSAValue]
        ) -> Region:
            arg_types = cls.body_arg_types((*inputs, *outputs))
            element = arg_types[-1]
            add, mul = (
                (arith.AddfOp, arith.MulfOp)
                if isinstance(element, AnyFloat)
                else (arith.AddiOp, arith.MuliOp)
            )

            @Builder.implicit_region(arg_types)
            def hidden_region(args: tuple[BlockArgument, ...]) -> None:
                product = mul(_cast_to(args[0], element), _cast_to(args[1], element))
                YieldOp(add(args[2], product))

            return hidden_region

        def get_default_indexing_maps(self) -> Sequence[AffineMap]:
            return maps()

        def get_iterator_types(self) -> ArrayAttr[IteratorTypeAttr]:
            loops = self.get_num_loops()
            return ArrayAttr(
                [IteratorTypeAttr.parallel()] * (loops - reductions)
                + [IteratorTypeAttr.reduction()] * reductions
            )

    return _named_definition(_Op, name, doc)


CONTRACTION_OPS: tuple[type[NamedOperation], ...] = (
    _contraction_op(
        "linalg.batch_matmul",
        lambda: (
            AffineMap.from_callable(lambda b, i, j, k: (b, i, k)),
            AffineMap.from_callable(lambda b, i, j, k: (b, k, j)),
            AffineMap.from_callable(lambda b, i, j, k: (b, i, j)),
        ),
        1,
        "Batched matrix multiplication: O[b, i, j] += A[b, i, k] * B[b, k, j].",
    ),
    _contraction_op(
        "linalg.matvec",
        lambda: (
            AffineMap.from_callable(lambda i, k: (i, k)),
            AffineMap.from_callable(lambda i, k: (k,)),
            AffineMap.from_callable(lambda i, k: (i,)),
        ),
        1,
        "Matrix-vector product: O[i] += A[i, k] * x[k].",
    ),
    _contraction_op(
        "linalg.vecmat",
        lambda: (
            AffineMap.from_callable(lambda j, k: (k,)),
            AffineMap.from_callable(lambda j, k: (k, j)),
            AffineMap.from_callable(lambda j, k: (j,)),
        ),
        1,
        "Vector-matrix product: O[j] += x[k] * A[k, j].",
    ),
)


def _depthwise_conv_op(name: str, layout: str, doc: str) -> type[ConvOperation]:
    """A named depthwise 2-D convolution, `O[n, c, oh, ow] += I[n, c, oh*s + kh*d, ow*s +
    kw*d] * K[c, kh, kw]` ("nchw", filter CHW) or its NHWC/HWC form: loops (n, oh, ow, c, kh,
    kw), the last two reductions, as upstream's."""

    class _Op(ConvOperation):
        def get_default_indexing_maps(self) -> Sequence[AffineMap]:
            stride_h, stride_w = self.strides.get_values()
            dilation_h, dilation_w = self.dilations.get_values()
            n, oh, ow, c, kh, kw = (AffineDimExpr(d) for d in range(6))
            row, column = oh * stride_h + kh * dilation_h, ow * stride_w + kw * dilation_w
            if layout == "nchw":
                image, kernel, output = (n, c, row, column), (c, kh, kw), (n, c, oh, ow)
            else:
                image, kernel, output = (n, row, column, c), (kh, kw, c), (n, oh, ow, c)
            return (AffineMap(6, 0, image), AffineMap(6, 0, kernel), AffineMap(6, 0, output))

        def get_iterator_types(self) -> ArrayAttr[IteratorTypeAttr]:
            return ArrayAttr([IteratorTypeAttr.parallel()] * 4 + [IteratorTypeAttr.reduction()] * 2)

    return _named_definition(_Op, name, doc)


CONV_OPS: tuple[type[ConvOperation], ...] = (
    _depthwise_conv_op(
        "linalg.depthwise_conv_2d_nchw_chw", "nchw", "Depthwise 2-D convolution, NCHW, CHW filter."
    ),
    _depthwise_conv_op(
        "linalg.depthwise_conv_2d_nhwc_hwc", "nhwc", "Depthwise 2-D convolution, NHWC, HWC filter."
    ),
)


# ---- bufferization ---------------------------------------------------------------------------

DEALLOCATION_ADVICE = (
    "bufferize without mlir-opt's deallocation pipeline (--buffer-deallocation-pipeline, "
    "--ownership-based-buffer-deallocation): planned buffers are never freed"
)
DEALLOC_MESSAGE = f"bufferization.dealloc is not supported: {DEALLOCATION_ADVICE}"


@irdl_op_definition
class DeallocOp(IRDLOperation):
    """`bufferization.dealloc`, known only to say clearly that it is not supported (the
    ownership-based deallocation pipeline's output; planned memory is never freed)."""

    name = "bufferization.dealloc"

    irdl_options = (AttrSizedOperandSegments(as_property=True),)

    memrefs = var_operand_def()
    conditions = var_operand_def()
    retained = var_operand_def()
    updated_conditions = var_result_def()

    @classmethod
    def parse(cls, parser: Parser) -> DeallocOp:
        parser.raise_error(DEALLOC_MESSAGE)


@irdl_op_definition
class RemfOp(arith.FloatingPointLikeBinaryOperation):
    """Upstream's `arith.remf` (the remainder of the truncated quotient, C's `fmod`), which
    xDSL's `arith` lacks."""

    name = "arith.remf"

    traits = traits_def(Pure())


def _extend(base: Dialect, replacements: Sequence[type[Operation]]) -> Dialect:
    by_name = {op.name: op for op in base.operations}
    for op in replacements:
        by_name[op.name] = op
    return Dialect(base.name, list(by_name.values()), list(base.attributes))


def extended_arith() -> Dialect:
    """xDSL's `arith` dialect with `remf`."""
    return _extend(arith.Arith, [RemfOp])


def extended_bufferization() -> Dialect:
    """xDSL's `bufferization` dialect with `dealloc` (a clear error)."""
    return _extend(bufferization.Bufferization, [DeallocOp])


def extended_memref() -> Dialect:
    """xDSL's `memref` dialect with upstream's syntax for `global`, `alloc`, `alloca`, `copy`,
    `cast` and `extract_aligned_pointer_as_index`."""
    return _extend(
        memref.MemRef,
        [GlobalOp, AllocOp, AllocaOp, CopyOp, CastOp, ExtractAlignedPointerAsIndexOp],
    )


def extended_linalg() -> Dialect:
    """xDSL's `linalg` dialect with `map`, structured `reduce`/`broadcast` and more named ops."""
    return _extend(
        linalg.Linalg,
        [
            MapOp,
            ReduceOp,
            StructuredBroadcastOp,
            *ELEMENTWISE_OPS,
            *POOLING_OPS,
            *CONTRACTION_OPS,
            *CONV_OPS,
        ],
    )
