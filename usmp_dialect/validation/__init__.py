"""Checking a model's generated C against a reference runtime on the host (`usmp-validate`).

* `host`: generates the C with `usmp-opt`, compiles it with a small `main` and runs it on
  numpy arrays (also the tests' and benchmarks' way to run our C).
* `tflm`: TensorFlow Lite Micro (outputs, arena figures, seeded inputs); `oracles`: the
  reference runtime for a model file (TFLM, LiteRT where TFLM refuses, onnxruntime).
* `validate`: the whole check — compile, run both on the same inputs, compare each output,
  and the workspace against TFLM's arena — as plain data and the lines `usmp-validate` prints.
"""
