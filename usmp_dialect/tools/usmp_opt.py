"""`usmp-opt`: xdsl-opt with the project's names (through the universe) and pool flags."""

from xdsl.xdsl_opt_main import xDSLOptMain


class UsmpOptMain(xDSLOptMain):
    """The xDSL optimizer driver; our dialects, passes and targets come from the universe."""


def main() -> None:
    UsmpOptMain(description="usmp-dialect modular optimizer driver").run()


if __name__ == "__main__":
    main()
