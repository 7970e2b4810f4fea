#!/usr/bin/env bash
# Runs every test: lint, the lit/FileCheck suite and pytest. Expects the project's virtualenv
# to be active (or its tools on PATH).
set -euo pipefail
cd "$(dirname "$0")/.."
ruff check .
lit -q test
# The native core must be built here (pip install compiles it): its tests may not skip.
USMP_REQUIRE_NATIVE=1 pytest -q -n 2 test
