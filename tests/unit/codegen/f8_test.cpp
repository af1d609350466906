// codegen/f8.h: the f8 conversions array kernels use, JIT-compiled for this machine (LLVM ORC, as
// random_test.cpp does) and compared bit for bit with the runtime's (weft/numerics.h), which the
// interpreter uses: every f8 pattern decoded; f32 encoded over every sign, exponent and top 11
// mantissa bits with sticky bits clear and set; f64 encoded at every f8 value, the midpoints between
// neighbours (the ties) and the doubles next to them, infinities, NaN, subnormals, and random bits.
#include <llvm/ExecutionEngine/Orc/ExecutionUtils.h>
#include <llvm/ExecutionEngine/Orc/JITTargetMachineBuilder.h>
#include <llvm/ExecutionEngine/Orc/LLJIT.h>
#include <llvm/ExecutionEngine/Orc/ThreadSafeModule.h>
#include <llvm/IR/IRBuilder.h>
#include <llvm/IR/LLVMContext.h>
#include <llvm/IR/Module.h>
#include <llvm/Support/TargetSelect.h>
#include <llvm/TargetParser/Host.h>

#include <bit>
#include <catch2/catch.hpp>
#include <cmath>
#include <cstdint>
#include <limits>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "codegen/f8.h"
#include "weft/numerics.h"

using namespace weft;

namespace {

using DecodeFn = std::uint32_t (*)(std::uint8_t);
using Encode32Fn = std::uint8_t (*)(std::uint32_t);
using Encode64Fn = std::uint8_t (*)(std::uint64_t);

// Per format: decode (f8 bits to f32 bits), encode from f32 bits and from f64 bits.
struct Format {
  DecodeFn decode = nullptr;
  Encode32Fn encode32 = nullptr;
  Encode64Fn encode64 = nullptr;
};

template <typename T>
T Take(llvm::Expected<T> value) {
  if (!value) FAIL("LLVM ORC: " << llvm::toString(value.takeError()));
  return std::move(*value);
}

class Jit {
 public:
  Jit() {
    llvm::InitializeNativeTarget();
    llvm::InitializeNativeTargetAsmPrinter();
    llvm::orc::JITTargetMachineBuilder machine{llvm::Triple(llvm::sys::getProcessTriple())};
    jit_ = Take(llvm::orc::LLJITBuilder().setJITTargetMachineBuilder(std::move(machine)).create());
    jit_->getMainJITDylib().addGenerator(
        Take(llvm::orc::DynamicLibrarySearchGenerator::GetForCurrentProcess(jit_->getDataLayout().getGlobalPrefix())));
    auto ctx = std::make_unique<llvm::LLVMContext>();
    auto module = std::make_unique<llvm::Module>("f8_test", *ctx);
    module->setDataLayout(jit_->getDataLayout());
    module->setTargetTriple(jit_->getTargetTriple().str());
    llvm::IRBuilder<> b(*ctx);
    auto define = [&](const std::string& name, llvm::Type* result, llvm::Type* param) {
      auto* f = llvm::Function::Create(llvm::FunctionType::get(result, {param}, false), llvm::Function::ExternalLinkage,
                                       name, *module);
      b.SetInsertPoint(llvm::BasicBlock::Create(*ctx, "entry", f));
      return f->getArg(0);
    };
    for (Dtype d : {Dtype::F8E4M3, Dtype::F8E5M2}) {
      std::string s(Spelling(d));
      llvm::Value* bits = define("decode_" + s, b.getInt32Ty(), b.getInt8Ty());
      b.CreateRet(b.CreateBitCast(codegen::EmitF8Decode(b, bits, d), b.getInt32Ty()));
      llvm::Value* x32 = define("encode32_" + s, b.getInt8Ty(), b.getInt32Ty());
      b.CreateRet(codegen::EmitF8Encode(b, b.CreateBitCast(x32, b.getFloatTy()), d));
      llvm::Value* x64 = define("encode64_" + s, b.getInt8Ty(), b.getInt64Ty());
      b.CreateRet(codegen::EmitF8Encode(b, b.CreateBitCast(x64, b.getDoubleTy()), d));
    }
    llvm::cantFail(jit_->addIRModule(llvm::orc::ThreadSafeModule(std::move(module), std::move(ctx))));
  }

  Format Get(Dtype d) {
    std::string s(Spelling(d));
    return Format{Take(jit_->lookup("decode_" + s)).toPtr<DecodeFn>(),
                  Take(jit_->lookup("encode32_" + s)).toPtr<Encode32Fn>(),
                  Take(jit_->lookup("encode64_" + s)).toPtr<Encode64Fn>()};
  }

 private:
  std::unique_ptr<llvm::orc::LLJIT> jit_;
};

Jit& TheJit() {
  static Jit jit;
  return jit;
}

std::uint8_t Reference(Dtype d, double x) {
  return static_cast<std::uint8_t>(runtime::EncodeFloat(d, x));
}

}  // namespace

TEST_CASE("codegen: f8: decoding every pattern is the runtime's, bit for bit", "[codegen][f8]") {
  for (Dtype d : {Dtype::F8E4M3, Dtype::F8E5M2}) {
    Format f = TheJit().Get(d);
    for (int i = 0; i < 256; ++i) {
      float expected = d == Dtype::F8E4M3 ? runtime::F8e4m3ToFloat(static_cast<std::uint8_t>(i))
                                          : runtime::F8e5m2ToFloat(static_cast<std::uint8_t>(i));
      INFO(Spelling(d) << " bits 0x" << std::hex << i);
      CHECK(f.decode(static_cast<std::uint8_t>(i)) == std::bit_cast<std::uint32_t>(expected));
    }
  }
}

TEST_CASE("codegen: f8: encoding an f32 rounds as the runtime does", "[codegen][f8]") {
  for (Dtype d : {Dtype::F8E4M3, Dtype::F8E5M2}) {
    Format f = TheJit().Get(d);
    int mismatches = 0;
    for (std::uint32_t high = 0; high < (1u << 20); ++high) {
      for (std::uint32_t low : {0x000u, 0x001u, 0x800u, 0xfffu}) {
        std::uint32_t bits = high << 12 | low;
        std::uint8_t expected = Reference(d, static_cast<double>(std::bit_cast<float>(bits)));
        std::uint8_t got = f.encode32(bits);
        if (got != expected && ++mismatches <= 5) {
          INFO(Spelling(d) << " f32 bits 0x" << std::hex << bits << ": got 0x" << int{got} << ", the runtime 0x"
                           << int{expected});
          CHECK(got == expected);
        }
      }
    }
    CHECK(mismatches == 0);
  }
}

TEST_CASE("codegen: f8: encoding an f64 rounds once, at ties and next to them", "[codegen][f8]") {
  for (Dtype d : {Dtype::F8E4M3, Dtype::F8E5M2}) {
    Format f = TheJit().Get(d);
    std::vector<double> values = {0.0,
                                  -0.0,
                                  std::numeric_limits<double>::infinity(),
                                  -std::numeric_limits<double>::infinity(),
                                  std::numeric_limits<double>::quiet_NaN(),
                                  std::numeric_limits<double>::denorm_min(),
                                  -std::numeric_limits<double>::max(),
                                  1e300,
                                  1e-300};
    // Every finite f8 value, the midpoint to the next one (a tie) and the doubles next to both.
    for (int i = 0; i < 128; ++i) {
      double v = runtime::DecodeFloat(d, static_cast<std::uint64_t>(i));
      double next = runtime::DecodeFloat(d, static_cast<std::uint64_t>(i + 1));
      if (!std::isfinite(v)) continue;
      double mid = std::isfinite(next) ? (v + next) / 2 : v * 1.0625;
      for (double x : {v, mid}) {
        for (double y : {x, std::nextafter(x, 0.0), std::nextafter(x, 1e308)}) {
          values.push_back(y);
          values.push_back(-y);
        }
      }
    }
    std::mt19937_64 random(8);
    for (int i = 0; i < 200000; ++i) values.push_back(std::bit_cast<double>(random()));
    for (int i = 0; i < 200000; ++i)
      values.push_back(std::ldexp(std::bit_cast<double>(random() >> 12 | 0x3ff0000000000000), -20 + i % 40));
    int mismatches = 0;
    for (double x : values) {
      std::uint8_t expected = Reference(d, x);
      std::uint8_t got = f.encode64(std::bit_cast<std::uint64_t>(x));
      if (got != expected && ++mismatches <= 5) {
        INFO(Spelling(d) << " " << x << ": got 0x" << std::hex << int{got} << ", the runtime 0x" << int{expected});
        CHECK(got == expected);
      }
    }
    CHECK(mismatches == 0);
  }
}
