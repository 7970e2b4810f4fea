"""`python -m usmp_dialect.models NAME -o FILE.mlir [--seed N]`: writes a model's IR."""

import argparse
import sys

from usmp_dialect.models import MODELS, build
from usmp_dialect.models.emit import ACCUMULATORS


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m usmp_dialect.models", description="Write an int8 network as MLIR."
    )
    parser.add_argument("name", nargs="?", help="model name (see --list)")
    parser.add_argument("-o", "--output", help="output file (default: stdout)")
    parser.add_argument("--seed", type=int, default=0, help="weight seed (default 0)")
    parser.add_argument("--resolution", type=int, help="input size (vww, mobilenetv2)")
    parser.add_argument("--width-multiplier", type=float, help="channel width (mobilenetv2)")
    parser.add_argument(
        "--accumulator",
        choices=ACCUMULATORS,
        default="row",
        help="int32 scratch of a convolution: one output row (default) or the whole output",
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
    options: dict[str, int | float] = {}
    if args.resolution is not None:
        options["resolution"] = args.resolution
    if args.width_multiplier is not None:
        options["width_multiplier"] = args.width_multiplier
    try:
        model = build(args.name, args.seed, args.accumulator, **options)
    except ValueError as error:
        print(f"error: {error}", file=sys.stderr)
        return 1
    if args.output:
        with open(args.output, "w") as file:
            file.write(model.mlir)
    else:
        sys.stdout.write(model.mlir)
    return 0


if __name__ == "__main__":
    sys.exit(main())
