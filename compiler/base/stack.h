// Runs deeply recursive work (parsing, later checking) on a thread with a large stack, so that the
// nesting limits the phases enforce are reached long before the stack is, in every build preset.
#pragma once

#include <functional>

namespace weft {

// Stack size for recursive phases: sanitizer builds use several times more stack per frame.
inline constexpr unsigned kDeepStackBytes = 512u << 20;

// Runs `work` to completion on a thread whose stack is kDeepStackBytes. An exception thrown by
// `work` is rethrown in the calling thread.
void RunWithDeepStack(const std::function<void()>& work);

}  // namespace weft
