# Makes `lit test` and `lit test/<dir>` work (scripts/test.sh runs `lit -q test`): lit takes the
# nearest lit.cfg.py as the suite root, so this one reuses the repository's configuration with
# this directory as the root of both sources and outputs.
import os

lit_config.load_config(
    config, os.path.join(os.path.dirname(os.path.dirname(__file__)), "lit.cfg.py")
)
config.test_source_root = os.path.dirname(__file__)
config.test_exec_root = os.path.dirname(__file__)
