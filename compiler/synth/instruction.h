// The instruction layout synthesis chose for a tile op (plan.h's OpChoice::instruction): a
// kind from instructions.def and the parameters its spelling carries (ldmatrix's count and .trans,
// a vector's bytes, wgmma's N, the mma's element type, why no instruction is needed).
//
// Readers switch over InstructionKind without a default case, so that a new row of
// instructions.def is a warning (-Wswitch) in each of them until it is handled. Nothing tests the
// spelling: it is what `weft explain` and error messages print, and for an instruction with an atom
// the atom's name (layout::FindAtom, which sim and codegen use for the atom's fragment layouts).
// ParseInstruction, its inverse, is for tests.
//
// Internal to synth and its readers (sim, schedule, codegen); a library of its own (weft_instruction)
// so that they link it without linking synth.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "base/dtype.h"

namespace weft::synth {

enum class InstructionKind : std::uint8_t {
#define WEFT_INSTRUCTION(Name, Target, Spelling, Ptx, Operands) k##Name,
#include "synth/instructions.def"
};

struct Instruction {
  InstructionKind kind = InstructionKind::kUnchosen;
  int count = 0;            // ldmatrix: 8x8 matrices (1, 2, 4); shfl.bfly: butterfly steps
  bool trans = false;       // ldmatrix .trans
  int bytes = 0;            // vectors (cp.async, ld.shared, st.global): bytes a thread moves
  int n = 0;                // wgmma: the instruction's N
  Dtype type = Dtype::F16;  // mma.sync, wgmma: the element type of A and B
  std::string why;          // none: why the op needs no instruction

  static Instruction Of(InstructionKind kind) {
    Instruction in;
    in.kind = kind;
    return in;
  }
  static Instruction None(std::string why) {
    Instruction in = Of(InstructionKind::kNone);
    in.why = std::move(why);
    return in;
  }
  static Instruction Ldmatrix(int count, bool trans) {
    Instruction in = Of(InstructionKind::kLdmatrix);
    in.count = count, in.trans = trans;
    return in;
  }
  // cp.async (.ca or .cg), ld.shared, st.global
  static Instruction Vector(InstructionKind kind, int bytes) {
    Instruction in = Of(kind);
    in.bytes = bytes;
    return in;
  }
  static Instruction MmaSync(Dtype type) {
    Instruction in = Of(InstructionKind::kMmaSync);
    in.type = type;
    return in;
  }
  static Instruction Wgmma(int n, Dtype type) {
    Instruction in = Of(InstructionKind::kWgmma);
    in.n = n, in.type = type;
    return in;
  }
  static Instruction ShflBfly(int steps) {
    Instruction in = Of(InstructionKind::kShflBfly);
    in.count = steps;
    return in;
  }

  friend bool operator==(const Instruction&, const Instruction&) = default;
};

// The table's columns for a kind (instructions.def).
std::string_view FirstTarget(InstructionKind kind);      // "sm_80" or "sm_90a"
std::string_view SpellingPattern(InstructionKind kind);  // "ldmatrix.x{count}{.trans}"
std::string_view PtxPattern(InstructionKind kind);       // "ldmatrix.sync.aligned.m8n8.x{count}{.trans}.shared.b16"
std::string_view Operands(InstructionKind kind);

// The spelling with the parameters filled in: "ldmatrix.x4.trans", "wgmma.m64n128k16.bf16",
// "none: a view". For an instruction with an atom, the atom's name (layout::FindAtom).
std::string Spelling(const Instruction& instruction);
// The PTX with the parameters filled in ("" where the table has none).
std::string Ptx(const Instruction& instruction);
// The instruction a spelling names, or nothing: Spelling's inverse.
std::optional<Instruction> ParseInstruction(std::string_view spelling);

// Families, for readers that ask by family (exhaustive switches: a new kind must say which it is in).
bool IsCpAsync(InstructionKind kind);  // cp.async .ca or .cg
bool IsTma(InstructionKind kind);      // a TMA copy (tma.2d)
// What a `to_shared` (a copy into shared memory) can be made of: IsTma or IsCpAsync.
bool CopiesIntoShared(InstructionKind kind);
// What a `regs` of a shared tile can be made of: ldmatrix or ld.shared.
bool LoadsIntoRegisters(InstructionKind kind);

}  // namespace weft::synth
