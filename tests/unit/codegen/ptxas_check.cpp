// codegen_ptxas: every kernel of kernels.h's files on sm_80 and sm_90a, and `random`'s kernel of every
// dtype that has one (codegen/random.h), generated and assembled by ptxas for its target
// (`ptxas -arch=sm_80|sm_90a -v`), printing each kernel's registers and spills.
// Exit 77 (CTest's SKIP_RETURN_CODE) when there is no ptxas. With WEFT_DUMP_PTX=DIR, each PTX is
// also written to DIR/<kernel>_<target>.ptx, its first line the launch (threads, dynamic shared
// memory, sizes, tensor maps), for running on a GPU elsewhere.
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <string>

#include "codegen/random.h"
#include "kernels.h"

using namespace weft;
using namespace weft::codegen;

namespace {

std::string Launch(const DeviceKernel& d) {
  std::string s = "// weft: entry " + d.entry + ", " + std::to_string(d.threads) + " threads, " +
                  std::to_string(d.shared_bytes) + " bytes of dynamic shared memory, " +
                  std::to_string(d.sizes.size()) + " sizes, tensor maps (";
  for (std::size_t i = 0; i < d.tensor_maps.size(); ++i) {
    const TensorMapSpec& m = d.tensor_maps[i];
    s += (i ? "; " : "") + std::string("param ") + std::to_string(m.param) + " box " + std::to_string(m.box_cols) +
         "x" + std::to_string(m.box_rows) + " swizzle " + std::string(layout::ToString(m.swizzle));
  }
  return s + ")\n";
}

}  // namespace

int main() {
  std::string ptxas = testing::FindPtxas();
  const char* dump = std::getenv("WEFT_DUMP_PTX");
  if (dump) std::filesystem::create_directories(dump);
  int failures = 0, assembled = 0;
  for (synth::Target target : {synth::Target::Sm80, synth::Target::Sm90a}) {
    std::string arch(synth::Spelling(target));
    for (const std::string& file : testing::KernelFiles()) {
      for (const testing::Emitted& e : testing::EmitFile(file, target)) {
        if (!e.synthesized) continue;
        std::string name = e.kernel + "_" + arch;
        if (!e.device) {
          std::cout << "FAIL " << file << ": " << name << ": not generated\n" << e.diagnostics;
          ++failures;
          continue;
        }
        if (dump) std::ofstream(std::string(dump) + "/" + name + ".ptx") << Launch(*e.device) << e.device->ptx;
        if (ptxas.empty()) continue;
        std::string report;
        bool ok = testing::Assemble(ptxas, e.device->ptx, arch, report);
        std::cout << (ok ? "ok   " : "FAIL ") << file << ": " << name << "\n" << report;
        ok ? ++assembled : ++failures;
      }
    }
  }
  for (synth::Target target : {synth::Target::Sm80, synth::Target::Sm90a}) {
    std::string arch(synth::Spelling(target));
    for (Dtype d : RandomKernelDtypes()) {
      std::string name = RandomEntry(d) + "_" + arch;
      auto k = EmitRandomKernel(d, target);
      if (!k) {
        std::cout << "FAIL random: " << name << ": not generated: " << k.error() << "\n";
        ++failures;
        continue;
      }
      if (dump) std::ofstream(std::string(dump) + "/" + name + ".ptx") << k->ptx;
      if (ptxas.empty()) continue;
      std::string report;
      bool ok = testing::Assemble(ptxas, k->ptx, arch, report);
      std::cout << (ok ? "ok   " : "FAIL ") << "random: " << name << "\n" << report;
      ok ? ++assembled : ++failures;
    }
  }
  if (ptxas.empty()) {
    std::cout << "SKIPPED: no ptxas (CUDA toolkit) on PATH or in /usr/local/cuda/bin\n";
    return failures ? 1 : 77;
  }
  std::cout << assembled << " kernels assembled, " << failures << " failed\n";
  return failures ? 1 : 0;
}
