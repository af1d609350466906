#include "base/stack.h"

#include <exception>
#include <optional>
#include <utility>

#include <llvm/Support/thread.h>

namespace weft {

void RunWithDeepStack(const std::function<void()>& work) {
  std::exception_ptr failure;
  llvm::thread worker(std::optional<unsigned>(kDeepStackBytes), [&] {
    try {
      work();
    } catch (...) {
      failure = std::current_exception();
    }
  });
  worker.join();
  if (failure) std::rethrow_exception(failure);
}

}  // namespace weft
