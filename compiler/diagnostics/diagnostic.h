// Diagnostics are values: a kind (declared in diagnostic_kinds.def), a primary span, a message and
// notes that point at other spans. Phases append them to a Diagnostics list and never print;
// the driver renders them (render.h). Internal compiler errors are not diagnostics: they are
// InternalError exceptions (below) that the driver reports as "internal compiler error".
#pragma once

#include <cassert>
#include <cstdint>
#include <stdexcept>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include <llvm/Support/FormatVariadic.h>

#include "base/source.h"

namespace weft {

enum class Severity : std::uint8_t { Error, Warning, Note };

enum class DiagnosticKind : std::uint16_t {
#define WEFT_DIAGNOSTIC(Name, Id, Severity, Arity, Format) Name,
#include "diagnostics/diagnostic_kinds.def"
};

struct DiagnosticInfo {
  std::string_view name;
  std::string_view id;  // "E0100"; empty for notes
  Severity severity;
  int arity;
  std::string_view format;
};

const DiagnosticInfo& Info(DiagnosticKind kind);
// Every kind, in declaration order (for tests and the error index).
const std::vector<DiagnosticInfo>& AllDiagnosticInfos();

struct Note {
  Span span;
  std::string message;
};

struct Diagnostic {
  DiagnosticKind kind;
  Span span;
  std::string message;
  std::vector<Note> notes;
};

// Formats a kind's message with its arguments. The arity is checked in debug builds.
template <typename... Args>
std::string FormatMessage(DiagnosticKind kind, Args&&... args) {
  const DiagnosticInfo& info = Info(kind);
  assert(info.arity == static_cast<int>(sizeof...(Args)) && "wrong number of diagnostic arguments");
  if constexpr (sizeof...(Args) == 0) {
    return std::string(info.format);
  } else {
    return llvm::formatv(info.format.data(), std::forward<Args>(args)...).str();
  }
}

template <typename... Args>
Diagnostic MakeDiagnostic(DiagnosticKind kind, Span span, Args&&... args) {
  return {kind, span, FormatMessage(kind, std::forward<Args>(args)...), {}};
}

template <typename... Args>
Note MakeNote(DiagnosticKind kind, Span span, Args&&... args) {
  assert(Info(kind).severity == Severity::Note);
  return {span, FormatMessage(kind, std::forward<Args>(args)...)};
}

class Diagnostics {
 public:
  template <typename... Args>
  Diagnostic& Emit(DiagnosticKind kind, Span span, Args&&... args) {
    return Add(MakeDiagnostic(kind, span, std::forward<Args>(args)...));
  }
  Diagnostic& Add(Diagnostic diagnostic);

  const std::vector<Diagnostic>& all() const { return list_; }
  // The most recent diagnostic, to add notes to. @pre !all().empty()
  Diagnostic& last() { return list_.back(); }
  // The diagnostic emitted `index`-th, to add notes to. @pre index < all().size()
  Diagnostic& at(std::size_t index) { return list_[index]; }
  int error_count() const { return errors_; }
  bool has_errors() const { return errors_ > 0; }

 private:
  std::vector<Diagnostic> list_;
  int errors_ = 0;
};

// A bug in weft, not in the user's program: reported as "internal compiler error" with its origin.
class InternalError : public std::logic_error {
 public:
  InternalError(const std::string& what, const char* file, int line);
};

#define WEFT_INTERNAL_ERROR(message) throw ::weft::InternalError((message), __FILE__, __LINE__)
#define WEFT_CHECK(condition)                                           \
  do {                                                                  \
    if (!(condition)) WEFT_INTERNAL_ERROR("check failed: " #condition); \
  } while (false)

// Quotes a piece of source for a message: `text`.
std::string Quoted(std::string_view text);

}  // namespace weft
