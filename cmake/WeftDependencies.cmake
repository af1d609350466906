# Every external dependency of weft (see docs/architecture.md, "Dependencies"), found once here.
# All come from Debian 12 packages (`make deps`), except the CUDA toolkit, which is optional.

# LLVM 19: NVPTX and X86 code generation, support library (formatv, threads with large stacks).
# `find_package(LLVM 19 ...)` does not match 19.1.x's config version file: ask for 19.1.
find_package(LLVM 19.1 REQUIRED CONFIG HINTS /usr/lib/llvm-19/lib/cmake/llvm)
message(STATUS "weft: LLVM ${LLVM_PACKAGE_VERSION} from ${LLVM_DIR}")
add_library(weft_llvm INTERFACE)
target_include_directories(weft_llvm SYSTEM INTERFACE ${LLVM_INCLUDE_DIRS})
separate_arguments(weft_llvm_defs NATIVE_COMMAND "${LLVM_DEFINITIONS}")
target_compile_definitions(weft_llvm INTERFACE ${weft_llvm_defs})
target_link_libraries(weft_llvm INTERFACE LLVM)  # the shared libLLVM-19: fast links
set(WEFT_LLVM_TOOLS_DIR "${LLVM_TOOLS_BINARY_DIR}")

# Z3: the one SMT solver, used only through compiler/solver.
find_package(PkgConfig REQUIRED)
pkg_check_modules(Z3 REQUIRED IMPORTED_TARGET z3>=4.8)

# Boost.Spirit X3 (header-only); confined to compiler/syntax.
find_package(Boost 1.74 REQUIRED)

# Catch2 v2 for unit tests.
find_package(Catch2 2.13 REQUIRED)

# libedit for the REPL's line editing (BSD licence).
pkg_check_modules(LIBEDIT REQUIRED IMPORTED_TARGET libedit)

# nlohmann-json for the language server's JSON-RPC (header-only); confined to compiler/lsp.
find_package(nlohmann_json 3.10 REQUIRED)

# lit and FileCheck, from llvm-19-tools.
find_program(WEFT_LIT NAMES lit.py PATHS /usr/lib/llvm-19/build/utils/lit NO_DEFAULT_PATH)
find_program(WEFT_FILECHECK NAMES FileCheck PATHS ${LLVM_TOOLS_BINARY_DIR} /usr/lib/llvm-19/bin NO_DEFAULT_PATH)
find_package(Python3 REQUIRED COMPONENTS Interpreter)

# The CUDA toolkit (optional): cuda.h for the driver API's types, ptxas to assemble PTX without a GPU.
set(WEFT_CUDA_HOME "$ENV{CUDA_HOME}")
if(NOT WEFT_CUDA_HOME)
  set(WEFT_CUDA_HOME /usr/local/cuda)
endif()
find_path(WEFT_CUDA_INCLUDE_DIR cuda.h PATHS ${WEFT_CUDA_HOME}/include NO_DEFAULT_PATH)
find_program(WEFT_PTXAS ptxas PATHS ${WEFT_CUDA_HOME}/bin NO_DEFAULT_PATH)
add_library(weft_cuda_headers INTERFACE)
if(WEFT_CUDA_INCLUDE_DIR)
  message(STATUS "weft: CUDA headers in ${WEFT_CUDA_INCLUDE_DIR}, ptxas ${WEFT_PTXAS}")
  target_include_directories(weft_cuda_headers SYSTEM INTERFACE ${WEFT_CUDA_INCLUDE_DIR})
  target_compile_definitions(weft_cuda_headers INTERFACE WEFT_HAVE_CUDA_HEADERS=1)
else()
  message(WARNING "weft: no CUDA toolkit at ${WEFT_CUDA_HOME}: tests that need ptxas will be SKIPPED")
  set(WEFT_PTXAS "")
endif()
