// Times the interpreter's `@` on f32[512, 512] @ f32[512, 512] (and bf16, which converts on the way
// in and out): the interpreter must stay fast enough to be the oracle of GPU tests. Run it from a
// release build: weft_interp_matmul_bench [n] [repeats].
#include <chrono>
#include <cstdio>
#include <cstdlib>

#include "interp/ops.h"
#include "weft/numerics.h"

using weft::Dtype;
using weft::interp::HostTensor;

static HostTensor Filled(Dtype dtype, std::int64_t n, std::uint32_t seed) {
  HostTensor t = HostTensor::Zeros(dtype, {n, n});
  for (std::int64_t i = 0; i < n * n; ++i) {
    seed = seed * 1664525u + 1013904223u;
    weft::runtime::StoreDouble(t, i, static_cast<double>(seed >> 8) / (1 << 24) - 0.5);
  }
  return t;
}

int main(int argc, char** argv) {
  std::int64_t n = argc > 1 ? std::atoll(argv[1]) : 512;
  int repeats = argc > 2 ? std::atoi(argv[2]) : 5;
  for (Dtype dtype : {Dtype::F32, Dtype::BF16}) {
    HostTensor a = Filled(dtype, n, 1), b = Filled(dtype, n, 2);
    double best = 1e30;
    for (int r = 0; r < repeats; ++r) {
      auto start = std::chrono::steady_clock::now();
      auto c = weft::interp::MatMul(a, b);
      double ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
      if (!c) return 1;
      if (ms < best) best = ms;
    }
    std::printf("%s[%lld, %lld] @ %s[%lld, %lld]: best of %d: %.1f ms\n", std::string(Spelling(dtype)).c_str(),
                static_cast<long long>(n), static_cast<long long>(n), std::string(Spelling(dtype)).c_str(),
                static_cast<long long>(n), static_cast<long long>(n), repeats, best);
  }
  return 0;
}
