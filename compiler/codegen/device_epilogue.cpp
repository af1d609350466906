// The device emitter's stores (device_emitter.h): each thread's own vectors, or, on sm_90a,
// through shared memory and a TMA store (docs/codegen.md, "Epilogues through shared memory").
#include "codegen/device_emitter.h"

namespace weft::codegen::device_emit {

void Emitter::EmitStore(OpId id, const tile::op::Store& s) {
  if (auto it = store_maps_.find(id.index); it != store_maps_.end()) return EmitTmaStore(id, s, it->second);
  const synth::OpChoice& choice = plan_.ops.at(id.index);
  const auto& dst = slots_.at(s.dst.index).global;
  if (!dst) Fail("`store` into " + Name(s.dst) + ", which is not a global tile");
  const bool stored = dst->in_place && dst->param >= 0 && k_.params[static_cast<std::size_t>(dst->param)].out &&
                      !dst->in_place->order.empty();
  if (dst->in_place && !stored) Fail("`store` into " + Name(s.dst) + ", which is read in place through a view");
  if (Val(s.src).space != tile::Space::Reg) Fail("`store` of a shared tile");
  Dtype d = Val(s.src).dtype;
  int e = ElementBytes(d);
  int rank = static_cast<int>(Val(s.src).shape.size());
  if (rank != 2) Fail("`store` of a tile of rank other than 2");
  llvm::Type* gptr = llvm::PointerType::get(ctx_, 1);
  llvm::Value* ld = dst->strides[dst->extents.size() - 2];
  const auto& regs = slots_.at(s.src.index).regs;
  std::optional<StoredStrides> layout;
  if (stored) layout = StoredLayout(*dst);
  auto address = [&](llvm::Value* row, llvm::Value* col) {
    if (layout) return b_.CreateIntToPtr(StoredAddress(*dst, *layout, row, col, e), gptr);
    llvm::Value* off =
        b_.CreateAdd(b_.CreateMul(b_.CreateZExt(row, b_.getInt64Ty()), ld), b_.CreateZExt(col, b_.getInt64Ty()));
    return b_.CreateIntToPtr(b_.CreateAdd(dst->address, b_.CreateMul(off, I64(e))), gptr);
  };
  if (choice.copy && choice.vector_bytes > 0) {
    const TvLayout& copy = *choice.copy;
    for (std::int64_t v = 0; v < Flat(copy).values; ++v) {
      auto [row, col] = TvElement(copy, v);
      b_.CreateAlignedStore(StoreVector(s.src, choice, v), address(row, col),
                            llvm::Align(static_cast<std::uint64_t>(choice.vector_bytes)));
    }
    return;
  }
  // Each element by the thread that holds it: the layout's own elements, one store each.
  const TvLayout& tv = Tv(s.src);
  for (std::int64_t v = 0; v < Flat(tv).values; ++v) {
    auto [row, col] = TvElement(tv, v);
    b_.CreateAlignedStore(regs.at(static_cast<std::size_t>(v)), address(row, col),
                          llvm::Align(static_cast<std::uint64_t>(e)));
  }
}

Emitter::StoredStrides Emitter::StoredLayout(const GlobalSlot& dst) {
  const tile::InPlace& l = *dst.in_place;
  const std::size_t q = dst.first.size();
  if (l.inner.size() != q) Fail("a store through a layout whose modes do not fit the tensor's rank");
  StoredStrides out;
  // Each mode's extent: the inner ones constants, an axis's outermost its extent over theirs.
  for (std::size_t a = 0; a < q; ++a) {
    std::int64_t inside = 1;
    for (std::int64_t x : l.inner[a]) inside *= x;
    out.extents.push_back(inside > 1 ? b_.CreateUDiv(dst.extents[a], I64(inside)) : dst.extents[a]);
    for (std::int64_t x : l.inner[a]) out.extents.push_back(I64(x));
  }
  if (l.order.size() != out.extents.size()) Fail("a store through a layout whose order does not name each mode");
  // Dense in `order`: the innermost stride 1, each one out the one inside times its extent.
  out.strides.assign(out.extents.size(), nullptr);
  llvm::Value* stride = I64(1);
  for (std::size_t p = l.order.size(); p-- > 0;) {
    const std::size_t m = static_cast<std::size_t>(l.order[p]);
    if (m >= out.strides.size() || out.strides[m]) Fail("a store through a layout whose order repeats a mode");
    out.strides[m] = stride;
    stride = b_.CreateMul(stride, out.extents[m]);
  }
  // The parameter's own address: the layout is over the whole tensor.
  out.base = slots_.at(k_.params.at(static_cast<std::size_t>(dst.param)).value.index).global->address;
  return out;
}

llvm::Value* Emitter::StoredAddress(const GlobalSlot& dst, const StoredStrides& layout, llvm::Value* row,
                                    llvm::Value* col, int element_bytes) {
  const tile::InPlace& l = *dst.in_place;
  const std::size_t q = dst.first.size();
  llvm::Value* offset = I64(0);
  std::size_t mode = 0;
  for (std::size_t a = 0; a < q; ++a) {
    llvm::Value* x = dst.first[a];
    if (a + 2 == q) x = b_.CreateAdd(x, b_.CreateZExt(row, b_.getInt64Ty()));
    if (a + 1 == q) x = b_.CreateAdd(x, b_.CreateZExt(col, b_.getInt64Ty()));
    const std::vector<std::int64_t>& inner = l.inner[a];
    // Mode j's index: (x / (extents of the modes inside j)) % (j's extent), the outermost unbounded.
    for (std::size_t j = 0; j <= inner.size(); ++j, ++mode) {
      std::int64_t within = 1;
      for (std::size_t i = j; i < inner.size(); ++i) within *= inner[i];
      llvm::Value* index = within > 1 ? b_.CreateUDiv(x, I64(within)) : x;
      if (j > 0) index = b_.CreateURem(index, I64(inner[j - 1]));
      offset = b_.CreateAdd(offset, b_.CreateMul(index, layout.strides[mode]));
    }
  }
  return b_.CreateAdd(layout.base, b_.CreateMul(offset, I64(element_bytes)));
}

llvm::Value* Emitter::StoreVector(ValueId src, const synth::OpChoice& choice, std::int64_t v) {
  Dtype d = Val(src).dtype;
  int n = choice.vector_bytes / ElementBytes(d);
  int rank = static_cast<int>(Val(src).shape.size());
  const FlatTv& fc = Flat(*choice.copy);
  const auto& regs = slots_.at(src.index).regs;
  llvm::Value* vec = llvm::UndefValue::get(llvm::FixedVectorType::get(ElemType(d), static_cast<unsigned>(n)));
  for (int i = 0; i < n; ++i) {
    int idx = UniformValue(
        src, [&](std::int64_t t) { return Advance(fc.At(t, v), i, rank); }, "`store`");
    vec = b_.CreateInsertElement(vec, regs.at(static_cast<std::size_t>(idx)), static_cast<std::uint64_t>(i));
  }
  return vec;
}

bool Emitter::ExtentMultiple(const core::Dim& d, std::int64_t multiple) const {
  if (auto c = d.AsConstant()) return *c % multiple == 0;
  for (const core::DimFact& f : k_.where) {
    if (f.relation != core::RelOp::kEq || !f.rhs.IsZero()) continue;
    for (std::int64_t m = multiple; m <= 4096; m += multiple)
      if (auto mod = core::Mod(d, m); mod && *mod == f.lhs) return true;
  }
  return false;
}

std::optional<TensorMapSpec> Emitter::TmaStoreSpec(OpId id, const tile::op::Store& s) {
  // Persistent kernels' producers run into the next block's copies over the same bytes.
  if (plan_.target != synth::Target::Sm90a || !lowering_.tma_store) return std::nullopt;
  const tile::Value& src = Val(s.src);
  if (src.space != tile::Space::Reg || src.shape.size() != 2) return std::nullopt;
  int e = ElementBytes(src.dtype);
  const synth::OpChoice& choice = plan_.ops.at(id.index);
  if ((e != 2 && e != 4) || !choice.copy || choice.vector_bytes <= 0 || 16 % choice.vector_bytes) return std::nullopt;
  // Only where each thread's stores write under 8 bytes, so a quad's fill less than a 32-byte
  // sector (bf16 and f16 accumulators): there the boxes' whole lines pay (gemm_bf16_bf16 2048^3
  // 1.22x faster on an H200); 8-byte stores fill sectors already, and the barrier and the wait for
  // the boxes to be read cost more (attention_d128 with f32 outputs, 1k tokens: 5% slower).
  if (choice.vector_bytes >= 8) return std::nullopt;
  // Boxes of 128 bytes a row (the widest the 128-byte swizzle takes) side by side, at most 256
  // rows, over the plan's tiles.
  RowCol ext = Extent(s.src);
  std::int64_t box_cols = 128 / e;
  if (ext.row % 8 || ext.row > 256 || ext.col % box_cols || ext.row * ext.col * e > plan_.shared_bytes)
    return std::nullopt;
  // The `out` tensor: a parameter or a `tile` of one, its rows whole multiples of 16 bytes (the
  // tensor map's stride) whatever sizes the kernel admits.
  int param = ParamOf(s.dst);
  if (param < 0) return std::nullopt;
  const auto& shape = Val(k_.params[static_cast<std::size_t>(param)].value).shape;
  if (shape.size() < 2 || !ExtentMultiple(shape.back(), 16 / e)) return std::nullopt;
  // Stored through a layout (tile::InPlace::order): a map of its modes, the rows one mode, a box
  // never straddling the last axis's inner modes; else each thread's own stores.
  int rank = 0;
  if (const auto& l = k_.params[static_cast<std::size_t>(param)].in_place) {
    if (l->order.empty() || l->inner.size() != shape.size() || !l->inner[shape.size() - 2].empty()) return std::nullopt;
    rank = static_cast<int>(InPlaceMapDims(l->inner).size());
    if (rank > 5 || (!l->inner.back().empty() && l->inner.back().back() % box_cols != 0)) return std::nullopt;
  }
  // No op after it touches shared memory.
  bool after = false;
  for (OpId op : k_.body) {
    if (op == id) after = true;
    if (!after || op == id) continue;
    const tile::Op& o = k_.Get(op);
    if (std::holds_alternative<tile::op::Loop>(o.node)) return std::nullopt;
    for (ValueId v : tile::Operands(o))
      if (Val(v).space == tile::Space::Shared) return std::nullopt;
    for (ValueId v : o.results)
      if (Val(v).space == tile::Space::Shared) return std::nullopt;
  }
  return TensorMapSpec{param, box_cols, ext.row, layout::SwizzleMode::k128B, rank};
}

void Emitter::EmitTmaStore(OpId id, const tile::op::Store& s, int map) {
  const synth::OpChoice& choice = plan_.ops.at(id.index);
  const auto& dst = slots_.at(s.dst.index).global;
  if (!dst || dst->first.size() < 2) Fail("a TMA store into " + Name(s.dst) + ", which is not a view of a parameter");
  const TensorMapSpec& spec = map_specs_.at(static_cast<std::size_t>(map));
  int e = ElementBytes(Val(s.src).dtype);
  std::int64_t box_bytes = spec.box_rows * 128;
  // Every thread is done with shared memory, and an earlier TMA store has read its boxes.
  Barrier();
  // Element (row, col) lands in box col / box_cols, at byte (col % box_cols) * e of its 128-byte
  // row, whose 16-byte chunks are XORed with row % 8 (TMA's 128-byte swizzle; boxes 1024-aligned).
  const TvLayout& copy = *choice.copy;
  for (std::int64_t v = 0; v < Flat(copy).values; ++v) {
    auto [row, col] = TvElement(copy, v);
    llvm::Value* in_row = b_.CreateMul(b_.CreateURem(col, I32(spec.box_cols)), I32(e));
    llvm::Value* swizzled = b_.CreateXor(in_row, b_.CreateShl(b_.CreateAnd(row, I32(7)), I32(4)));
    llvm::Value* offset = b_.CreateAdd(
        b_.CreateAdd(b_.CreateMul(b_.CreateUDiv(col, I32(spec.box_cols)), I32(box_bytes)), b_.CreateMul(row, I32(128))),
        swizzled);
    b_.CreateAlignedStore(StoreVector(s.src, choice, v), b_.CreateGEP(b_.getInt8Ty(), smem_, offset),
                          llvm::Align(static_cast<std::uint64_t>(choice.vector_bytes)));
  }
  hopper::FenceProxyAsync(b_);  // the writes, seen by TMA
  Barrier();
  auto [col, row] = MapCoordinates(*dst);
  llvm::Value* smem = SharedAddress(smem_);
  IfThread0(nullptr, [&] {
    for (std::int64_t box = 0; box * spec.box_cols < Extent(s.src).col; ++box) {
      if (spec.rank > 0) {
        // Stored through a layout: one coordinate per dim of its map, an axis's index split over
        // its modes (as EmitTma's reads in place).
        const int q = static_cast<int>(dst->first.size());
        std::vector<llvm::Value*> coords;
        for (const MapDim& d : InPlaceMapDims(dst->in_place->inner)) {
          llvm::Value* x = dst->first[static_cast<std::size_t>(d.axis)];
          if (d.axis == q - 1) x = b_.CreateAdd(x, I64(box * spec.box_cols));
          coords.push_back(MapCoordinate(x, d, dst->in_place->inner[static_cast<std::size_t>(d.axis)]));
        }
        hopper::TmaStore(b_, maps_.at(static_cast<std::size_t>(map)), coords, b_.CreateAdd(smem, I32(box * box_bytes)));
        continue;
      }
      hopper::TmaStore2d(b_, maps_.at(static_cast<std::size_t>(map)), b_.CreateAdd(col, I32(box * spec.box_cols)), row,
                         b_.CreateAdd(smem, I32(box * box_bytes)));
    }
    hopper::BulkCommit(b_);
    hopper::BulkWaitRead(b_);  // the boxes stay until read: the block's shared memory ends with it
  });
}

llvm::Value* Emitter::MapCoordinate(llvm::Value* x, const MapDim& d, const std::vector<std::int64_t>& inner) {
  if (!inner.empty()) {
    std::int64_t within = 1;
    for (std::size_t j = static_cast<std::size_t>(d.mode); j < inner.size(); ++j) within *= inner[j];
    std::int64_t extent = d.mode > 0 ? inner[static_cast<std::size_t>(d.mode - 1)] : 0;
    if (within > 1) x = b_.CreateUDiv(x, I64(within));
    if (extent > 0) x = b_.CreateURem(x, I64(extent));
  }
  return b_.CreateTrunc(x, b_.getInt32Ty());
}

}  // namespace weft::codegen::device_emit
