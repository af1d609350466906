// `random`'s device arithmetic (codegen/random.h) against the runtime's, bit for bit: the element
// function the kernels inline, JIT-compiled for this machine (LLVM ORC, a baseline x86-64 CPU so
// that every machine runs the same code), is called for thousands of indices and several seeds,
// negative ones and indices past 2^32 included, and compared with FillRandom and RandomElement
// (runtime/src/random.cpp). The kernels' PTX is checked here for its shape, and assembled by
// ptxas in codegen_ptxas.
#include <llvm/ExecutionEngine/Orc/ExecutionUtils.h>
#include <llvm/ExecutionEngine/Orc/JITTargetMachineBuilder.h>
#include <llvm/ExecutionEngine/Orc/LLJIT.h>
#include <llvm/ExecutionEngine/Orc/ThreadSafeModule.h>
#include <llvm/IR/IRBuilder.h>
#include <llvm/IR/LLVMContext.h>
#include <llvm/IR/Module.h>
#include <llvm/Support/TargetSelect.h>
#include <llvm/TargetParser/Host.h>

#include <catch2/catch.hpp>
#include <cstdint>
#include <filesystem>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "codegen/random.h"
#include "weft/numerics.h"
#include "weft/random.h"
#include "weft/runtime.h"
#include "weft/tensor.h"

using namespace weft;

namespace {

using ElementFn = std::uint64_t (*)(std::int64_t seed, std::uint64_t index);

// f16 and bf16 rounding on a baseline x86-64 CPU are calls of compiler-rt's __truncsfhf2 and
// __truncsfbf2 (libgcc 12 has no bf16 one): LLVM's own, from its builtins archive.
constexpr const char* kBuiltins = "/usr/lib/llvm-19/lib/clang/19/lib/linux/libclang_rt.builtins-x86_64.a";

// Every covered dtype's element function, zero-extended to an i64, JIT-compiled once.
class Jit {
 public:
  Jit() {
    llvm::InitializeNativeTarget();
    llvm::InitializeNativeTargetAsmPrinter();
    llvm::orc::JITTargetMachineBuilder machine{llvm::Triple(llvm::sys::getProcessTriple())};
    machine.setCPU("x86-64");
    jit_ = Take(llvm::orc::LLJITBuilder().setJITTargetMachineBuilder(std::move(machine)).create());
    llvm::orc::JITDylib& main = jit_->getMainJITDylib();
    if (std::filesystem::exists(kBuiltins))
      main.addGenerator(Take(llvm::orc::StaticLibraryDefinitionGenerator::Load(jit_->getObjLinkingLayer(), kBuiltins)));
    main.addGenerator(
        Take(llvm::orc::DynamicLibrarySearchGenerator::GetForCurrentProcess(jit_->getDataLayout().getGlobalPrefix())));
    auto ctx = std::make_unique<llvm::LLVMContext>();
    auto module = std::make_unique<llvm::Module>("random_test", *ctx);
    module->setDataLayout(jit_->getDataLayout());
    module->setTargetTriple(jit_->getTargetTriple().str());
    llvm::IRBuilder<> b(*ctx);
    for (Dtype d : Covered()) {
      llvm::Function* element = codegen::DefineRandomElement(*module, d);
      auto* type = llvm::FunctionType::get(b.getInt64Ty(), {b.getInt64Ty(), b.getInt64Ty()}, false);
      auto* f = llvm::Function::Create(type, llvm::Function::ExternalLinkage, Name(d), *module);
      b.SetInsertPoint(llvm::BasicBlock::Create(*ctx, "entry", f));
      b.CreateRet(b.CreateZExt(b.CreateCall(element, {f->getArg(0), f->getArg(1)}), b.getInt64Ty()));
    }
    llvm::cantFail(jit_->addIRModule(llvm::orc::ThreadSafeModule(std::move(module), std::move(ctx))));
  }

  ElementFn Get(Dtype d) {
    if (!fns_.count(d)) fns_[d] = Take(jit_->lookup(Name(d))).toPtr<ElementFn>();
    return fns_[d];
  }

  static std::vector<Dtype> Covered() { return codegen::RandomKernelDtypes(); }

 private:
  static std::string Name(Dtype d) { return "test_random_" + std::string(Spelling(d)); }
  template <typename T>
  static T Take(llvm::Expected<T> value) {
    if (!value) FAIL("LLVM ORC: " << llvm::toString(value.takeError()));
    return std::move(*value);
  }
  std::unique_ptr<llvm::orc::LLJIT> jit_;
  std::map<Dtype, ElementFn> fns_;
};

Jit& TheJit() {
  static Jit jit;
  return jit;
}

int Count(const std::string& text, const std::string& what) {
  int n = 0;
  for (std::size_t at = text.find(what); at != std::string::npos; at = text.find(what, at + 1)) ++n;
  return n;
}

const std::vector<std::int64_t> kSeeds = {0, 1, 7, 42, -1, -2, -123456789, 0x123456789abcdef, INT64_MIN, INT64_MAX};

}  // namespace

TEST_CASE("codegen: random: f8 stays on the host and every other dtype has a kernel", "[codegen][random]") {
  CHECK_FALSE(codegen::HasRandomKernel(Dtype::F8E4M3));
  CHECK_FALSE(codegen::HasRandomKernel(Dtype::F8E5M2));
  CHECK(Jit::Covered().size() == 15);
  CHECK(codegen::RandomEntry(Dtype::BF16) == "weft_random_bf16");
}

TEST_CASE("codegen: random: the device element function is FillRandom's bits for every covered dtype",
          "[codegen][random]") {
  constexpr std::int64_t kCount = 4099;
  for (Dtype d : Jit::Covered()) {
    ElementFn element = TheJit().Get(d);
    for (std::int64_t seed : kSeeds) {
      runtime::HostTensor t = runtime::HostTensor::Zeros(d, {kCount});
      runtime::FillRandom(t, static_cast<std::uint64_t>(seed));
      int mismatches = 0;
      for (std::int64_t i = 0; i < kCount; ++i) {
        std::uint64_t want = runtime::LoadBits(t, i);
        std::uint64_t got = element(seed, static_cast<std::uint64_t>(i));
        if (got != want && ++mismatches <= 3)
          FAIL_CHECK(Spelling(d) << " seed " << seed << " element " << i << ": device " << got << ", host " << want);
      }
      CHECK(mismatches == 0);
    }
  }
}

TEST_CASE("codegen: random: indices past 2^32 use the counter's high word on both sides", "[codegen][random]") {
  const std::vector<std::uint64_t> starts = {(std::uint64_t{1} << 32) - 500, std::uint64_t{5} << 32,
                                             (std::uint64_t{1} << 40) + 12345, ~std::uint64_t{0} - 1000};
  for (Dtype d : Jit::Covered()) {
    ElementFn element = TheJit().Get(d);
    for (std::int64_t seed : {std::int64_t{3}, std::int64_t{-77}}) {
      int mismatches = 0;
      for (std::uint64_t start : starts)
        for (std::uint64_t i = start; i - start < 1000; ++i) {
          std::uint64_t want = runtime::RandomElement(d, static_cast<std::uint64_t>(seed), i);
          std::uint64_t got = element(seed, i);
          if (got != want && ++mismatches <= 3)
            FAIL_CHECK(Spelling(d) << " seed " << seed << " index " << i << ": device " << got << ", host " << want);
        }
      CHECK(mismatches == 0);
    }
  }
}

TEST_CASE("codegen: random: RandomElement is weft_random_block's words mapped as runtime.md says",
          "[codegen][random]") {
  // The host side of the comparison above, pinned to its definition at one index past 2^32.
  const std::uint64_t index = (std::uint64_t{7} << 32) + 9, seed = static_cast<std::uint64_t>(-5);
  std::uint32_t w[4];
  weft_random_block(seed, index, w);
  CHECK(runtime::RandomElement(Dtype::U32, seed, index) == w[0]);
  CHECK(runtime::RandomElement(Dtype::I64, seed, index) == (w[0] | std::uint64_t{w[1]} << 32));
  CHECK(runtime::RandomElement(Dtype::Bool, seed, index) == w[0] >> 31);
  CHECK(runtime::RandomElement(Dtype::U4, seed, index) == (w[0] & 0xf));
  CHECK(runtime::RandomElement(Dtype::F32, seed, index) ==
        runtime::EncodeFloat(Dtype::F32, static_cast<double>(w[0] >> 8) * 0x1p-24));
}

TEST_CASE("codegen: random: each kernel is a grid-stride loop that stores its dtype", "[codegen][random]") {
  for (synth::Target target : {synth::Target::Sm80, synth::Target::Sm90a}) {
    for (Dtype d : Jit::Covered()) {
      auto k = codegen::EmitRandomKernel(d, target);
      REQUIRE(k);
      INFO(Spelling(d) << " " << synth::Spelling(target));
      CHECK(k->entry == "weft_random_" + std::string(Spelling(d)));
      CHECK(k->threads == codegen::kRandomThreads);
      CHECK(k->shared_bytes == 0);
      CHECK(k->ptx.find(".entry weft_random_" + std::string(Spelling(d))) != std::string::npos);
      CHECK(k->ptx.find(".maxntid 256, 1, 1") != std::string::npos);
      CHECK(k->ptx.find("%nctaid.x") != std::string::npos);  // the grid's stride
      const int bits = Bits(d);
      if (bits <= 8) CHECK(k->ptx.find("st.global.u8") != std::string::npos);
      if (bits == 16)
        CHECK((k->ptx.find("st.global.b16") != std::string::npos || k->ptx.find("st.global.u16") != std::string::npos));
      if (bits == 32)
        CHECK((k->ptx.find("st.global.f32") != std::string::npos || k->ptx.find("st.global.u32") != std::string::npos));
      if (bits == 64)
        CHECK((k->ptx.find("st.global.f64") != std::string::npos || k->ptx.find("st.global.u64") != std::string::npos));
      // Philox's products as 32-bit ones (random.cpp's freeze), not 64-bit multiplies.
      CHECK(Count(k->ptx, "mul.hi.u32") + Count(k->ptx, "mul.wide.u32") >= 16);
      if (d == Dtype::BF16) CHECK(k->ptx.find("cvt.rn.bf16.f32") != std::string::npos);
      if (d == Dtype::F16) CHECK(k->ptx.find("cvt.rn.f16.f32") != std::string::npos);
    }
  }
}
