"""`python -m usmp_dialect.models NAME -o FILE.tflite [--seed N] [options]`: writes a model."""

from __future__ import annotations

import argparse
import sys
from typing import NoReturn

from usmp_dialect.models import MODELS, build
from usmp_dialect.tools.output_file import write_text_atomically


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> NoReturn:
        """Usage errors are one line, exit code 1."""
        print(f"error: {message}", file=sys.stderr)
        raise SystemExit(1)


def main(argv: list[str] | None = None) -> int:
    parser = _Parser(
        prog="python -m usmp_dialect.models",
        description="Write a synthetic int8 network as a .tflite model.",
    )
    parser.add_argument("name", nargs="?", help="model name (see --list)")
    parser.add_argument("-o", "--output", help="output .tflite file (default: stdout)")
    parser.add_argument("--seed", type=int, default=0, help="weight seed (default 0)")
    parser.add_argument("--resolution", type=int, help="input size (mobilenetv2, default 224)")
    parser.add_argument(
        "--width-multiplier", type=float, help="channel width (mobilenetv2, default 1.0)"
    )
    parser.add_argument("--classes", type=int, help="output classes (mobilenetv2, default 1000)")
    parser.add_argument(
        "--export",
        help="how the stride-2 layers are written (mobilenetv2: tflite, SAME padding, the "
        "default; keras, a PAD before each stride-2 depthwise layer; pytorch, an NCHW input "
        "transposed at the head and a PAD before each stride-2 3x3 layer)",
    )
    parser.add_argument("--list", action="store_true", help="list the models and exit")
    args = parser.parse_args(argv)
    if args.list:
        for name in sorted(MODELS):
            doc = (MODELS[name].__doc__ or "").strip().splitlines()[0]
            print(f"{name}: {doc}")
        return 0
    if args.name is None:
        parser.error("a model name is required (or --list)")
    if args.output is None and sys.stdout.isatty():
        print("error: a .tflite model is binary: give -o FILE", file=sys.stderr)
        return 1
    options: dict[str, int | float | str] = {
        option: value
        for option, value in (
            ("resolution", args.resolution),
            ("width_multiplier", args.width_multiplier),
            ("classes", args.classes),
            ("export", args.export),
        )
        if value is not None
    }
    try:
        model = build(args.name, args.seed, **options).tflite
        if args.output is None:
            sys.stdout.buffer.write(model)
        else:
            write_text_atomically(args.output, model)
    except ValueError as error:
        print(f"error: {error}", file=sys.stderr)
        return 1
    except OSError as error:
        print(f"error: cannot write '{args.output}': {error.strerror or error}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
