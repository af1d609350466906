// The array kernel of a product without a stdlib kernel (array.cpp, step 3): a tiled matrix
// product through shared memory, then the epilogue per output element.
#include "codegen/array_emitter.h"

namespace weft::codegen::array_emit {

// A product without a stdlib kernel: C[.., m, n] = A[.., m, k] B[.., k, n], batch axes
// broadcast. A block computes a kTile x kTile tile of one batch element, each of its 256
// threads 4 x 4 outputs (rows ty + 16 i, columns tx + 16 j); A and B go through shared memory
// kTileK columns / rows at a time (zero past the edges). Each output accumulates its products
// in k order, rounded to the accumulator (f32; f64 for f64; i64 wrapping for integers) and
// added without fusing: the interpreter's sums exactly. The epilogue is then computed per
// output element.
void ArrayEmitter::ProductKernel() {
  out_.device.threads = kThreads;
  NodeId mm;
  for (NodeId id : group_.nodes)
    if (Get(id).kind == Kind::MatMul) mm = id;
  const Node& p = Get(mm);
  const Node& a = Get(p.args[0]);
  const std::vector<Dim>& space = group_.space;
  if (!(p.shape == space)) Refuse("a product whose epilogue has another shape");
  for (NodeId out : group_.outputs)
    if (!(Get(out).shape == space)) Refuse("a product's output of another shape than the product");
  bool to_f32 = p.fn == "matmul_f32";
  Dtype operand = to_f32 ? Dtype::F32 : a.dtype;
  llvm::Type* ct = ComputeType(operand);
  if (operand == Dtype::Bool) Refuse("a product of bool");
  auto elem = static_cast<std::int64_t>(ct->getPrimitiveSizeInBits() / 8);
  out_.device.shared_bytes = 2 * kTileK * kTile * elem;

  std::size_t rank = space.size();
  std::vector<Dim> batch(space.begin(), space.end() - 2);
  Dim m = space[rank - 2], n = space[rank - 1], k = a.shape.back();
  out_.grid = {CeilDiv(n, kTile), CeilDiv(m, kTile), Product(batch, 0, batch.size())};
  llvm::Value* mv = EmitDim(m);
  llvm::Value* nv = EmitDim(n);
  llvm::Value* kv = EmitDim(k);
  llvm::Value* tid = Tid();
  llvm::Value* tx = b_.CreateURem(tid, I64(16));
  llvm::Value* ty = b_.CreateUDiv(tid, I64(16));
  llvm::Value* col0 = b_.CreateMul(Sreg(llvm::Intrinsic::nvvm_read_ptx_sreg_ctaid_x), I64(kTile));
  llvm::Value* row0 = b_.CreateMul(Sreg(llvm::Intrinsic::nvvm_read_ptx_sreg_ctaid_y), I64(kTile));
  ReturnUnless(b_.CreateICmpULT(Sreg(llvm::Intrinsic::nvvm_read_ptx_sreg_ctaid_z), EmitDim(out_.grid[2])));
  Coords batch_coords = Unravel(Sreg(llvm::Intrinsic::nvvm_read_ptx_sreg_ctaid_z), batch);

  // Operand x of shape [.., r, c] at (r, c) of this block's batch element; 0 outside.
  auto operand_at = [&](NodeId x, llvm::Value* r, llvm::Value* c, llvm::Value* rows, llvm::Value* cols) {
    const Node& xn = Get(x);
    llvm::Value* slot = Local(ct, llvm::Constant::getNullValue(ct));
    If(b_.CreateAnd(b_.CreateICmpSLT(r, rows), b_.CreateICmpSLT(c, cols)), [&] {
      std::vector<Dim> from = batch;
      from.push_back(xn.shape[xn.shape.size() - 2]);
      from.push_back(xn.shape.back());
      Coords at = batch_coords;
      at.push_back(Coord{r, false});
      at.push_back(Coord{c, false});
      llvm::Value* v = EmitOne(x, Broadcast(at, from, xn.shape));
      if (to_f32) v = Convert(v, xn.dtype, Dtype::F32);
      b_.CreateStore(ToCompute(v, operand), slot);
    });
    return b_.CreateLoad(ct, slot);
  };
  llvm::Value* a_tile = I64(0);
  llvm::Value* b_tile = I64(kTileK * kTile * elem);
  auto tile_at = [&](llvm::Value* tile, llvm::Value* kk, llvm::Value* x) {
    return SharedAt(b_.CreateAdd(tile, b_.CreateMul(b_.CreateAdd(b_.CreateMul(kk, I64(kTile)), x), I64(elem))));
  };
  std::vector<llvm::Value*> acc;
  for (int i = 0; i < 16; ++i) acc.push_back(Local(ct, llvm::Constant::getNullValue(ct)));
  Loop(I64(0), kv, I64(kTileK), [&](llvm::Value* k0) {
    // Each thread loads 4 elements of each tile: A[row0 + e / 16, k0 + e % 16] into a_tile[e % 16][e / 16],
    // B[k0 + e / 64, col0 + e % 64] into b_tile[e / 64][e % 64], for e = tid + 256 q.
    for (int q = 0; q < kTile * kTileK / kThreads; ++q) {
      llvm::Value* e = b_.CreateAdd(tid, I64(kThreads * q));
      llvm::Value* ar = b_.CreateUDiv(e, I64(kTileK));
      llvm::Value* ak = b_.CreateURem(e, I64(kTileK));
      b_.CreateStore(operand_at(p.args[0], b_.CreateAdd(row0, ar), b_.CreateAdd(k0, ak), mv, kv),
                     tile_at(a_tile, ak, ar));
      llvm::Value* bk = b_.CreateUDiv(e, I64(kTile));
      llvm::Value* bc = b_.CreateURem(e, I64(kTile));
      b_.CreateStore(operand_at(p.args[1], b_.CreateAdd(k0, bk), b_.CreateAdd(col0, bc), kv, nv),
                     tile_at(b_tile, bk, bc));
    }
    Barrier();
    // The tiles hold zeros past k's end; the loop stops at k (they would add nothing).
    llvm::Value* steps = b_.CreateBinaryIntrinsic(llvm::Intrinsic::smin, I64(kTileK), b_.CreateSub(kv, k0));
    Loop(I64(0), steps, I64(1), [&](llvm::Value* kk) {
      std::vector<llvm::Value*> av, bv;
      for (int i = 0; i < 4; ++i) av.push_back(b_.CreateLoad(ct, tile_at(a_tile, kk, b_.CreateAdd(ty, I64(16 * i)))));
      for (int j = 0; j < 4; ++j) bv.push_back(b_.CreateLoad(ct, tile_at(b_tile, kk, b_.CreateAdd(tx, I64(16 * j)))));
      bool f = ct->isFloatingPointTy();
      for (int i = 0; i < 4; ++i) {
        for (int j = 0; j < 4; ++j) {
          llvm::Value* slot = acc[static_cast<std::size_t>(4 * i + j)];
          llvm::Value* prod = f ? b_.CreateFMul(av[i], bv[j]) : b_.CreateMul(av[i], bv[j]);
          llvm::Value* old = b_.CreateLoad(ct, slot);
          b_.CreateStore(f ? b_.CreateFAdd(old, prod) : b_.CreateAdd(old, prod), slot);
        }
      }
    });
    Barrier();
  });
  // The epilogue and the stores, per output element in range.
  llvm::Value* batch_index = Sreg(llvm::Intrinsic::nvvm_read_ptx_sreg_ctaid_z);
  for (int i = 0; i < 4; ++i) {
    for (int j = 0; j < 4; ++j) {
      llvm::Value* r = b_.CreateAdd(row0, b_.CreateAdd(ty, I64(16 * i)));
      llvm::Value* c = b_.CreateAdd(col0, b_.CreateAdd(tx, I64(16 * j)));
      If(b_.CreateAnd(b_.CreateICmpSLT(r, mv), b_.CreateICmpSLT(c, nv)), [&] {
        Coords at = batch_coords;
        at.push_back(Coord{r, false});
        at.push_back(Coord{c, false});
        current_[mm.index] = FromCompute(b_.CreateLoad(ct, acc[static_cast<std::size_t>(4 * i + j)]), p.dtype);
        current_coords_ = at;
        llvm::Value* offset = b_.CreateAdd(b_.CreateMul(b_.CreateAdd(b_.CreateMul(batch_index, mv), r), nv), c);
        for (NodeId out : group_.outputs)
          Store(out, group_.stored && group_.stored->root == out ? OutputOffset(out, at) : offset, EmitOne(out, at));
        current_.erase(mm.index);
      });
    }
  }
  b_.CreateRetVoid();
}

// The element offset of `c` in value `id`, which its group stores through a layout (a QKV
// projection heads-major, graph::Group::stored) where the stdlib kernel that would compute it
// cannot run (its `where` clause fails at run time): each axis's index split over its modes
// (x % extent for the inner ones, constants; the rest for the outermost), each times its stride.
llvm::Value* ArrayEmitter::OutputOffset(NodeId id, const Coords& c) {
  if (!group_.stored || group_.stored->root != id) return Linear(c, Get(id).shape);
  const core::StridedView& layout = group_.stored->layout;
  if (layout.axes.size() != c.size()) Refuse("internal: a stored layout of another rank than its value");
  llvm::Value* offset = EmitDim(layout.offset);
  for (std::size_t a = 0; a < c.size(); ++a) {
    llvm::Value* x = c[a].v;
    const std::vector<core::StridedMode>& modes = layout.axes[a].modes;
    for (std::size_t m = modes.size(); m-- > 0;) {
      llvm::Value* index = x;
      if (m > 0) {
        llvm::Value* extent = EmitDim(modes[m].extent);
        index = b_.CreateURem(x, extent);
        x = b_.CreateUDiv(x, extent);
      }
      offset = b_.CreateAdd(offset, b_.CreateMul(index, EmitDim(modes[m].stride)));
    }
  }
  return offset;
}

}  // namespace weft::codegen::array_emit
