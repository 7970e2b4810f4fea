"""The entry function read as a graph of operators and buffers (analysis/operator_graph.py)."""
# ruff: noqa: E501

from __future__ import annotations

from xdsl.parser import Parser

from usmp_dialect.analysis.operator_graph import operator_graph
from usmp_dialect.graph.graph import Access, dependencies
from usmp_dialect.testing.harness import pipeline_context

PROGRAM = """
memref.global "private" @state : memref<4xf32> = dense<0.0>
memref.global "private" constant @weights : memref<4xf32> = dense<1.0>
func.func private @external(memref<4xf32>)
func.func @main(%x: memref<4xf32> {usmp.io = "input"}, %y: memref<4xf32> {usmp.io = "output"}) {
  %c0 = arith.constant 0 : index
  %c16 = arith.constant 16 : index
  %cat = usmp.allocate : memref<32xi8>
  %low = memref.view %cat[%c0][] : memref<32xi8> to memref<4xf32>
  %high = memref.view %cat[%c16][] : memref<32xi8> to memref<4xf32>
  func.call @scale(%x, %low) : (memref<4xf32>, memref<4xf32>) -> ()
  func.call @nested(%x, %high) : (memref<4xf32>, memref<4xf32>) -> ()
  %flat = memref.reinterpret_cast %high to offset: [2], sizes: [2], strides: [1] : memref<4xf32> to memref<2xf32, strided<[1], offset: 2>>
  func.call @tick(%x) : (memref<4xf32>) -> ()
  func.call @external(%x) : (memref<4xf32>) -> ()
  memref.copy %low, %y : memref<4xf32> to memref<4xf32>
  %v = memref.load %flat[%c0] : memref<2xf32, strided<[1], offset: 2>>
  memref.store %v, %y[%c0] : memref<4xf32>
  func.return
}
func.func @scale(%in: memref<4xf32>, %out: memref<4xf32>) {
  %c0 = arith.constant 0 : index
  %w = memref.get_global @weights : memref<4xf32>
  %scratch = usmp.allocate : memref<16xf32>
  %a = memref.load %in[%c0] : memref<4xf32>
  %b = memref.load %w[%c0] : memref<4xf32>
  memref.store %a, %scratch[%c0] : memref<16xf32>
  %p = arith.mulf %a, %b : f32
  memref.store %p, %out[%c0] : memref<4xf32>
  func.return
}
func.func @nested(%in: memref<4xf32>, %out: memref<4xf32>) {
  %view = memref.cast %out : memref<4xf32> to memref<?xf32>
  func.call @scale(%in, %out) : (memref<4xf32>, memref<4xf32>) -> ()
  func.return
}
func.func @tick(%in: memref<4xf32>) {
  %c0 = arith.constant 0 : index
  %s = memref.get_global @state : memref<4xf32>
  %a = memref.load %in[%c0] : memref<4xf32>
  memref.store %a, %s[%c0] : memref<4xf32>
  func.return
}
"""


def test_entry_operators_reads_writes_and_barriers() -> None:
    module = Parser(pipeline_context(), PROGRAM).parse_module()
    described = operator_graph(module)
    assert described is not None
    graph = described.graph
    buffers = {buffer.name: index for index, buffer in enumerate(graph.buffers)}
    x, y, cat = buffers["x"], buffers["y"], buffers["cat"]
    assert not graph.buffers[x].planned and graph.buffers[x].kind == "input"
    assert graph.buffers[y].kind == "output" and graph.buffers[cat].planned
    names = [operator.name for operator in graph.operators]
    assert names == ["scale", "nested", "tick", "external", "memref.copy", "memref.load",
                     "memref.store"]  # fmt: skip
    scale, nested, tick, external, copy, load, store = graph.operators
    # Loads read, stores write; the constant global and the scratch buffer are the callee's.
    assert scale.reads == (Access(x, 0, 16),) and scale.writes == (Access(cat, 0, 16),)
    assert scale.scratch_bytes == 64 and not scale.barrier
    # Through a nested call: the same effects on the arguments, and the callee's scratch.
    assert nested.reads == (Access(x, 0, 16),) and nested.writes == (Access(cat, 16, 32),)
    assert nested.scratch_bytes == 64
    # A mutable global, or a declaration: effects the analysis cannot see.
    assert tick.barrier and external.barrier
    assert copy.reads == (Access(cat, 0, 16),) and copy.writes == (Access(y, 0, 16),)
    # reinterpret_cast at offset 2 of the view at byte 16: bytes 24 to 32 of %cat.
    assert load.reads == (Access(cat, 24, 32),)
    assert store.after == (5,)  # the loaded value
    deps = dependencies(graph)
    assert deps[0] == () and deps[1] == ()  # disjoint slices, one input read twice
    assert deps[2] == (0, 1) and deps[3] == (0, 1, 2)  # barriers follow everything
    assert deps[4] == (0, 3) and deps[5] == (1, 3)  # reads of what a slice's producer wrote
    assert deps[6] == (3, 4, 5)  # a write after the copy's write, the loaded value


def test_entry_with_several_blocks_is_not_described() -> None:
    text = """
    func.func @main(%x: memref<4xf32>) {
      cf.br ^next
    ^next:
      func.return
    }
    """
    assert operator_graph(Parser(pipeline_context(), text).parse_module()) is None


def test_loop_nest_in_the_entry_reads_and_writes_the_buffers_it_uses() -> None:
    text = """
    func.func @main(%x: memref<4xf32> {usmp.io = "input"}, %y: memref<4xf32> {usmp.io = "output"}) {
      %c0 = arith.constant 0 : index
      %c1 = arith.constant 1 : index
      %c4 = arith.constant 4 : index
      %t = usmp.allocate : memref<4xf32>
      scf.for %i = %c0 to %c4 step %c1 {
        %v = memref.load %x[%i] : memref<4xf32>
        %local = usmp.allocate : memref<2xf32>
        memref.store %v, %t[%i] : memref<4xf32>
      }
      memref.copy %t, %y : memref<4xf32> to memref<4xf32>
      func.return
    }
    """
    described = operator_graph(Parser(pipeline_context(), text).parse_module())
    assert described is not None
    loop, copy = described.graph.operators
    assert copy.name == "memref.copy"
    assert loop.name == "scf.for" and not loop.barrier
    assert loop.reads == (Access(0, 0, 16),) and loop.writes == (Access(2, 0, 16),)
    assert loop.scratch_bytes == 8
    assert dependencies(described.graph) == ((), (0,))
