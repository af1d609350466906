# lit configuration for weft's file tests. A test is one .weft file with `-- RUN:` lines (commands,
# with %weft for the compiler) and `-- CHECK:` lines for FileCheck. See docs/testing.md.
import os
import shutil
import subprocess
import sys

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
# The runtime's fake CUDA driver (tests/unit/runtime/fake_cuda.cpp), for executables' launches
# without a GPU: `env WEFT_CUDA_LIBRARY=%fake_cuda prog` (tests/lit/build).
config.substitutions.append(("%fake_cuda", config.fake_cuda))
# `not` inverts an exit status and `count N` checks a line count; both from LLVM's tools. The
# patterns are regular expressions: only the whole words at the start of a command are replaced.
config.substitutions.append((r"(^|\| )not ", r"\1" + os.path.join(config.llvm_tools_dir, "not") + " "))
config.substitutions.append((r"\| count ", "| " + os.path.join(config.llvm_tools_dir, "count") + " "))


# %python: a Python 3 with NumPy, for the tests whose expected results NumPy computes
# (tests/lit/builtins). Debian's python3-numpy (`make deps`) is /usr/bin/python3's; a `python3` on
# PATH may be another one without numpy. With none, those tests fail and say what to install.
def find_numpy_python():
    candidates = ["/usr/bin/python3", shutil.which("python3"), sys.executable]
    for python in candidates:
        if not python or not os.path.exists(python):
            continue
        try:
            subprocess.run([python, "-c", "import numpy"], check=True, capture_output=True, timeout=60)
            return python
        except (OSError, subprocess.SubprocessError):
            continue
    return None


numpy_python = find_numpy_python()
if numpy_python:
    config.substitutions.append(("%python", numpy_python))
else:
    message = "no python3 with numpy found (tried /usr/bin/python3, python3 on PATH, the python running lit): run make deps"
    config.substitutions.append(("%python", '"%s" -c "import sys; sys.exit(\'%s\')"' % (sys.executable, message)))
# A builtins test draws its random inputs from its name; WEFT_ORACLE_SEED=N draws others.
if "WEFT_ORACLE_SEED" in os.environ:
    config.environment["WEFT_ORACLE_SEED"] = os.environ["WEFT_ORACLE_SEED"]

# Sanitizer builds: fail on leaks and UB, and never colour the output.
config.environment["ASAN_OPTIONS"] = "detect_leaks=1:abort_on_error=0"
config.environment["UBSAN_OPTIONS"] = "print_stacktrace=1:halt_on_error=1"
config.environment["NO_COLOR"] = "1"
if config.ptxas:
    config.available_features.add("ptxas")
    config.substitutions.append(("%ptxas", config.ptxas))
