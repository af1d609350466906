# Warnings and sanitizers shared by every weft target, through the interface target weft_options.
add_library(weft_options INTERFACE)
target_compile_options(weft_options INTERFACE -Wall -Wextra -Wno-unused-parameter)
target_include_directories(weft_options INTERFACE ${PROJECT_SOURCE_DIR}/compiler ${PROJECT_BINARY_DIR}/compiler)
target_compile_definitions(weft_options INTERFACE WEFT_VERSION="${PROJECT_VERSION}")

if(WEFT_SANITIZE)
  set(weft_sanitizers -fsanitize=address,undefined -fno-omit-frame-pointer -fno-sanitize-recover=undefined)
  target_compile_options(weft_options INTERFACE ${weft_sanitizers})
  target_link_options(weft_options INTERFACE ${weft_sanitizers})
endif()

if(WEFT_FUZZ)
  # Instrument every library for coverage; only the harness links libFuzzer's main.
  target_compile_options(weft_options INTERFACE -fsanitize=fuzzer-no-link,address,undefined -fno-omit-frame-pointer)
  target_link_options(weft_options INTERFACE -fsanitize=address,undefined)
endif()
