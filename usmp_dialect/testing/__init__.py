"""Testing helpers: a random program generator and the differential harness.

* `generator.generate_program(seed)` builds a random, valid, UB-free program (MLIR text) whose
  every buffer is fully written before it is read, so its output does not depend on how its
  buffers are placed in memory.
* `harness.run_differential(program, algorithms)` plans the program with each algorithm and
  with the `no_reuse` reference (every buffer separate), prints, compiles and runs the C, and
  reports any difference in the outputs.
"""
