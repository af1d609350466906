// A harness that fails on purpose, for tests/fuzz/run-fuzzer-test: it proves that tools/run-fuzzer
// exits non-zero for each kind of finding. An input that is one of these words and a newline says
// what to do:
//   crash  a trap (what the real harnesses do when a check fails)
//   abort  an AddressSanitizer report (a heap buffer overflow)
//   leak   memory never freed (LeakSanitizer at exit)
//   hang   an endless loop (libFuzzer's -timeout)
//   oom    a large allocation that is touched (libFuzzer's -rss_limit_mb)
// Anything else returns normally, so a seed corpus without those words runs clean.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <string_view>

namespace {

volatile int sink = 0;

// FNV-1a: the input is compared by its hash, which libFuzzer's comparison tracing cannot invert, so
// fuzzing a clean seed never mutates it into one of the words below.
constexpr std::uint64_t Hash(std::string_view bytes) {
  std::uint64_t h = 14695981039346656037ull;
  for (char c : bytes) h = (h ^ static_cast<unsigned char>(c)) * 1099511628211ull;
  return h;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  std::string_view input(reinterpret_cast<const char*>(data), size);
  const std::uint64_t hash = Hash(input);
  auto is = [&](std::string_view word) { return hash == Hash(word); };
  if (is("crash\n")) __builtin_trap();
  if (is("abort\n")) {
    char* bytes = static_cast<char*>(std::malloc(8));
    sink = bytes[8 + static_cast<int>(size % 2)];  // out of bounds
    std::free(bytes);
  }
  if (is("leak\n")) {
    void* lost = std::malloc(4096);
    std::memset(lost, 1, 4096);
    sink = static_cast<char*>(lost)[7];
  }
  if (is("hang\n")) {
    for (;;) sink = sink + 1;
  }
  if (is("oom\n")) {
    std::size_t bytes = std::size_t{1} << 30;  // 1 GiB, over the test's 256 MiB limit
    char* block = static_cast<char*>(std::malloc(bytes));
    if (block) {
      for (std::size_t i = 0; i < bytes; i += 4096) block[i] = 1;
      sink = block[bytes / 2];
      std::free(block);
    }
  }
  return 0;
}
