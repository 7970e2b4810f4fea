# lit configuration for usmp-dialect: the FileCheck tests under test/.
# Tools (usmp-opt, usmp-plan, xdsl-opt, filecheck) come from the active virtualenv.
import importlib.util
import os
import shutil

import lit.formats

config.name = "usmp-dialect"
config.test_format = lit.formats.ShTest(execute_external=False)
config.suffixes = [".mlir", ".test"]
config.test_source_root = os.path.dirname(os.path.abspath(__file__))
config.test_exec_root = config.test_source_root
# Only test/ holds tests; everything else at the root is skipped.
config.excludes = [
    "Inputs",
    "__pycache__",
    ".venv",
    ".git",
    "usmp_dialect",
    "docs",
    "examples",
    "benchmarks",
    "scripts",
    "build",
]
config.environment["PYTHONHASHSEED"] = os.environ.get("PYTHONHASHSEED", "0")
for name in ("PATH", "VIRTUAL_ENV", "HOME", "TMPDIR"):
    if name in os.environ:
        config.environment[name] = os.environ[name]

config.substitutions.append(
    (
        "USMP_ROUNDTRIP",
        "usmp-opt %s --split-input-file | usmp-opt --split-input-file | filecheck %s",
    )
)
config.substitutions.append(
    (
        "USMP_GENERIC_ROUNDTRIP",
        "usmp-opt %s --print-op-generic --split-input-file | usmp-opt --split-input-file "
        "| filecheck %s",
    )
)
config.substitutions.append(
    (
        "USMP_VERIFY_DIAG",
        "usmp-opt %s --parsing-diagnostics --verify-diagnostics --split-input-file",
    )
)
if shutil.which("gcc"):
    config.available_features.add("gcc")
if importlib.util.find_spec("onnx") is not None:  # the optional ONNX frontend
    config.available_features.add("onnx")
if shutil.which("clang"):
    config.available_features.add("clang")
# LLVM 22's mlir-opt (scripts/install_mlir_tools.sh): tests that need it say `REQUIRES: mlir-opt`
# and call it as %mlir_opt; without it they are reported UNSUPPORTED.
try:
    from usmp_dialect.testing.mlir_runner import LOWER_TO_LLVM, mlir_opt_path
except ImportError:
    mlir_opt_path = None
MLIR_OPT = mlir_opt_path() if mlir_opt_path is not None else None
if MLIR_OPT is not None:
    config.available_features.add("mlir-opt")
    config.substitutions.append(("%mlir_opt_lower", " ".join([MLIR_OPT, *LOWER_TO_LLVM])))
    config.substitutions.append(("%mlir_opt", MLIR_OPT))
