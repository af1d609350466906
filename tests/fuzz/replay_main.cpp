// Runs a libFuzzer harness once on each file named on the command line, without libFuzzer: the
// `dev` build (gcc, the sanitizers, no libFuzzer) replays a harness's corpus as a ctest, so every
// seed and every finding added to it is checked on each CI run, and the harness keeps compiling.
// Prints one line per input; a failed invariant traps, as under libFuzzer.
#include <cstddef>
#include <cstdint>
#include <fstream>
#include <iostream>
#include <iterator>
#include <string>

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size);

int main(int argc, char** argv) {
  if (argc < 2) {
    std::cerr << "usage: " << argv[0] << " INPUT...\n";
    return 2;
  }
  for (int i = 1; i < argc; ++i) {
    std::ifstream in(argv[i], std::ios::binary);
    if (!in) {
      std::cerr << argv[i] << ": cannot read\n";
      return 2;
    }
    std::string bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    std::cout << "replay " << argv[i] << " (" << bytes.size() << " bytes)" << std::endl;
    LLVMFuzzerTestOneInput(reinterpret_cast<const std::uint8_t*>(bytes.data()), bytes.size());
  }
  std::cout << "replayed " << argc - 1 << " inputs" << std::endl;
  return 0;
}
