// instructions.def's columns, and spellings filled in and read back from its patterns.
//
// A pattern is text with parameters in braces (instructions.def says which). Filling one in
// replaces each parameter by the instruction's value; reading one matches the text literally up to
// each parameter, then the parameter: digits, a dtype's spelling, a vector width, an optional
// ".trans", or (`{why}`, always last) the rest of the text.
#include "synth/instruction.h"

#include <array>
#include <cctype>
#include <utility>

namespace weft::synth {

namespace {

struct Row {
  std::string_view target, spelling, ptx, operands;
};

constexpr std::array kRows = {
#define WEFT_INSTRUCTION(Name, Target, Spelling, Ptx, Operands) Row{Target, Spelling, Ptx, Operands},
#include "synth/instructions.def"
};

const Row& RowOf(InstructionKind kind) {
  return kRows[static_cast<std::size_t>(kind)];
}

// A vector's PTX type by its bytes: 1 -> b8, ..., 16 -> v4.b32.
constexpr std::array<std::pair<int, std::string_view>, 5> kWidths = {
    {{1, "b8"}, {2, "b16"}, {4, "b32"}, {8, "v2.b32"}, {16, "v4.b32"}}};

std::string Width(int bytes) {
  for (const auto& [b, text] : kWidths)
    if (b == bytes) return std::string(text);
  return "b?" + std::to_string(bytes);
}

std::string Fill(std::string_view pattern, const Instruction& in) {
  std::string out;
  for (std::size_t i = 0; i < pattern.size();) {
    if (pattern[i] != '{') {
      out += pattern[i++];
      continue;
    }
    std::size_t close = pattern.find('}', i);
    std::string_view param = pattern.substr(i + 1, close - i - 1);
    i = close + 1;
    if (param == "count") out += std::to_string(in.count);
    if (param == ".trans" && in.trans) out += ".trans";
    if (param == "bytes") out += std::to_string(in.bytes);
    if (param == "width") out += Width(in.bytes);
    if (param == "n") out += std::to_string(in.n);
    if (param == "type") out += weft::Spelling(in.type);
    if (param == "why") out += in.why;
  }
  return out;
}

// Reads `text` as `pattern` of `kind`; nothing if it does not match.
std::optional<Instruction> Match(InstructionKind kind, std::string_view pattern, std::string_view text) {
  Instruction in = Instruction::Of(kind);
  std::size_t t = 0;
  auto number = [&](int& into) {
    std::size_t start = t;
    while (t < text.size() && std::isdigit(static_cast<unsigned char>(text[t])) && t - start < 6)
      into = 10 * into + (text[t++] - '0');
    return t > start;
  };
  for (std::size_t i = 0; i < pattern.size();) {
    if (pattern[i] != '{') {
      if (t >= text.size() || text[t] != pattern[i]) return std::nullopt;
      ++t, ++i;
      continue;
    }
    std::size_t close = pattern.find('}', i);
    std::string_view param = pattern.substr(i + 1, close - i - 1);
    i = close + 1;
    std::string_view rest = text.substr(t);
    bool ok = true;
    if (param == "count") ok = number(in.count);
    if (param == "bytes") ok = number(in.bytes);
    if (param == "n") ok = number(in.n);
    if (param == ".trans" && rest.starts_with(".trans")) in.trans = true, t += 6;
    if (param == "width") {  // the widest first (v4.b32 before b32)
      ok = false;
      for (auto it = kWidths.rbegin(); it != kWidths.rend() && !ok; ++it)
        if (rest.starts_with(it->second)) in.bytes = it->first, t += it->second.size(), ok = true;
    }
    if (param == "type") {  // the longest dtype spelling the text starts with
      std::string_view best;
#define WEFT_DTYPE(Name, Text, Bits)                                           \
  if (rest.starts_with(Text) && std::string_view(Text).size() > best.size()) { \
    best = Text;                                                               \
    in.type = Dtype::Name;                                                     \
  }
#include "base/dtypes.def"
      ok = !best.empty();
      t += best.size();
    }
    if (param == "why") in.why = std::string(rest), t = text.size();
    if (!ok) return std::nullopt;
  }
  if (t != text.size()) return std::nullopt;
  return in;
}

}  // namespace

std::string_view FirstTarget(InstructionKind kind) {
  return RowOf(kind).target;
}

std::string_view SpellingPattern(InstructionKind kind) {
  return RowOf(kind).spelling;
}

std::string_view PtxPattern(InstructionKind kind) {
  return RowOf(kind).ptx;
}

std::string_view Operands(InstructionKind kind) {
  return RowOf(kind).operands;
}

bool IsCpAsync(InstructionKind kind) {
  switch (kind) {
    case InstructionKind::kCpAsyncCa:
    case InstructionKind::kCpAsyncCg:
      return true;
    case InstructionKind::kUnchosen:
    case InstructionKind::kNone:
    case InstructionKind::kTma2d:
    case InstructionKind::kLdmatrix:
    case InstructionKind::kLdShared:
    case InstructionKind::kStGlobal:
    case InstructionKind::kMmaSync:
    case InstructionKind::kWgmma:
    case InstructionKind::kShflBfly:
    case InstructionKind::kThroughShared:
    case InstructionKind::kCvt:
    case InstructionKind::kMov:
    case InstructionKind::kIota:
    case InstructionKind::kElementwise:
    case InstructionKind::kPipeline:
    case InstructionKind::kLoop:
    case InstructionKind::kScalar:
      return false;
  }
  return false;
}

bool IsTma(InstructionKind kind) {
  switch (kind) {
    case InstructionKind::kTma2d:
      return true;
    case InstructionKind::kUnchosen:
    case InstructionKind::kNone:
    case InstructionKind::kCpAsyncCa:
    case InstructionKind::kCpAsyncCg:
    case InstructionKind::kLdmatrix:
    case InstructionKind::kLdShared:
    case InstructionKind::kStGlobal:
    case InstructionKind::kMmaSync:
    case InstructionKind::kWgmma:
    case InstructionKind::kShflBfly:
    case InstructionKind::kThroughShared:
    case InstructionKind::kCvt:
    case InstructionKind::kMov:
    case InstructionKind::kIota:
    case InstructionKind::kElementwise:
    case InstructionKind::kPipeline:
    case InstructionKind::kLoop:
    case InstructionKind::kScalar:
      return false;
  }
  return false;
}

bool CopiesIntoShared(InstructionKind kind) {
  return IsTma(kind) || IsCpAsync(kind);
}

bool LoadsIntoRegisters(InstructionKind kind) {
  switch (kind) {
    case InstructionKind::kLdmatrix:
    case InstructionKind::kLdShared:
      return true;
    case InstructionKind::kUnchosen:
    case InstructionKind::kNone:
    case InstructionKind::kCpAsyncCa:
    case InstructionKind::kCpAsyncCg:
    case InstructionKind::kTma2d:
    case InstructionKind::kStGlobal:
    case InstructionKind::kMmaSync:
    case InstructionKind::kWgmma:
    case InstructionKind::kShflBfly:
    case InstructionKind::kThroughShared:
    case InstructionKind::kCvt:
    case InstructionKind::kMov:
    case InstructionKind::kIota:
    case InstructionKind::kElementwise:
    case InstructionKind::kPipeline:
    case InstructionKind::kLoop:
    case InstructionKind::kScalar:
      return false;
  }
  return false;
}

std::string Spelling(const Instruction& instruction) {
  return Fill(SpellingPattern(instruction.kind), instruction);
}

std::string Ptx(const Instruction& instruction) {
  return Fill(PtxPattern(instruction.kind), instruction);
}

std::optional<Instruction> ParseInstruction(std::string_view spelling) {
  for (std::size_t k = 0; k < kRows.size(); ++k) {
    auto kind = static_cast<InstructionKind>(k);
    if (auto in = Match(kind, SpellingPattern(kind), spelling)) return in;
  }
  return std::nullopt;
}

}  // namespace weft::synth
