# lit configuration for weft's file tests. A test is one .weft file with `-- RUN:` lines (commands,
# with %weft for the compiler) and `-- CHECK:` lines for FileCheck. See docs/testing.md.
import os

import lit.formats

config.name = "weft"
config.test_format = lit.formats.ShTest(execute_external=False)
config.suffixes = [".weft"]
config.excludes = ["Inputs"]
config.test_source_root = os.path.dirname(__file__)
config.test_exec_root = os.path.join(config.weft_build_dir, "tests", "lit")

config.substitutions.append(("%weft", config.weft_binary))
config.substitutions.append(("FileCheck", config.filecheck + " --dump-input=fail"))
config.substitutions.append(("%stdlib", os.path.join(config.weft_source_dir, "stdlib")))
config.substitutions.append(("%examples", os.path.join(config.weft_source_dir, "examples")))
# `not` inverts an exit status and `count N` checks a line count; both from LLVM's tools. The
# patterns are regular expressions: only the whole words at the start of a command are replaced.
config.substitutions.append((r"(^|\| )not ", r"\1" + os.path.join(config.llvm_tools_dir, "not") + " "))
config.substitutions.append((r"\| count ", "| " + os.path.join(config.llvm_tools_dir, "count") + " "))

# Sanitizer builds: fail on leaks and UB, and never colour the output.
config.environment["ASAN_OPTIONS"] = "detect_leaks=1:abort_on_error=0"
config.environment["UBSAN_OPTIONS"] = "print_stacktrace=1:halt_on_error=1"
config.environment["NO_COLOR"] = "1"
if config.ptxas:
    config.available_features.add("ptxas")
