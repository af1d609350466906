#include "diagnostics/diagnostic.h"

namespace weft {

const std::vector<DiagnosticInfo>& AllDiagnosticInfos() {
  static const std::vector<DiagnosticInfo> infos = {
#define WEFT_DIAGNOSTIC(Name, Id, Sev, Arity, Format) {#Name, Id, Severity::Sev, Arity, Format},
#include "diagnostics/diagnostic_kinds.def"
  };
  return infos;
}

const DiagnosticInfo& Info(DiagnosticKind kind) {
  return AllDiagnosticInfos()[static_cast<std::size_t>(kind)];
}

Diagnostic& Diagnostics::Add(Diagnostic diagnostic) {
  if (Info(diagnostic.kind).severity == Severity::Error) ++errors_;
  list_.push_back(std::move(diagnostic));
  return list_.back();
}

InternalError::InternalError(const std::string& what, const char* file, int line)
    : std::logic_error(what + " (at " + file + ":" + std::to_string(line) + ")") {}

std::string Quoted(std::string_view text) {
  return "`" + std::string(text) + "`";
}

}  // namespace weft
