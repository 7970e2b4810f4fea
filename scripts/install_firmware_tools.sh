#!/usr/bin/env bash
# The firmware suite's tools (test/firmware, benchmarks/firmware.py): the Arm bare-metal GCC,
# newlib (libc/libm for the model's memmove and math functions) and QEMU's Arm system emulator.
# Run as root on a Debian/Ubuntu machine; CI (.ci/run) calls it.
set -euo pipefail
if command -v arm-none-eabi-gcc >/dev/null 2>&1 && command -v qemu-system-arm >/dev/null 2>&1; then
  exit 0
fi
apt-get update
apt-get install -y --no-install-recommends gcc-arm-none-eabi libnewlib-arm-none-eabi qemu-system-arm
