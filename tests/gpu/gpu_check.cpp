// gpu_check: the GPU half of tests/gpu (README.md). For each case folder that gpu_cases wrote, it
// loads the kernel's module, uploads the inputs (or makes them with `random` on this machine),
// zero-fills the outputs, encodes the TMA tensor maps, launches the entry as device.h's launch
// contract says, and compares every output with the interpreter's reference (gpu.md: relative
// error under the case's tolerance, NaN never; integers bit for bit). One line per case:
//
//   PASS gemm_bf16-sm_80-256x256x256: c f32[256, 256]: relative error 2.1e-03, max abs error 0.03 (tolerance 1e-02)
//
//   gpu_check [--time N] [--save-outputs] CASE_OR_FOLDER...
//
// A folder without manifest.json stands for the case folders inside it (in name order).
// --time N: after the check, 5 warm-up launches, then N launches each timed with events, the L2
// cache flushed before each (as triton.testing.do_bench does); prints the median and the TFLOP/s of
// the manifest's flop count ("TIME name: ...").
// --save-outputs: writes each output as OUT_NAME.out.npy into its case folder.
//
// It needs only the runtime (libc and the driver), so the binary built here runs on the GPU machine.
// Exit status: 0 every case passed, 1 a case failed (not generated, a launch or module error, a
// comparison), 2 bad usage, 77 no driver or no GPU (ctest: skipped).
#include <dirent.h>
#include <sys/stat.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "gpu_case.h"
#include "weft/npy.h"
#include "weft/numerics.h"
#include "weft/random.h"
#include "weft/runtime.h"

namespace {

using weft::gpu::Arg;
using weft::gpu::Case;
using weft::runtime::HostTensor;

[[noreturn]] void Usage(const std::string& why) {
  std::fprintf(stderr, "gpu_check: %s\nusage: gpu_check [--time N] [--save-outputs] CASE_OR_FOLDER...\n", why.c_str());
  std::exit(2);
}

bool IsDir(const std::string& path) {
  struct stat st {};
  return stat(path.c_str(), &st) == 0 && S_ISDIR(st.st_mode);
}

bool Exists(const std::string& path) {
  struct stat st {};
  return stat(path.c_str(), &st) == 0;
}

// The case folders `path` stands for: itself when it has a manifest, else its subfolders that do.
std::vector<std::string> CaseDirs(const std::string& path) {
  if (Exists(path + "/manifest.json")) return {path};
  std::vector<std::string> out;
  if (DIR* d = opendir(path.c_str())) {
    while (dirent* e = readdir(d)) {
      std::string sub = path + "/" + e->d_name;
      if (e->d_name[0] != '.' && Exists(sub + "/manifest.json")) out.push_back(sub);
    }
    closedir(d);
  }
  std::sort(out.begin(), out.end());
  return out;
}

std::string ReadFile(const std::string& path, bool& ok) {
  std::ifstream in(path, std::ios::binary);
  ok = static_cast<bool>(in);
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

weft_tma_dtype TmaDtype(weft::Dtype d) {
  switch (d) {
    case weft::Dtype::BF16:
      return WEFT_TMA_BF16;
    case weft::Dtype::F16:
      return WEFT_TMA_F16;
    case weft::Dtype::F32:
      return WEFT_TMA_F32;
    case weft::Dtype::F64:
      return WEFT_TMA_F64;
    case weft::Dtype::I32:
      return WEFT_TMA_I32;
    case weft::Dtype::I64:
      return WEFT_TMA_I64;
    case weft::Dtype::U16:
      return WEFT_TMA_U16;
    case weft::Dtype::U32:
      return WEFT_TMA_U32;
    case weft::Dtype::U64:
      return WEFT_TMA_U64;
    default:
      return WEFT_TMA_U8;
  }
}

struct Options {
  int time = 0;
  bool save_outputs = false;
};

// One case's device state; frees its buffers and module on every path out.
struct Run {
  weft_module* module = nullptr;
  std::vector<weft_device_ptr> buffers;
  ~Run() {
    for (weft_device_ptr p : buffers) weft_device_free(p);
    weft_module_unload(module);
  }
};

enum class Outcome { Pass, Fail, Skip };

// Checks (and times) one case and prints its line.

Outcome CheckCase(const std::string& dir, const Options& options, const weft_device_info& device) {
  std::string error;
  auto loaded = weft::gpu::ReadCase(dir, error);
  if (!loaded) {
    std::printf("FAIL %s: %s\n", dir.c_str(), error.c_str());
    return Outcome::Fail;
  }
  const Case& c = *loaded;
  auto fail = [&](const std::string& why) {
    std::printf("FAIL %s: %s\n", c.name.c_str(), why.c_str());
    std::fflush(stdout);
    return Outcome::Fail;
  };
  auto failed = [&](const std::string& what) { return fail(what + ": " + weft_last_error()); };
  // The reason's first line (a diagnostic's headline); the manifest holds the whole of it.
  if (!c.generated) return fail("not generated: " + c.reason.substr(0, c.reason.find('\n')));
  if (c.target == "sm_90a" && device.sm_major != 9) {
    std::printf("SKIP %s: an sm_90a kernel; this GPU is sm_%d%d\n", c.name.c_str(), device.sm_major, device.sm_minor);
    return Outcome::Skip;
  }

  // The module: the cubin when it was assembled for this GPU, else the PTX (the driver compiles it).
  std::string this_arch = "sm_" + std::to_string(device.sm_major) + std::to_string(device.sm_minor);
  bool use_cubin = !c.cubin.empty() && (c.target == this_arch || c.target == this_arch + "a");
  std::string image_path = dir + "/" + (use_cubin ? c.cubin : c.ptx);
  bool ok = false;
  std::string image = ReadFile(image_path, ok);
  if (!ok) return fail(image_path + ": cannot read");
  Run run;
  if (weft_module_load(&run.module, image.c_str(), image.size() + (use_cubin ? 0 : 1), image_path.c_str()) != WEFT_OK)
    return failed("module");
  weft_kernel* kernel = nullptr;
  if (weft_kernel_get(&kernel, run.module, c.entry.c_str()) != WEFT_OK) return failed("entry");

  // Arguments, in the entry's parameter order.
  std::size_t n = c.args.size();
  std::vector<HostTensor> hosts(n);
  std::vector<weft_device_ptr> device_ptrs(n, 0);
  std::vector<std::int64_t> i64(n);
  std::vector<std::int32_t> i32(n);
  std::vector<float> f32(n);
  std::vector<double> f64(n);
  std::vector<weft_tensor_map> maps(n);
  std::vector<void*> values(n, nullptr);
  for (std::size_t i = 0; i < n; ++i) {
    const Arg& a = c.args[i];
    switch (a.kind) {
      case Arg::Kind::Tensor: {
        HostTensor& h = hosts[i];
        if (!a.input.empty()) {
          auto read = weft::runtime::ReadNpy(dir + "/" + a.input);
          if (!read) return fail(read.error().message);
          h = std::move(*read);
          if (h.dtype != a.dtype || h.shape != a.shape)
            return fail(a.input + " holds " + std::string(weft::Spelling(h.dtype)) + weft::runtime::ShapeText(h.shape) +
                        ", the manifest says " + std::string(weft::Spelling(a.dtype)) +
                        weft::runtime::ShapeText(a.shape));
        } else {
          h = HostTensor::Zeros(a.dtype, a.shape);
          if (!a.out) weft::runtime::FillRandom(h, *a.random_seed);
        }
        std::uint64_t bytes = h.bytes.size();
        if (weft_device_alloc(&device_ptrs[i], bytes) != WEFT_OK) return failed("`" + a.name + "`");
        run.buffers.push_back(device_ptrs[i]);
        // `out` tensors start zero-filled (the kernel tier's meaning); inputs are uploaded.
        weft_status s = a.out ? weft_device_memset(device_ptrs[i], 0, bytes)
                              : weft_copy_to_device(device_ptrs[i], h.bytes.data(), bytes);
        if (s != WEFT_OK) return failed("`" + a.name + "`");
        values[i] = &device_ptrs[i];
        break;
      }
      case Arg::Kind::Size:
      case Arg::Kind::Scalar:
        if (a.abi == "i64") {
          i64[i] = a.int_value;
          values[i] = &i64[i];
        } else if (a.abi == "i32") {
          i32[i] = static_cast<std::int32_t>(a.int_value);
          values[i] = &i32[i];
        } else if (a.abi == "f32") {
          f32[i] = static_cast<float>(a.float_value);
          values[i] = &f32[i];
        } else {
          f64[i] = a.float_value;
          values[i] = &f64[i];
        }
        break;
      case Arg::Kind::TensorMap: {
        const Arg& t = c.args[static_cast<std::size_t>(a.tensor)];
        if (weft_tensor_map_encode_tiled(&maps[i], TmaDtype(t.dtype), static_cast<std::uint32_t>(a.dims.size()),
                                         device_ptrs[static_cast<std::size_t>(a.tensor)], a.dims.data(),
                                         a.strides_bytes.data(), a.box.data(), nullptr, WEFT_TMA_INTERLEAVE_NONE,
                                         static_cast<weft_tma_swizzle>(a.swizzle), WEFT_TMA_L2_256B,
                                         WEFT_TMA_OOB_ZERO) != WEFT_OK)
          return failed("tensor map `" + a.name + "`");
        values[i] = &maps[i];
        break;
      }
    }
  }

  weft_launch_config config = {{c.grid[0], c.grid[1], c.grid[2]}, {c.threads, 1, 1}, c.shared_bytes};
  if (c.persistent && c.persistent_blocks > 0)
    config.grid[0] = c.persistent_blocks, config.grid[1] = config.grid[2] = 1;
  else if (c.persistent && weft_persistent_grid(kernel, &config) != WEFT_OK)
    return failed("persistent grid");
  if (weft_launch(kernel, &config, values.data()) != WEFT_OK) return failed("launch");
  if (weft_synchronize() != WEFT_OK) return failed("run");

  // The comparison, output by output.
  bool pass = true;
  std::string line;
  for (std::size_t i = 0; i < n; ++i) {
    const Arg& a = c.args[i];
    if (a.kind != Arg::Kind::Tensor || !a.out) continue;
    HostTensor& h = hosts[i];
    if (weft_copy_to_host(h.bytes.data(), device_ptrs[i], h.bytes.size()) != WEFT_OK) return failed("`" + a.name + "`");
    if (options.save_outputs) {
      auto written = weft::runtime::WriteNpy(dir + "/" + a.name + ".out.npy", h);
      if (!written) return fail(written.error().message);
    }
    line += (line.empty() ? "" : "; ") + a.name + " " + std::string(weft::Spelling(a.dtype)) +
            weft::runtime::ShapeText(a.shape) + ": ";
    if (a.reference.empty()) {  // a timing case: no reference, but NaN never
      std::int64_t nans = 0;
      if (weft::runtime::IsFloatDtype(a.dtype))
        for (std::int64_t e = 0; e < h.Count(); ++e) nans += std::isnan(weft::runtime::LoadDouble(h, e));
      pass &= nans == 0;
      line += "no reference (a timing case), " + std::to_string(nans) + " NaN";
      continue;
    }
    auto ref = weft::runtime::ReadNpy(dir + "/" + a.reference);
    if (!ref) return fail(ref.error().message);
    weft::gpu::Comparison cmp = weft::gpu::Compare(h, *ref, c.tolerance);
    pass &= cmp.pass;
    line += cmp.text;
  }
  std::printf("%s %s: %s\n", pass ? "PASS" : "FAIL", c.name.c_str(), line.c_str());
  std::fflush(stdout);

  if (options.time > 0) {
    for (int w = 0; w < 5; ++w)
      if (weft_launch(kernel, &config, values.data()) != WEFT_OK) return failed("warm-up launch");
    // As triton.testing.do_bench (the anchors' timer) does: the L2 cache emptied before each launch
    // by writing a buffer larger than it, outside the timed region.
    weft_device_ptr flush = 0;
    const std::uint64_t flush_bytes = 256ull << 20;
    if (weft_device_alloc(&flush, flush_bytes) != WEFT_OK) return failed("the L2 flush buffer");
    run.buffers.push_back(flush);
    weft_event *start = nullptr, *end = nullptr;
    if (weft_event_create(&start) != WEFT_OK || weft_event_create(&end) != WEFT_OK) return failed("events");
    std::vector<double> ms;
    for (int t = 0; t < options.time; ++t) {
      float elapsed = 0;
      if (weft_device_memset(flush, static_cast<std::uint8_t>(t), flush_bytes) != WEFT_OK ||
          weft_event_record(start) != WEFT_OK || weft_launch(kernel, &config, values.data()) != WEFT_OK ||
          weft_event_record(end) != WEFT_OK || weft_event_elapsed_ms(start, end, &elapsed) != WEFT_OK) {
        weft_event_destroy(start);
        weft_event_destroy(end);
        return failed("timed launch");
      }
      ms.push_back(elapsed);
    }
    weft_event_destroy(start);
    weft_event_destroy(end);
    double median = weft::gpu::Median(ms);
    std::printf("TIME %s: median %.4f ms over %d launches (min %.4f)", c.name.c_str(), median, options.time,
                *std::min_element(ms.begin(), ms.end()));
    if (c.flops > 0) std::printf(", %.1f TFLOP/s", c.flops / (median * 1e-3) / 1e12);
    std::printf("\n");
    std::fflush(stdout);
  }
  return pass ? Outcome::Pass : Outcome::Fail;
}

}  // namespace

int main(int argc, char** argv) {
  Options options;
  std::vector<std::string> paths;
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    if (a == "--time") {
      if (i + 1 >= argc) Usage("--time needs a count");
      char* end = nullptr;
      long count = std::strtol(argv[++i], &end, 10);
      if (*end != '\0' || count < 1) Usage("--time needs a positive count, not `" + std::string(argv[i]) + "`");
      options.time = static_cast<int>(count);
    } else if (a == "--save-outputs") {
      options.save_outputs = true;
    } else if (!a.empty() && a[0] == '-') {
      Usage("unknown option `" + a + "`");
    } else {
      paths.push_back(a);
    }
  }
  if (paths.empty()) Usage("no case folders given");
  for (const std::string& p : paths) {
    if (!IsDir(p)) Usage("`" + p + "` is not a folder");
  }
  // Without a GPU, the folders may hold no case: gpu_cases --ptx-only-without-gpu writes no
  // manifest where there is no GPU to run one.
  if (weft_init() != WEFT_OK) {
    std::printf("skipped: %s\n", weft_last_error());
    return 77;
  }
  std::vector<std::string> dirs;
  for (const std::string& p : paths) {
    std::vector<std::string> found = CaseDirs(p);
    if (found.empty()) Usage("`" + p + "` holds no case (no manifest.json in it or in its folders)");
    dirs.insert(dirs.end(), found.begin(), found.end());
  }
  weft_device_info device{};
  if (weft_device_get_info(&device) != WEFT_OK) {
    std::printf("FAIL: %s\n", weft_last_error());
    return 1;
  }
  std::printf("gpu_check: %zu cases on %s (sm_%d%d)\n", dirs.size(), device.name, device.sm_major, device.sm_minor);
  int passed = 0, failed = 0, skipped = 0;
  for (const std::string& dir : dirs) {
    switch (CheckCase(dir, options, device)) {
      case Outcome::Pass:
        ++passed;
        break;
      case Outcome::Fail:
        ++failed;
        break;
      case Outcome::Skip:
        ++skipped;
        break;
    }
  }
  std::printf("gpu_check: %d passed, %d failed, %d skipped\n", passed, failed, skipped);
  weft_shutdown();
  return failed ? 1 : 0;
}
