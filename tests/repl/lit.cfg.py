# lit configuration for the REPL's transcript tests (docs/testing.md): each NAME.in is fed to
# `weft repl` on standard input, and what it prints (results and errors) must be NAME.out exactly.
# The `-- RUN:` line at the top of each .in is a weft comment, which the REPL ignores. The tools
# and substitutions are tests/lit's.
import os

lit_config.load_config(config, os.path.join(config.weft_source_dir, "tests", "lit", "lit.cfg.py"))
config.name = "weft-repl"
config.suffixes = [".in"]
config.excludes = ["Inputs"]
config.test_source_root = os.path.dirname(__file__)
config.test_exec_root = os.path.join(config.weft_build_dir, "tests", "repl")
