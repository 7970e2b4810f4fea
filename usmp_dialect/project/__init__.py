"""Firmware projects: a compiled model as a directory that builds with CMake or make, on the
host and on a Cortex-M (SPEC §14; `usmp-opt -t project`, `usmp_dialect.compile`).

`facts` reads what the files state off the planned module, `files` writes their texts,
`main_source` the example program, `cortex_m` the bare-metal runtime, `directory` writes the
directory atomically and `compiled` assembles it all into a `CompiledModel`.
"""
