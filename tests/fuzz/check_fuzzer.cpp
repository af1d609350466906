// Fuzzes the checker: arbitrary bytes are parsed and, when they parse, type checked (with the
// stdlib available to `import`), and every diagnostic is rendered. Beyond "no crash, leak or
// hang" (Z3 is bounded by its resource limit, not by time), every definition that checked must
// print a signature, and the elaborated core IR must verify and print; every kernel that checked
// lowers to the tile IR or is refused with diagnostics, and its tile IR verifies and prints.
#include <cstddef>
#include <cstdint>
#include <string>

#include "check/check.h"
#include "diagnostics/render.h"
#include "syntax/parser.h"
#include "tile/lower.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  if (size > 16 * 1024) return 0;
  weft::SourceManager sources;
  weft::Diagnostics diagnostics;
  weft::FileId file = sources.Add("fuzz.weft", std::string(reinterpret_cast<const char*>(data), size));
  weft::syntax::Ast ast = weft::syntax::Parse(sources, file, diagnostics);
  if (!diagnostics.has_errors()) {
    weft::check::CheckOptions options;
    options.stdlib_dir = WEFT_STDLIB_DIR;
    weft::check::CheckResult result = weft::check::Check(sources, ast, diagnostics, options);
    for (const weft::check::CheckedDef& def : result.defs) {
      if (def.ok && weft::check::Signature(result, def).find(" : ") == std::string::npos) __builtin_trap();
    }
    // The elaborated core IR verifies (the fuzz build has NDEBUG, so Check does not do it) and prints.
    if (!weft::core::Verify(result.module, result.vars).empty()) __builtin_trap();
    if (!result.module.defs().empty() && weft::core::Print(result.module, result.vars).empty()) __builtin_trap();
    for (const weft::core::Def& def : result.module.defs()) {
      if (!def.ok || !weft::tile::IsKernel(def)) continue;
      auto kernel = weft::tile::Lower(result.module, result.vars, def);
      if (!kernel) {
        if (kernel.error().empty()) __builtin_trap();  // a refusal says why
        for (const weft::Diagnostic& d : kernel.error()) diagnostics.Add(d);
        continue;
      }
      if (!weft::tile::Verify(*kernel).empty() || weft::tile::Print(*kernel).empty()) __builtin_trap();
    }
  }
  for (const weft::Diagnostic& diagnostic : diagnostics.all()) {
    if (weft::Render(sources, diagnostic, /*color=*/false).empty()) __builtin_trap();
  }
  return 0;
}
