// Every dependency of architecture.md's table is found, links and works: the build is settled once,
// before the phases that use them arrive.
#include <catch2/catch.hpp>

#include <histedit.h>
#include <z3++.h>

#include <llvm/IR/IRBuilder.h>
#include <llvm/IR/LLVMContext.h>
#include <llvm/IR/LegacyPassManager.h>
#include <llvm/IR/Module.h>
#include <llvm/MC/TargetRegistry.h>
#include <llvm/Support/TargetSelect.h>
#include <llvm/Support/raw_ostream.h>
#include <llvm/Target/TargetMachine.h>
#include <llvm/Target/TargetOptions.h>

namespace {

TEST_CASE("Z3 proves a fact about sizes", "[dependencies]") {
  z3::context context;
  z3::solver solver(context);
  z3::expr n = context.int_const("n");
  // n % 64 == 0 && n >= 64 implies n / 64 >= 1: its negation is unsatisfiable.
  solver.add(n % 64 == 0 && n >= 64 && !(n / 64 >= 1));
  CHECK(solver.check() == z3::unsat);
}

TEST_CASE("LLVM's NVPTX backend emits PTX for sm_90a", "[dependencies]") {
  LLVMInitializeNVPTXTargetInfo();
  LLVMInitializeNVPTXTarget();
  LLVMInitializeNVPTXTargetMC();
  LLVMInitializeNVPTXAsmPrinter();
  const std::string triple = "nvptx64-nvidia-cuda";
  std::string error;
  const llvm::Target* target = llvm::TargetRegistry::lookupTarget(triple, error);
  REQUIRE(target != nullptr);
  std::unique_ptr<llvm::TargetMachine> machine(
      target->createTargetMachine(triple, "sm_90a", "+ptx80", llvm::TargetOptions(), std::nullopt));
  REQUIRE(machine != nullptr);

  llvm::LLVMContext context;
  llvm::Module module("deps", context);
  module.setTargetTriple(triple);
  module.setDataLayout(machine->createDataLayout());
  auto* type = llvm::FunctionType::get(llvm::Type::getVoidTy(context), {llvm::PointerType::get(context, 1)}, false);
  auto* kernel = llvm::Function::Create(type, llvm::Function::ExternalLinkage, "fill", module);
  kernel->setCallingConv(llvm::CallingConv::PTX_Kernel);
  llvm::IRBuilder<> builder(llvm::BasicBlock::Create(context, "entry", kernel));
  builder.CreateStore(llvm::ConstantFP::get(builder.getFloatTy(), 1.0), kernel->getArg(0));
  builder.CreateRetVoid();

  llvm::SmallString<0> ptx;
  llvm::raw_svector_ostream out(ptx);
  llvm::legacy::PassManager passes;
  REQUIRE_FALSE(machine->addPassesToEmitFile(passes, out, nullptr, llvm::CodeGenFileType::AssemblyFile));
  passes.run(module);
  std::string text(ptx.str());
  CHECK(text.find(".target sm_90a") != std::string::npos);
  CHECK(text.find(".entry fill") != std::string::npos);
}

TEST_CASE("libedit's history library links", "[dependencies]") {
  History* entries = history_init();
  REQUIRE(entries != nullptr);
  HistEvent event;
  REQUIRE(history(entries, &event, H_SETSIZE, 100) >= 0);
  CHECK(history(entries, &event, H_ENTER, "let x = 1") >= 0);
  CHECK(history(entries, &event, H_GETSIZE) >= 0);
  CHECK(event.num == 1);
  history_end(entries);
}

}  // namespace
