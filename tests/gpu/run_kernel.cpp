// run_kernel: launches one generated kernel (`weft build --emit=ptx`) on the GPU with .npy inputs and
// writes its outputs as .npy, for the GPU half of the tests (tests/gpu/README.md): the references
// are computed on the machine that has the compiler, the comparison runs beside this tool. It needs
// only the runtime (libc and the driver), so the binary built here runs on the lent GPU machine.
//
//   run_kernel PTX ENTRY --grid X[,Y[,Z]] --threads N --shared BYTES ARG... [--time N]
//   ARG: in:FILE.npy           a tensor parameter read from FILE
//        rand:DTYPE:D0xD1...  a tensor parameter of `random` values (the runtime's generator), made
//                             here: for timing at sizes whose inputs are too large to carry
//        out:FILE.npy:DTYPE:D0xD1...  an `out` tensor, zero-filled, written to FILE after the run
//        i64:V | i32:V | f32:V  a size or scalar parameter
//        tmap:I:DTYPE:ROWS:COLS:BOXROWS:BOXCOLS:SWIZZLE  a TMA tensor map (sm_90a) of the tensor
//                             given as argument I (from 0), viewed as ROWS x COLS (leading axes
//                             flattened into rows), with that box and swizzle (none|32B|64B|128B)
// Arguments are passed in the order given: the launch contract of compiler/codegen/device.h.
// --time N: after one launch, N timed launches (events); prints the median... of one batch, in ms.
//
// Exit status: 0 ran, 1 failed (message on stderr), 2 bad usage, 77 no driver or no GPU.
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "weft/runtime.h"

namespace {

[[noreturn]] void Usage(const std::string& why) {
  std::fprintf(stderr, "run_kernel: %s\n", why.c_str());
  std::exit(2);
}

void Must(weft_status status) {
  if (status != WEFT_OK) {
    std::fprintf(stderr, "run_kernel: error: %s\n", weft_last_error());
    std::exit(1);
  }
}

std::vector<std::string> Split(const std::string& s, char sep) {
  std::vector<std::string> out;
  std::size_t start = 0;
  while (true) {
    std::size_t at = s.find(sep, start);
    out.push_back(s.substr(start, at - start));
    if (at == std::string::npos) return out;
    start = at + 1;
  }
}

weft_dtype ParseDtype(const std::string& s) {
  if (s == "f32") return WEFT_DTYPE_F32;
  if (s == "bf16") return WEFT_DTYPE_BF16;
  if (s == "f16") return WEFT_DTYPE_F16;
  if (s == "i32") return WEFT_DTYPE_I32;
  if (s == "i64") return WEFT_DTYPE_I64;
  Usage("unknown dtype `" + s + "`");
}

struct Arg {
  weft_host_tensor* host = nullptr;
  std::string save_to;  // an out tensor
  weft_device_ptr device = 0;
  std::int64_t i64 = 0;
  std::int32_t i32 = 0;
  float f32 = 0;
  weft_tensor_map map{};
  void* value = nullptr;
};

}  // namespace

int main(int argc, char** argv) {
  if (argc < 3) Usage("usage: run_kernel PTX ENTRY --grid X[,Y[,Z]] --threads N --shared BYTES ARG... [--time N]");
  std::string ptx_path = argv[1], entry = argv[2];
  weft_launch_config config = {{1, 1, 1}, {1, 1, 1}, 0};
  int timed = 0;
  std::vector<std::string> specs;
  for (int i = 3; i < argc; ++i) {
    std::string a = argv[i];
    auto next = [&]() -> std::string {
      if (i + 1 >= argc) Usage(a + " needs a value");
      return argv[++i];
    };
    if (a == "--grid") {
      auto parts = Split(next(), ',');
      for (std::size_t d = 0; d < parts.size() && d < 3; ++d)
        config.grid[d] = static_cast<std::uint32_t>(std::stoul(parts[d]));
    } else if (a == "--threads") {
      config.block[0] = static_cast<std::uint32_t>(std::stoul(next()));
    } else if (a == "--shared") {
      config.shared_bytes = static_cast<std::uint32_t>(std::stoul(next()));
    } else if (a == "--time") {
      timed = std::stoi(next());
    } else {
      specs.push_back(a);
    }
  }
  weft_status init = weft_init();
  if (init != WEFT_OK) {
    std::printf("skipped: %s\n", weft_last_error());
    return 77;
  }
  FILE* f = std::fopen(ptx_path.c_str(), "rb");
  if (!f) Usage("cannot read `" + ptx_path + "`");
  std::string image;
  char buffer[65536];
  std::size_t n;
  while ((n = std::fread(buffer, 1, sizeof buffer, f)) > 0) image.append(buffer, n);
  std::fclose(f);
  weft_module* module = nullptr;
  Must(weft_module_load(&module, image.c_str(), image.size() + 1, ptx_path.c_str()));
  weft_kernel* kernel = nullptr;
  Must(weft_kernel_get(&kernel, module, entry.c_str()));

  std::vector<std::unique_ptr<Arg>> args;
  for (const std::string& spec : specs) {
    auto parts = Split(spec, ':');
    auto arg = std::make_unique<Arg>();
    if (parts[0] == "in" && parts.size() == 2) {
      Must(weft_npy_load(&arg->host, parts[1].c_str()));
    } else if (parts[0] == "rand" && parts.size() == 3) {
      std::vector<std::int64_t> shape;
      for (const auto& d : Split(parts[2], 'x')) shape.push_back(std::stoll(d));
      Must(weft_host_tensor_create(&arg->host, ParseDtype(parts[1]), static_cast<int>(shape.size()), shape.data()));
      Must(weft_random_fill(arg->host, args.size() + 1));
    } else if (parts[0] == "out" && parts.size() == 4) {
      std::vector<std::int64_t> shape;
      for (const auto& d : Split(parts[3], 'x')) shape.push_back(std::stoll(d));
      Must(weft_host_tensor_create(&arg->host, ParseDtype(parts[2]), static_cast<int>(shape.size()), shape.data()));
      arg->save_to = parts[1];
    } else if (parts[0] == "tmap" && parts.size() == 8) {
      std::size_t of = std::stoul(parts[1]);
      if (of >= args.size() || !args[of]->host) Usage("`" + spec + "` names no earlier tensor argument");
      weft_dtype d = ParseDtype(parts[2]);
      weft_tma_dtype t = d == WEFT_DTYPE_BF16  ? WEFT_TMA_BF16
                         : d == WEFT_DTYPE_F16 ? WEFT_TMA_F16
                         : d == WEFT_DTYPE_F32 ? WEFT_TMA_F32
                                               : WEFT_TMA_I32;
      std::uint64_t element = d == WEFT_DTYPE_BF16 || d == WEFT_DTYPE_F16 ? 2 : 4;
      std::uint64_t rows = std::stoull(parts[3]), cols = std::stoull(parts[4]);
      std::uint64_t dims[2] = {cols, rows}, strides[1] = {cols * element};
      std::uint32_t box[2] = {static_cast<std::uint32_t>(std::stoul(parts[6])),
                              static_cast<std::uint32_t>(std::stoul(parts[5]))};
      weft_tma_swizzle swizzle = parts[7] == "128B"  ? WEFT_TMA_SWIZZLE_128B
                                 : parts[7] == "64B" ? WEFT_TMA_SWIZZLE_64B
                                 : parts[7] == "32B" ? WEFT_TMA_SWIZZLE_32B
                                                     : WEFT_TMA_SWIZZLE_NONE;
      Must(weft_tensor_map_encode_tiled(&arg->map, t, 2, args[of]->device, dims, strides, box, nullptr,
                                        WEFT_TMA_INTERLEAVE_NONE, swizzle, WEFT_TMA_L2_256B, WEFT_TMA_OOB_ZERO));
      arg->value = &arg->map;
    } else if (parts[0] == "i64" && parts.size() == 2) {
      arg->i64 = std::stoll(parts[1]);
      arg->value = &arg->i64;
    } else if (parts[0] == "i32" && parts.size() == 2) {
      arg->i32 = static_cast<std::int32_t>(std::stol(parts[1]));
      arg->value = &arg->i32;
    } else if (parts[0] == "f32" && parts.size() == 2) {
      arg->f32 = std::stof(parts[1]);
      arg->value = &arg->f32;
    } else {
      Usage("bad argument `" + spec + "`");
    }
    if (arg->host) {
      std::uint64_t bytes = weft_host_tensor_bytes(arg->host);
      Must(weft_device_alloc(&arg->device, bytes));
      Must(weft_copy_to_device(arg->device, weft_host_tensor_data(arg->host), bytes));  // zeros for out
      arg->value = &arg->device;
    }
    args.push_back(std::move(arg));
  }
  std::vector<void*> values;
  for (auto& a : args) values.push_back(a->value);
  Must(weft_launch(kernel, &config, values.data()));
  Must(weft_synchronize());
  for (auto& a : args) {
    if (a->save_to.empty()) continue;
    Must(weft_copy_to_host(weft_host_tensor_data(a->host), a->device, weft_host_tensor_bytes(a->host)));
    Must(weft_npy_save(a->save_to.c_str(), a->host));
  }
  if (timed > 0) {
    float total = 0;
    Must(weft_time_launches(kernel, &config, values.data(), timed, &total));
    std::printf("%s: %.4f ms per launch (%d launches)\n", entry.c_str(), total / static_cast<float>(timed), timed);
  }
  std::printf("%s: ran\n", entry.c_str());
  return 0;
}
