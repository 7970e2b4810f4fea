#!/usr/bin/env bash
# Installs LLVM's MLIR tools (mlir-opt, mlir-runner: Debian's mlir-22-tools) for the tests that
# bufferize with upstream MLIR and run the planned programs (test/upstream). Needs root.
set -euo pipefail
apt-get update
apt-get install -y --no-install-recommends mlir-22-tools
