// instructions.def as a table: every kind's spelling reads back as the same instruction, the
// spellings are exactly the strings `weft explain` printed before the choice was typed (the golden
// tests read them), and every instruction with an atom (layout/atoms.h) agrees with the atom on its
// PTX and its target.
#include <catch2/catch.hpp>

#include <vector>

#include "layout/atoms.h"
#include "synth/instruction.h"

namespace weft::synth {
namespace {

// Every instruction synthesis can choose, one or more per kind, with the parameters it chooses.
// A kind added to instructions.def without a case here is a warning (-Wswitch) and a failure.
std::vector<Instruction> Samples(InstructionKind kind) {
  using K = InstructionKind;
  std::vector<Instruction> out;
  switch (kind) {
    case K::kUnchosen:
    case K::kTma2d:
    case K::kThroughShared:
    case K::kCvt:
    case K::kMov:
    case K::kIota:
    case K::kElementwise:
    case K::kPipeline:
    case K::kLoop:
    case K::kScalar:
      out.push_back(Instruction::Of(kind));
      break;
    case K::kNone:
      for (const char* why : {"wgmma reads it from shared memory", "the same registers", "the layouts agree", "a view",
                              "a view of `sb` with the axes swapped", ""})
        out.push_back(Instruction::None(why));
      break;
    case K::kCpAsyncCa:
      for (int bytes : {4, 8, 16}) out.push_back(Instruction::Vector(kind, bytes));
      break;
    case K::kCpAsyncCg:
      out.push_back(Instruction::Vector(kind, 16));
      break;
    case K::kLdmatrix:
      for (int count : {1, 2, 4})
        for (bool trans : {false, true}) out.push_back(Instruction::Ldmatrix(count, trans));
      break;
    case K::kLdShared:
    case K::kStGlobal:
      for (int bytes : {1, 2, 4, 8, 16}) out.push_back(Instruction::Vector(kind, bytes));
      break;
    case K::kMmaSync:
      for (Dtype type : {Dtype::F16, Dtype::BF16}) out.push_back(Instruction::MmaSync(type));
      break;
    case K::kWgmma:
      for (Dtype type : {Dtype::F16, Dtype::BF16})
        for (int n = 8; n <= 256; n += 8) out.push_back(Instruction::Wgmma(n, type));
      break;
    case K::kShflBfly:
      for (int steps = 0; steps <= 5; ++steps) out.push_back(Instruction::ShflBfly(steps));
      break;
  }
  return out;
}

std::vector<InstructionKind> Kinds() {
  return {
#define WEFT_INSTRUCTION(Name, Target, Spelling, Ptx, Operands) InstructionKind::k##Name,
#include "synth/instructions.def"
  };
}

TEST_CASE("every instruction's spelling reads back as the same instruction", "[synth][instruction]") {
  for (InstructionKind kind : Kinds()) {
    std::vector<Instruction> samples = Samples(kind);
    INFO("kind " << static_cast<int>(kind) << ", pattern `" << SpellingPattern(kind) << "`");
    CHECK_FALSE(samples.empty());
    CHECK((FirstTarget(kind) == "sm_80" || FirstTarget(kind) == "sm_90a"));
    for (const Instruction& in : samples) {
      std::string spelling = Spelling(in);
      INFO("spelling `" << spelling << "`");
      CHECK(spelling.find('{') == std::string::npos);
      std::optional<Instruction> back = ParseInstruction(spelling);
      REQUIRE(back.has_value());
      CHECK(*back == in);
    }
  }
  CHECK_FALSE(ParseInstruction("frobnicate").has_value());
  CHECK_FALSE(ParseInstruction("ldmatrix.x").has_value());
  CHECK_FALSE(ParseInstruction("ld.shared.v8.b32").has_value());
  CHECK_FALSE(ParseInstruction("mma.m16n8k16.q7").has_value());
}

TEST_CASE("the spellings are the strings explain prints", "[synth][instruction]") {
  using K = InstructionKind;
  CHECK(Spelling(Instruction::Of(K::kUnchosen)) == "");
  CHECK(Spelling(Instruction::None("wgmma reads it from shared memory")) == "none: wgmma reads it from shared memory");
  CHECK(Spelling(Instruction::Vector(K::kCpAsyncCg, 16)) == "cp.async.cg.16");
  CHECK(Spelling(Instruction::Vector(K::kCpAsyncCa, 8)) == "cp.async.ca.8");
  CHECK(Spelling(Instruction::Of(K::kTma2d)) == "tma.2d");
  CHECK(Spelling(Instruction::Ldmatrix(4, false)) == "ldmatrix.x4");
  CHECK(Spelling(Instruction::Ldmatrix(4, true)) == "ldmatrix.x4.trans");
  CHECK(Spelling(Instruction::Ldmatrix(2, false)) == "ldmatrix.x2");
  CHECK(Spelling(Instruction::Vector(K::kLdShared, 1)) == "ld.shared.b8");
  CHECK(Spelling(Instruction::Vector(K::kLdShared, 2)) == "ld.shared.b16");
  CHECK(Spelling(Instruction::Vector(K::kLdShared, 16)) == "ld.shared.v4.b32");
  CHECK(Spelling(Instruction::Vector(K::kStGlobal, 4)) == "st.global.b32");
  CHECK(Spelling(Instruction::Vector(K::kStGlobal, 8)) == "st.global.v2.b32");
  CHECK(Spelling(Instruction::MmaSync(Dtype::BF16)) == "mma.m16n8k16.bf16");
  CHECK(Spelling(Instruction::MmaSync(Dtype::F16)) == "mma.m16n8k16.f16");
  CHECK(Spelling(Instruction::Wgmma(128, Dtype::BF16)) == "wgmma.m64n128k16.bf16");
  CHECK(Spelling(Instruction::Wgmma(64, Dtype::F16)) == "wgmma.m64n64k16.f16");
  CHECK(Spelling(Instruction::ShflBfly(2)) == "shfl.bfly x2");
  CHECK(Spelling(Instruction::Of(K::kThroughShared)) == "st.shared + bar.sync + ld.shared");
  CHECK(Spelling(Instruction::Of(K::kCvt)) == "cvt");
  CHECK(Spelling(Instruction::Of(K::kMov)) == "mov");
  CHECK(Spelling(Instruction::Of(K::kIota)) == "mov (iota)");
  CHECK(Spelling(Instruction::Of(K::kElementwise)) == "elementwise");
  CHECK(Spelling(Instruction::Of(K::kPipeline)) == "pipeline");
  CHECK(Spelling(Instruction::Of(K::kLoop)) == "loop");
  CHECK(Spelling(Instruction::Of(K::kScalar)) == "scalar");
}

TEST_CASE("an instruction named like an atom has the atom's PTX and target", "[synth][instruction]") {
  int atoms = 0;
  for (InstructionKind kind : Kinds()) {
    for (const Instruction& in : Samples(kind)) {
      auto atom = layout::FindAtom(Spelling(in));
      if (!atom.ok()) continue;
      INFO("atom `" << atom->name << "`");
      ++atoms;
      CHECK(Ptx(in) == atom->instruction);
      CHECK(FirstTarget(kind) == atom->target);
    }
  }
  // mma.sync 2, wgmma 64, ldmatrix 6, cp.async 4, ld.shared and st.global 3 each
  CHECK(atoms == 2 + 64 + 6 + 4 + 3 + 3);
}

}  // namespace
}  // namespace weft::synth
