"""The C backend: planned programs as a C source file and its header (SPEC §7)."""
