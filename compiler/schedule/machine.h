// The numbers the scheduler and the cost model use: one table per GPU, each number with its source
// (docs/scheduling.md has the table with the same sources). Times are in SM cycles at `clock_ghz`.
//
// Sources:
//   [gpu]   ../shared/design/gpu.md: dense bf16 peak ~989 TFLOP/s (H100 SXM and H200 alike), HBM
//           3.35 TB/s (H100) and 4.8 TB/s (H200), 4220 GB/s measured device-to-device copy (H200).
//   [wp]    NVIDIA H100 Tensor Core GPU Architecture whitepaper: 132 SMs (SXM5), 4 SM sub-partitions
//           (SMSPs) per SM, 16 special-function units per SM (4 per SMSP), 128 FP32 lanes per SM,
//           65536 32-bit registers per SM, 228 KB shared memory per SM (227 KB per block).
//   [derived] clock: 989e12 / (132 SMs * 4096 flop/cycle) = 1.83 GHz, i.e. the dense bf16 wgmma rate
//           is 4096 flop/cycle/SM (1024 FMA) at the clock that gives the published peak.
//   [mb]    Published microbenchmarks of Hopper (Luo et al., "Benchmarking and Dissecting the Nvidia
//           Hopper GPU Architecture", IPDPS 2024; Chips and Cheese, "Nvidia's H100: Funny L2, and Tons
//           of Bandwidth", 2023): global-memory latency of several hundred cycles (we take 600 for a
//           TMA box from L2/HBM), an L2 bandwidth of several TB/s (we take 40 B/cycle/SM, 9.7 TB/s
//           over 132 SMs: an assumption to calibrate on the device), wgmma's pipeline latency on top
//           of its throughput time (we take 128 cycles), mma.sync at about half of wgmma's rate on
//           H100 (consistent with the sm_80 path's 0.55x cuBLAS in docs/codegen.md).
//   [est]   Estimates of ours, not measured: 40 cycles for thread 0 to issue a TMA copy (plus 10 a
//           box), 32 cycles of a block barrier, 24 cycles of dependent-ALU latency at the end of a
//           chain of vector work, 2 us from a launch to its first block and from its last block to
//           the end event (CUDA events around one launch).
//   [h200]  Checked on an H200 (bench/results/2026-11-26-h200-cost-model.md): gemm_bf16 at 8192^3
//           runs at 800 TFLOP/s, 48 KB of TMA copies a 1024-cycle k-step, so the copy engine feeds
//           about 40 B/cycle/SM (the [mb] assumption) and bounds it. (That file's attention points
//           are of the lowering before staged products and ping-pong; only the gemm still checks.)
//   [h100]  Fitted on an H100 (bench/results/2026-11-26-h100-cost-model.md, attention with staged
//           P V and ping-pong): one warpgroup's vector work, a lone warp on each sub-partition, issues
//           an instruction every 2 cycles (dependent FP32 chains of 4 cycles' latency, two
//           independent rows a thread): the head-dim-64 points, causal against non-causal, where the
//           mask's arithmetic costs ~570 cycles an iteration for 320 instructions a warp. With it
//           and the table above, all 15 benchmarked cases within 25%.
#pragma once

#include <cstdint>
#include <string_view>

namespace weft::schedule {

// The hardware units a pipeline's operations occupy (one of each per SM).
enum class Unit : std::uint8_t {
  kCopy,        // the TMA engine (sm_90a) or the cp.async path (sm_80): bytes from L2 into shared memory
  kTensorCore,  // wgmma / mma.sync
  kSfu,         // the special-function unit: ex2 (exp)
  kAlu,         // FP32/INT pipes: elementwise arithmetic, reductions' shuffles, conversions, moves
};
inline constexpr int kUnits = 4;
std::string_view Spelling(Unit unit);  // "copy engine", "tensor cores", "SFU", "ALU"

struct Machine {
  std::string_view name;                         // "H100 SXM"
  int sms = 132;                                 // [wp]
  double clock_ghz = 1.83;                       // [derived]
  std::int64_t wgmma_flops_per_cycle = 4096;     // [derived] dense bf16/f16, per SM
  std::int64_t mma_sync_flops_per_cycle = 2048;  // [mb]
  std::int64_t sfu_lanes = 16;                   // [wp] ex2 results per cycle per SM
  std::int64_t smsps = 4;                        // [wp] one warp instruction per cycle each
  std::int64_t copy_bytes_per_cycle = 40;        // [mb], [h200] L2 -> shared, per SM
  double hbm_bytes_per_second = 3.35e12;         // [gpu]
  std::int64_t copy_latency = 600;               // [mb] a TMA box or cp.async group, issue to landed
  std::int64_t mma_latency = 128;                // [mb] wgmma pipeline latency beyond throughput
  std::int64_t tma_issue = 40;                   // [est] per copy, plus 10 a box
  std::int64_t barrier = 32;                     // [est] bar.sync of the block
  std::int64_t alu_latency = 24;                 // [est]
  double lone_warp_issue = 2;                    // [h100] cycles between a lone warp's instructions
  std::int64_t registers_per_sm = 65536;         // [wp]
  std::int64_t shared_per_block = 227 * 1024;    // [wp]; 163 KB for sm_80 code (synth's budget)
  std::int64_t shared_per_sm = 228 * 1024;       // [wp] what the blocks a multiprocessor holds share
  double launch_seconds = 2e-6;                  // [est] a launch's fixed time
};

const Machine& H100();  // H100 SXM5
const Machine& H200();  // H100's SM at 4.8 TB/s HBM [gpu]

}  // namespace weft::schedule
