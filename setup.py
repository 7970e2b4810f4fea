"""Builds the optional native core of the planner (plain C, no Python API beyond a module
stub). When no C compiler is available the build of the extension is skipped and the planner
runs its pure-Python (numpy) implementation: see usmp_dialect/planning/native.py."""

from setuptools import Extension, setup

setup(
    ext_modules=[
        Extension(
            "usmp_dialect.planning._native",
            sources=[
                "usmp_dialect/planning/csrc/module.c",
                "usmp_dialect/planning/csrc/greedy.c",
                "usmp_dialect/planning/csrc/exact.c",
                "usmp_dialect/planning/csrc/graph.c",
            ],
            depends=["usmp_dialect/planning/csrc/native.h"],
            extra_compile_args=["-O2", "-std=c11"],
            optional=True,
        )
    ]
)
