"""Writes one of the control-flow models of `usmp_dialect.testing.control_flow_models`
(argv[1], e.g. `nested`) to argv[2] for the control-flow lit test."""

import sys

from usmp_dialect.testing.control_flow_models import MODELS

with open(sys.argv[2], "wb") as file:
    file.write(MODELS[sys.argv[1]]())
