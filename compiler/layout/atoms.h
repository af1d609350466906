// MMA and copy atoms as data: each names its PTX instruction, its thread set and the thread-value
// layouts of its register operands, taken from the PTX ISA's fragment figures ("Matrix fragments for
// mma.m16n8k16", "... mma.m16n8k32", "wgmma .m64nNk16 register fragments", "ldmatrix"). Layout
// synthesis anchors on these; codegen emits the instruction; `weft layout --tv NAME` draws them.
//
// How the tables were written: 1. read the figure's formulas (groupID = lane / 4, threadID_in_group
// = lane % 4, row and col of element a_i); 2. write the value index i in mixed radix, fastest digit
// first, so that each digit moves row or col by a fixed amount; 3. that gives a CuTe layout
// ((4,8[,4]),(digits)):((strides),(strides)) into the column-major tile. The unit tests check each
// layout against the figure's formulas at every (thread, value), and spot entries by hand.
//
// Orientation: A is M x K, B is K x N (as the PTX figures draw B), C/D is M x N; copy tiles are as
// stored. wgmma reads A (optionally) and B from shared memory through descriptors: those operands have
// canonical shared-memory layouts instead of TV layouts (WgmmaSmemTile, GmmaDescriptorFor).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "layout/result.h"
#include "layout/swizzle.h"
#include "layout/tv_layout.h"

namespace weft::layout {

struct AtomOperand {
  std::string name;  // "A", "B", "C" for MMA; "src", "dst" for copies
  TvLayout tv;
  int element_bits = 16;
  bool in_registers = true;  // false for a copy's shared/global side
};

struct Atom {
  std::string name;         // weft's name, e.g. `mma.m16n8k16.bf16`, `ldmatrix.x4.trans`
  std::string instruction;  // the PTX, e.g. `mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32`
  std::string target;       // the first target that has it: `sm_80` or `sm_90a`
  int threads = 32;
  int m = 0, n = 0, k = 0;   // MMA shape (0 for copies)
  int bytes_per_thread = 0;  // copies: bytes each thread moves per instruction
  int alignment = 0;         // copies: required address alignment in bytes
  std::vector<AtomOperand> operands;
  std::string note;
  const AtomOperand* Operand(std::string_view name) const;
};

// Every atom: mma.sync (f16, bf16, s8), wgmma m64nNk16 for N = 8..256 step 8 (f16, bf16; A from
// registers), ldmatrix/stmatrix x1/x2/x4 [.trans], cp.async (ca 4/8/16, cg 16), ld/st.shared
// vectors of 4/8/16 bytes.
const std::vector<Atom>& Atoms();
// @post result's name == name, or an error listing a few similar names
Result<Atom> FindAtom(std::string_view name);

// --- wgmma shared-memory operands ------------------------------------------------------------

enum class Major { kK, kMN };

// The canonical shared-memory tile for a wgmma operand of `rows` (M or N) by `k` elements:
// the swizzle atom (8 rows of the swizzle width for K-major; width x 8 for MN-major) repeated down the
// rows first, then along K (CuTe's tile_to_shape with GMMA::Layout_*_Atom). Offsets are elements.
// @pre rows and k are multiples of the atom's extents; element_bytes in {1, 2, 4}
Result<SwizzledLayout> WgmmaSmemTile(SwizzleMode mode, Major major, int element_bytes, int rows, int k);

// The fields of a wgmma matrix descriptor (PTX "Matrix Descriptor Format"), in bytes before encoding.
struct GmmaDescriptor {
  int layout_type = 0;                   // bits 62-63: 0 no swizzle (interleave), 1 128B, 2 64B, 3 32B
  std::int64_t leading_byte_offset = 0;  // LBO, bits 16-29 (encoded >> 4)
  std::int64_t stride_byte_offset = 0;   // SBO, bits 32-45 (encoded >> 4)
  // The 64-bit descriptor for a tile at shared-memory byte address `start` (bits 0-13: start >> 4).
  std::uint64_t Encode(std::uint32_t start) const;
};
// Reads LBO/SBO off a tile's layout (CuTe's make_gmma_desc): the tile must be canonical for the mode.
Result<GmmaDescriptor> GmmaDescriptorFor(const SwizzledLayout& tile, SwizzleMode mode, Major major, int element_bytes);

// --- TMA --------------------------------------------------------------------------------------

// A TMA box as cuTensorMapEncodeTiled takes it; dims innermost first.
struct TmaBox {
  std::vector<std::int64_t> global_dims;           // elements
  std::vector<std::int64_t> global_strides_bytes;  // for dims 1.. (dim 0 is contiguous)
  std::vector<std::int64_t> box_dims;              // elements
  std::vector<std::int64_t> element_strides;       // traversal strides, 1 by default
  int element_bytes = 2;
  SwizzleMode swizzle = SwizzleMode::kNone;
  std::int64_t global_address = 0;
  std::int64_t smem_address = 0;
};
// Checks the box against the constraints the driver and the hardware impose: rank 1..5; box dims
// 1..256; inner box dim * element bytes a multiple of 16; with a swizzle, the inner box row at most
// the swizzle width; global address 16-byte aligned; global strides multiples of 16 below 2^40;
// element strides 1..8; shared destination 128-byte aligned (1024 with the 128-byte swizzle so the
// pattern lines up with the address bits it XORs). Returns the box's byte count.
Result<std::int64_t> CheckTmaBox(const TmaBox& box);

}  // namespace weft::layout
