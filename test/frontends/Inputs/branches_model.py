"""Writes `usmp_dialect.testing.onnx_models.branches_model` (three branches written breadth
first) to argv[1], for the lit test of the memory-aware order."""

import sys

from usmp_dialect.testing.onnx_models import branches_model

with open(sys.argv[1], "wb") as file:
    file.write(branches_model())
