// The atom tables; see atoms.h for where the numbers come from.
//
// Each TV layout below is (thread, value) -> row + rows * col. Notation in comments: g = groupID =
// lane / 4, t = threadID_in_group = lane % 4, w = warp within the warpgroup, i = value index.
#include "layout/atoms.h"

#include <algorithm>

namespace weft::layout {

namespace {

IntTuple T(std::initializer_list<IntTuple> elems) {
  return IntTuple::Tuple(elems);
}

TvLayout Tv(IntTuple shape, IntTuple stride, std::int64_t rows, std::int64_t cols) {
  auto tv = MakeTvLayout(Layout(std::move(shape), std::move(stride)), rows, cols);
  return *tv;  // the tables are checked by the unit tests; a bad entry fails there, not here
}

AtomOperand Op(std::string name, TvLayout tv, int bits, bool in_registers = true) {
  return AtomOperand{std::move(name), std::move(tv), bits, in_registers};
}

// C/D of m16n8 (f32 or s32): row = g + 8*(i>=2), col = 2t + (i&1).
// i = v0 + 2 v1: v0 moves col by 1, v1 moves row by 8. Index = row + 16 col.
TvLayout MmaC16x8() {
  return Tv(T({T({4, 8}), T({2, 2})}), T({T({32, 1}), T({16, 8})}), 16, 8);
}

Atom MmaF16(const std::string& type) {
  Atom a;
  a.name = "mma.m16n8k16." + type;
  a.instruction = "mma.sync.aligned.m16n8k16.row.col.f32." + type + "." + type + ".f32";
  a.target = "sm_80";
  a.m = 16, a.n = 8, a.k = 16;
  // A 16x16: row = g + 8*((i>>1)&1), col = 2t + (i&1) + 8*(i>=4); i = v0 + 2 v1 + 4 v2.
  a.operands.push_back(Op("A", Tv(T({T({4, 8}), T({2, 2, 2})}), T({T({32, 1}), T({16, 8, 128})}), 16, 16), 16));
  // B 16x8 (K x N): row = 2t + (i&1) + 8*(i>=2), col = g; index = row + 16 col.
  a.operands.push_back(Op("B", Tv(T({T({4, 8}), T({2, 2})}), T({T({2, 16}), T({1, 8})}), 16, 8), 16));
  a.operands.push_back(Op("C", MmaC16x8(), 32));
  a.note = "f32 accumulators; A row-major, B column-major fragments in four/two .b32 registers";
  return a;
}

Atom MmaS8() {
  Atom a;
  a.name = "mma.m16n8k32.s8";
  a.instruction = "mma.sync.aligned.m16n8k32.row.col.s32.s8.s8.s32";
  a.target = "sm_80";
  a.m = 16, a.n = 8, a.k = 32;
  // A 16x32: row = g + 8*((i>>2)&1), col = 4t + (i&3) + 16*(i>=8); i = v0 + 4 v1 + 8 v2.
  a.operands.push_back(Op("A", Tv(T({T({4, 8}), T({4, 2, 2})}), T({T({64, 1}), T({16, 8, 256})}), 16, 32), 8));
  // B 32x8: row = 4t + (i&3) + 16*(i>=4), col = g; index = row + 32 col.
  a.operands.push_back(Op("B", Tv(T({T({4, 8}), T({4, 2})}), T({T({4, 32}), T({1, 16})}), 32, 8), 8));
  a.operands.push_back(Op("C", MmaC16x8(), 32));
  a.note = "s32 accumulators";
  return a;
}

Atom Wgmma(int n, const std::string& type) {
  Atom a;
  a.name = "wgmma.m64n" + std::to_string(n) + "k16." + type;
  a.instruction = "wgmma.mma_async.sync.aligned.m64n" + std::to_string(n) + "k16.f32." + type + "." + type;
  a.target = "sm_90a";
  a.threads = 128;
  a.m = 64, a.n = n, a.k = 16;
  // A from registers, 64x16: row = 16w + g + 8*((i>>1)&1), col = 2t + (i&1) + 8*(i>=4);
  // threads (t, g, w) = lane % 4, lane / 4, warp; values i = v0 + 2 v1 + 4 v2. Index = row + 64 col.
  a.operands.push_back(Op("A", Tv(T({T({4, 8, 4}), T({2, 2, 2})}), T({T({128, 1, 16}), T({64, 8, 512})}), 64, 16), 16));
  // D 64xN: row = 16w + g + 8*((i>>1)&1), col = 8*(i>>2) + 2t + (i&1); i = v0 + 2 v1 + 4 v2.
  a.operands.push_back(
      Op("C", Tv(T({T({4, 8, 4}), T({2, 2, n / 8})}), T({T({128, 1, 16}), T({64, 8, 512})}), 64, n), 32));
  a.note = "B (and A in the .SS form) come from shared memory through descriptors: see WgmmaSmemTile";
  return a;
}

// ldmatrix/stmatrix .xN: N 8x8 b16 matrices; the stored tile is 8N rows of 16 bytes, row r at the
// address lane r supplies. Registers: matrix j in register j, thread l holds row l/4, cols 2(l%4),+1;
// with .trans it holds col l/4, rows 2(l%4),+1 of the stored matrix.
Atom Matrix(const std::string& op, int count, bool trans) {
  Atom a;
  a.name = op + ".x" + std::to_string(count) + (trans ? ".trans" : "");
  a.instruction = op + ".sync.aligned.m8n8.x" + std::to_string(count) + (trans ? ".trans" : "") + ".shared.b16";
  a.target = op == "ldmatrix" ? "sm_80" : "sm_90a";
  a.bytes_per_thread = 4 * count;
  a.alignment = 16;
  std::int64_t rows = 8 * count;
  // Row addresses: lanes 0..8N-1, one 16-byte row each (index = row + rows * col).
  TvLayout memory = Tv(T({rows, 8}), T({1, rows}), rows, 8);
  // Registers: thread (t = l%4, g = l/4), values (e, j): element e of register j.
  TvLayout regs = trans ? Tv(T({T({4, 8}), T({2, count})}), T({T({2, rows}), T({1, 8})}), rows, 8)
                        : Tv(T({T({4, 8}), T({2, count})}), T({T({2 * rows, 1}), T({rows, 8})}), rows, 8);
  bool load = op == "ldmatrix";
  a.operands.push_back(Op(load ? "src" : "dst", memory, 16, false));
  a.operands.push_back(Op(load ? "dst" : "src", regs, 16, true));
  a.note = "matrix j is rows 8j..8j+7 of the tile; lanes 8N..31 supply no address";
  return a;
}

Atom Vector(const std::string& name, const std::string& instruction, int bytes, const std::string& target,
            const std::string& note) {
  Atom a;
  a.name = name;
  a.instruction = instruction;
  a.target = target;
  a.threads = 1;
  a.bytes_per_thread = bytes;
  a.alignment = bytes;
  // One thread moves `bytes` contiguous bytes: values are bytes here (the element type is the caller's).
  TvLayout tv = Tv(T({1, bytes}), T({0, 1}), bytes, 1);
  a.operands.push_back(Op("src", tv, 8, false));
  a.operands.push_back(Op("dst", tv, 8, false));
  a.note = note;
  return a;
}

std::vector<Atom> BuildAtoms() {
  std::vector<Atom> atoms;
  atoms.push_back(MmaF16("f16"));
  atoms.push_back(MmaF16("bf16"));
  atoms.push_back(MmaS8());
  for (const char* type : {"f16", "bf16"})
    for (int n = 8; n <= 256; n += 8) atoms.push_back(Wgmma(n, type));
  for (const char* op : {"ldmatrix", "stmatrix"})
    for (int count : {1, 2, 4})
      for (bool trans : {false, true}) atoms.push_back(Matrix(op, count, trans));
  for (int bytes : {4, 8, 16})
    atoms.push_back(Vector("cp.async.ca." + std::to_string(bytes),
                           "cp.async.ca.shared.global [dst], [src], " + std::to_string(bytes), bytes, "sm_80",
                           "global -> shared, cached in L1"));
  atoms.push_back(Vector("cp.async.cg.16", "cp.async.cg.shared.global [dst], [src], 16", 16, "sm_80",
                         "global -> shared, L2 only; 16 bytes is the only size .cg accepts"));
  const char* kSuffix[] = {"b32", "v2.b32", "v4.b32"};
  for (int i = 0; i < 3; ++i) {
    int bytes = 4 << i;
    for (const char* op : {"ld", "st"}) {
      for (const char* space : {"shared", "global"}) {
        atoms.push_back(Vector(std::string(op) + "." + space + "." + kSuffix[i],
                               std::string(op) + "." + space + "." + kSuffix[i], bytes, "sm_80",
                               "vector access of " + std::to_string(bytes) + " bytes, aligned to its size"));
      }
    }
  }
  return atoms;
}

}  // namespace

const AtomOperand* Atom::Operand(std::string_view want) const {
  for (const AtomOperand& o : operands)
    if (o.name == want) return &o;
  return nullptr;
}

const std::vector<Atom>& Atoms() {
  static const std::vector<Atom> atoms = BuildAtoms();
  return atoms;
}

Result<Atom> FindAtom(std::string_view name) {
  for (const Atom& a : Atoms())
    if (a.name == name) return a;
  std::string similar;
  int shown = 0;
  std::string_view prefix = name.substr(0, std::min<std::size_t>(name.size(), name.find('.')));
  for (const Atom& a : Atoms()) {
    if (shown < 6 && a.name.rfind(prefix, 0) == 0) {
      similar += (shown ? ", " : "") + ("`" + a.name + "`");
      ++shown;
    }
  }
  return MakeError("no atom named `" + std::string(name) + "`" +
                   (similar.empty() ? std::string(" (`--tv list` names them)") : " (similar: " + similar + ")"));
}

Result<SwizzledLayout> WgmmaSmemTile(SwizzleMode mode, Major major, int element_bytes, int rows, int k) {
  auto sw = SwizzleFor(mode, element_bytes);
  if (!sw) return Error{sw.error()};
  if (element_bytes != 1 && element_bytes != 2 && element_bytes != 4)
    return MakeError("wgmma operands have 1-, 2- or 4-byte elements, not " + std::to_string(element_bytes));
  int width_bytes = mode == SwizzleMode::kNone  ? 16
                    : mode == SwizzleMode::k32B ? 32
                    : mode == SwizzleMode::k64B ? 64
                                                : 128;
  std::int64_t w = width_bytes / element_bytes;  // elements along the contiguous direction of one atom
  std::string what = "the " + ToString(mode) + " swizzle atom";
  if (major == Major::kK) {
    if (rows % 8 != 0 || k % w != 0)
      return MakeError("a K-major " + std::to_string(rows) + "x" + std::to_string(k) +
                       " tile is not a whole number of " + what + " (8 x " + std::to_string(w) + " elements)");
    // ((8, rows/8), (w, k/w)) : ((w, 8w), (1, rows*w))
    Layout l(T({T({8, rows / 8}), T({w, k / w})}), T({T({w, 8 * w}), T({1, rows * w})}));
    return SwizzledLayout(*sw, 0, l);
  }
  if (rows % w != 0 || k % 8 != 0)
    return MakeError("an MN-major " + std::to_string(rows) + "x" + std::to_string(k) +
                     " tile is not a whole number of " + what + " (" + std::to_string(w) + " x 8 elements)");
  // ((w, rows/w), (8, k/8)) : ((1, 8w), (w, 8*rows))
  Layout l(T({T({w, rows / w}), T({8, k / 8})}), T({T({1, 8 * w}), T({w, 8 * std::int64_t{rows}})}));
  return SwizzledLayout(*sw, 0, l);
}

std::uint64_t GmmaDescriptor::Encode(std::uint32_t start) const {
  std::uint64_t d = 0;
  d |= std::uint64_t((start >> 4) & 0x3FFF);
  d |= std::uint64_t((leading_byte_offset >> 4) & 0x3FFF) << 16;
  d |= std::uint64_t((stride_byte_offset >> 4) & 0x3FFF) << 32;
  d |= std::uint64_t(layout_type & 0x3) << 62;
  return d;
}

Result<GmmaDescriptor> GmmaDescriptorFor(const SwizzledLayout& tile, SwizzleMode mode, Major major, int element_bytes) {
  int chunk = 16 / element_bytes;  // elements in 16 bytes
  int w = mode == SwizzleMode::kNone ? 1 : mode == SwizzleMode::k32B ? 2 : mode == SwizzleMode::k64B ? 4 : 8;
  auto expect_swizzle = SwizzleFor(mode, element_bytes);
  if (!expect_swizzle || !(tile.swizzle() == *expect_swizzle))
    return MakeError("tile `" + ToString(tile) + "` does not carry the " + ToString(mode) + " swizzle");
  const Layout& l = tile.layout();
  auto at = [&](std::int64_t r, std::int64_t c) -> std::int64_t {
    auto o = l.Evaluate(T({r, c}));
    return o.ok() ? *o : -1;
  };
  auto units = [&](std::int64_t elements) { return elements * element_bytes / 16; };  // 16-byte units
  GmmaDescriptor d;
  d.layout_type = mode == SwizzleMode::kNone ? 0 : mode == SwizzleMode::k128B ? 1 : mode == SwizzleMode::k64B ? 2 : 3;
  auto fail = [&](const std::string& why) {
    return MakeError("tile `" + ToString(tile) + "` is not a canonical " + ToString(mode) +
                     (major == Major::kK ? " K-major" : " MN-major") + " wgmma layout: " + why);
  };
  if (major == Major::kK) {
    std::int64_t s00 = units(at(1, 0)), s10 = units(at(0, chunk)), s01 = units(at(8, 0));
    if (s00 != w)
      return fail("consecutive rows are " + std::to_string(s00) + " 16-byte units apart, not " + std::to_string(w));
    if (mode != SwizzleMode::kNone && s10 != 1) return fail("the two 16-byte halves of a k16 row are not adjacent");
    d.stride_byte_offset = s01 * 16;
    d.leading_byte_offset = mode == SwizzleMode::kNone ? s10 * 16 : 16;
    return d;
  }
  std::int64_t s00 = units(at(chunk, 0)), s10 = units(at(0, 1)), s01 = units(at(chunk * w, 0)), s11 = units(at(0, 8));
  if (mode != SwizzleMode::kNone && s00 != 1) return fail("consecutive 16-byte chunks along M/N are not adjacent");
  if (s10 != w)
    return fail("consecutive k are " + std::to_string(s10) + " 16-byte units apart, not " + std::to_string(w));
  d.stride_byte_offset = (mode == SwizzleMode::kNone ? s01 : s11) * 16;
  d.leading_byte_offset = (mode == SwizzleMode::kNone ? s11 : s01) * 16;
  return d;
}

Result<std::int64_t> CheckTmaBox(const TmaBox& box) {
  std::size_t rank = box.box_dims.size();
  if (rank < 1 || rank > 5) return MakeError("a TMA box has 1 to 5 dimensions, got " + std::to_string(rank));
  if (box.global_dims.size() != rank) return MakeError("the box and the global tensor have different ranks");
  if (box.global_strides_bytes.size() + 1 != rank)
    return MakeError("a rank-" + std::to_string(rank) + " tensor map takes " + std::to_string(rank - 1) +
                     " global strides");
  if (box.element_bytes != 1 && box.element_bytes != 2 && box.element_bytes != 4 && box.element_bytes != 8)
    return MakeError("TMA elements are 1, 2, 4 or 8 bytes");
  if (box.global_address % 16 != 0) return MakeError("the global address must be 16-byte aligned");
  std::int64_t bytes = box.element_bytes;
  for (std::size_t i = 0; i < rank; ++i) {
    std::int64_t b = box.box_dims[i];
    if (b < 1 || b > 256)
      return MakeError("box dimension " + std::to_string(i) + " is " + std::to_string(b) + ": it must be 1 to 256");
    if (box.global_dims[i] < 1 || box.global_dims[i] > (std::int64_t{1} << 32))
      return MakeError("global dimension " + std::to_string(i) + " must be 1 to 2^32");
    std::int64_t es = i < box.element_strides.size() ? box.element_strides[i] : 1;
    if (es < 1 || es > 8) return MakeError("element stride " + std::to_string(i) + " must be 1 to 8");
    bytes *= b;
  }
  for (std::size_t i = 0; i + 1 < rank; ++i) {
    std::int64_t s = box.global_strides_bytes[i];
    if (s % 16 != 0 || s <= 0 || s >= (std::int64_t{1} << 40))
      return MakeError("global stride " + std::to_string(i + 1) + " is " + std::to_string(s) +
                       " bytes: it must be a positive multiple of 16 below 2^40");
  }
  std::int64_t inner = box.box_dims[0] * box.element_bytes;
  if (inner % 16 != 0)
    return MakeError("the inner box dimension is " + std::to_string(inner) + " bytes: it must be a multiple of 16");
  std::int64_t span = box.swizzle == SwizzleMode::kNone  ? 0
                      : box.swizzle == SwizzleMode::k32B ? 32
                      : box.swizzle == SwizzleMode::k64B ? 64
                                                         : 128;
  if (span && inner > span)
    return MakeError("the inner box dimension is " + std::to_string(inner) + " bytes, wider than the " +
                     ToString(box.swizzle) + " swizzle");
  std::int64_t align = span ? 8 * span : 128;
  if (box.smem_address % align != 0)
    return MakeError("the shared-memory destination must be " + std::to_string(align) + "-byte aligned" +
                     (span ? " for the " + ToString(box.swizzle) + " swizzle" : std::string()));
  return bytes;
}

}  // namespace weft::layout
