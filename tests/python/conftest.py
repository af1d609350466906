import os
import sys

# The package from this checkout (python/), unless one is installed.
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "python"))

# The runtime's fake driver for the libraries' GPU path (tests/unit/runtime/fake_cuda.cpp).
if os.environ.get("WEFT_FAKE_CUDA"):
    os.environ["WEFT_CUDA_LIBRARY"] = os.environ["WEFT_FAKE_CUDA"]
