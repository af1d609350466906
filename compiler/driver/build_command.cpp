// `weft build --emit=ptx|llvm`: check -> tile::Lower -> synth::Synthesize -> codegen::EmitKernel.
#include "driver/build_command.h"

#include <ostream>

#include "codegen/device.h"
#include "driver/explain_command.h"

namespace weft::driver {

int RunBuild(const Options& options, std::ostream& out, std::ostream& err) {
  int status =
      ForEachKernel(options, err,
                    [&](const tile::Kernel& kernel, const synth::Plan& plan, const SourceManager& sources,
                        Diagnostics& diagnostics, int) {
                      auto device = codegen::EmitKernel(kernel, plan, sources);
                      if (!device) {
                        for (const Diagnostic& d : device.error()) diagnostics.Add(d);
                        return;
                      }
                      // How to launch it (device.h's contract), as a comment both PTX and LLVM IR take.
                      const char* comment = options.emit == Emit::Llvm ? "; " : "// ";
                      out << comment << "weft: entry " << device->entry << ", " << device->threads << " threads, "
                          << device->shared_bytes << " bytes of dynamic shared memory, sizes (";
                      for (std::size_t i = 0; i < device->sizes.size(); ++i)
                        out << (i ? ", " : "") << kernel.size_names.at(device->sizes[i]);
                      out << ")\n";
                      // Each TMA tensor map the entry takes after its other parameters, in order (sm_90a).
                      for (const codegen::TensorMapSpec& map : device->tensor_maps) {
                        static const char* swizzles[] = {"none", "32B", "64B", "128B"};
                        out << comment << "weft: tensor map of parameter " << map.param << " ("
                            << kernel.params.at(map.param).name << "): box " << map.box_cols << " x " << map.box_rows
                            << " (columns x rows), swizzle " << swizzles[static_cast<int>(map.swizzle)] << "\n";
                      }
                      out << (options.emit == Emit::Llvm ? device->llvm_ir : device->ptx);
                    });
  out.flush();
  return status;
}

}  // namespace weft::driver
