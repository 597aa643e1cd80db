//===- KernelsToHost.cpp - run gpu.func kernels on the host ---------------===//
//
// Turns each kernel into a host function that executes the whole grid with
// loop fission (MCUDA, POCL): the kernel body runs as a sequence of loops
// over the CTA's threads, one per stretch of code between two points where
// the threads meet (`norm.row_allreduce`, `gpu.barrier`, the warp-level
// `norm.mma_sync` and `norm.ldmatrix`, the warpgroup-level `norm.wgmma`). A
// thread-dependent value defined in one stretch and used in another lives in a
// per-thread buffer; thread-uniform computations run once per CTA, outside the
// thread loops. Loops that contain a meeting point keep running once per CTA
// and are split the same way inside, and so are branches that whole warps
// take around warp collectives (the roles of a warp-specialized kernel): their
// thread loops run the threads that take them, their collectives the warps
// that do, and a loop in each branch over the same range runs in lockstep
// with the other's (producer first), so that a producer's copies for an
// iteration have landed when the consumers wait for them.
//
// The warp collectives are emulated exactly as the PTX ISA defines their
// fragment layouts: per warp, the 32 lanes' operands are gathered into
// whole matrices, the result is computed on those, and each lane's
// fragment of it is scattered back; `norm.wgmma` is one such product per
// warp (its 16 rows of the warpgroup's 64), A and B read from workgroup
// memory through their layouts. `norm.async_copy` becomes a plain copy
// per thread; its commit and wait, and the wgmma fences, commits and
// waits, have nothing left to do.
//
//===----------------------------------------------------------------------===//

#include "passes/HostPasses.h"

#include "dialects/NormOps.h"

#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/Vector/IR/VectorOps.h"
#include "mlir/IR/IRMapping.h"
#include "mlir/IR/Matchers.h"
#include "mlir/IR/TypeUtilities.h"
#include "mlir/IR/Verifier.h"
#include "mlir/Interfaces/CallInterfaces.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"
#include "mlir/Transforms/RegionUtils.h"
#include "llvm/ADT/TypeSwitch.h"
#include "llvm/Support/FormatVariadic.h"

#include <limits>

namespace mlir::norm {
#define GEN_PASS_DEF_NORMKERNELSTOHOST
#include "passes/HostPasses.h.inc"
} // namespace mlir::norm

using namespace mlir;
using namespace mlir::norm;

constexpr int64_t kWarpSize = 32;

/// Ops at which all threads of a CTA (or of each warp) meet.
static bool isCollective(Operation *op) {
  return isa<RowAllReduceOp, gpu::BarrierOp, NamedBarrierOp, MmaSyncOp,
             LdMatrixOp, WgmmaOp>(op);
}

/// Collectives that a branch whole warps take may hold: those of the
/// threads of one warp (row reductions of at most 32 threads are shuffles)
/// and the named barriers of some warps.
static bool isWarpCollective(Operation *op) {
  if (auto reduce = dyn_cast<RowAllReduceOp>(op))
    return reduce.getGroupSize() <= kWarpSize;
  return isa<MmaSyncOp, LdMatrixOp, WgmmaOp, NamedBarrierOp>(op);
}

static bool containsCollective(Operation *op) {
  return op
      ->walk([](Operation *nested) {
        return isCollective(nested) ? WalkResult::interrupt()
                                    : WalkResult::advance();
      })
      .wasInterrupted();
}

/// Ops that end a stretch of per-thread code: the collectives and the loops
/// and branches that contain one.
static bool isSplitPoint(Operation *op) {
  // A wait where all threads reach it: every thread's code before it runs
  // first (an arrival or copy of a thread after this one included).
  if (isCollective(op) || isa<MbarrierWaitOp>(op))
    return true;
  if (!isa<scf::ForOp, scf::IfOp>(op))
    return false;
  // The loops of a branch around collectives may run in lockstep with the
  // other branch's (HostKernelEmitter::emitSplitIf): where both branches
  // hold loops.
  auto branch = dyn_cast_or_null<scf::IfOp>(op->getParentOp());
  auto holdsLoop = [](Region &region) {
    return !region.empty() &&
           llvm::any_of(region.front(), [](Operation &nested) {
             return isa<scf::ForOp>(nested);
           });
  };
  return containsCollective(op) ||
         (isa<scf::ForOp>(op) && branch && containsCollective(branch) &&
          holdsLoop(branch.getThenRegion()) &&
          holdsLoop(branch.getElseRegion()));
}

/// The host has one address space: memory-space annotations go.
static Type getHostType(Type type) {
  auto memref = dyn_cast<MemRefType>(type);
  if (!memref || !memref.getMemorySpace())
    return type;
  return MemRefType::get(memref.getShape(), memref.getElementType(),
                         memref.getLayout());
}

/// Clones `op` for the host: values in shared memory (views of it) get host
/// types, as their sources have.
static Operation *cloneForHost(OpBuilder &b, Operation &op, IRMapping &map) {
  Operation *copy = b.clone(op, map);
  copy->walk([](Operation *nested) {
    for (Value result : nested->getResults())
      result.setType(getHostType(result.getType()));
    for (Region &region : nested->getRegions())
      for (BlockArgument arg : region.getArguments())
        arg.setType(getHostType(arg.getType()));
  });
  return copy;
}

/// Bytes of dynamic shared memory that `kernel` uses: the end of its
/// furthest view. The host needs views at constant offsets with static
/// shapes to size the buffer that stands for it.
static FailureOr<int64_t> getDynamicSharedBytes(gpu::GPUFuncOp kernel) {
  int64_t bytes = 0;
  WalkResult result = kernel.walk([&](gpu::DynamicSharedMemoryOp memory) {
    for (Operation *user : memory->getUsers()) {
      auto view = dyn_cast<memref::ViewOp>(user);
      APInt shift;
      Type element = view ? view.getType().getElementType() : Type();
      auto vector = dyn_cast_or_null<VectorType>(element);
      if (!view || !matchPattern(view.getByteShift(), m_ConstantInt(&shift)) ||
          !view.getType().hasStaticShape() ||
          !getElementTypeOrSelf(element).isIntOrFloat() ||
          (vector && vector.isScalable())) {
        user->emitOpError()
            << "uses dynamic shared memory in a way the host execution "
               "cannot size; it needs memref.view ops at constant offsets "
               "with static shapes of scalars or fixed-size vectors";
        return WalkResult::interrupt();
      }
      int64_t bits = getElementTypeOrSelf(element).getIntOrFloatBitWidth();
      if (vector)
        bits *= vector.getNumElements();
      int64_t end = shift.getSExtValue() +
                    view.getType().getNumElements() * bits / 8;
      bytes = std::max(bytes, end);
    }
    return WalkResult::advance();
  });
  if (result.wasInterrupted())
    return failure();
  return bytes;
}

/// The CTA size of `kernel`: its `known_block_size` (inherent or as
/// `gpu.known_block_size`) or else `option`; the attribute and a non-zero
/// option must agree.
static FailureOr<int64_t> getBlockSize(gpu::GPUFuncOp kernel, int64_t option) {
  DenseI32ArrayAttr known = kernel.getKnownBlockSizeAttr();
  if (!known)
    known = kernel->getAttrOfType<DenseI32ArrayAttr>(
        gpu::GPUDialect::KnownBlockSizeAttrHelper(kernel.getContext())
            .getName());
  if (!known) {
    if (option > 0)
      return option;
    return kernel.emitOpError()
           << "has no known_block_size; the host execution needs the CTA "
              "size (set the attribute or the pass option block-size)";
  }
  ArrayRef<int32_t> sizes = known.asArrayRef();
  if (sizes.size() != 3 || sizes[0] < 1 || sizes[1] != 1 || sizes[2] != 1)
    return kernel.emitOpError()
           << "known_block_size must be [n, 1, 1] for the host execution, got "
           << known;
  if (option > 0 && option != sizes[0])
    return kernel.emitOpError()
           << "known_block_size (" << sizes[0]
           << ") disagrees with the block-size option (" << option << ")";
  return static_cast<int64_t>(sizes[0]);
}

/// Checks that `kernel` stays within what the host execution runs; see the
/// pass description.
static LogicalResult verifyHostContract(gpu::GPUFuncOp kernel,
                                        int64_t blockSize) {
  if (!kernel.getBody().hasOneBlock())
    return kernel.emitOpError()
           << "has " << kernel.getBody().getBlocks().size()
           << " blocks; the host execution needs structured control flow "
              "(one block)";
  if (kernel.getNumPrivateAttributions() != 0)
    return kernel.emitOpError()
           << "has private attributions, which the host execution does not "
              "support";
  WalkResult result = kernel.walk([&](Operation *op) -> WalkResult {
    if (op->getDialect() == kernel->getDialect() &&
        !isa<gpu::ThreadIdOp, gpu::BlockIdOp, gpu::BlockDimOp, gpu::GridDimOp,
             gpu::BarrierOp, gpu::DynamicSharedMemoryOp, gpu::ReturnOp,
             gpu::GPUFuncOp>(op))
      return op->emitOpError()
             << "has no host execution; kernels for the host path use "
                "gpu.thread_id/block_id/block_dim/grid_dim, gpu.barrier and "
                "gpu.dynamic_shared_memory only (and the norm collectives)";
    if (isa<CallOpInterface>(op))
      return op->emitOpError() << "is a call; the host execution runs "
                                  "self-contained kernels only";
    // Per-thread scratch memory would be allocated once per thread and CTA
    // on the host stack or heap; kernels keep values in registers instead.
    if (hasEffect<MemoryEffects::Allocate>(op))
      return op->emitOpError() << "allocates memory in a kernel, which the "
                                  "host execution does not support";
    if (auto reduce = dyn_cast<RowAllReduceOp>(op))
      if (blockSize % reduce.getGroupSize() != 0)
        return reduce.emitOpError()
               << "group_size " << reduce.getGroupSize()
               << " does not divide the CTA size " << blockSize;
    if (isa<MmaSyncOp, LdMatrixOp>(op) && blockSize % kWarpSize != 0)
      return op->emitOpError()
             << "is a warp collective: the host execution needs a CTA size "
                "that is a multiple of 32 (whole warps), got "
             << blockSize;
    if (!isCollective(op))
      return WalkResult::advance();
    for (Operation *parent = op->getParentOp(); parent != kernel;
         parent = parent->getParentOp()) {
      if (isa<scf::ForOp>(parent) ||
          (isa<scf::IfOp>(parent) && isWarpCollective(op)))
        continue;
      InFlightDiagnostic diag =
          op->emitOpError()
          << "inside '" << parent->getName()
          << "': every thread of the CTA must reach a collective, so it may "
             "only appear at the top level of the kernel or in scf.for loops "
             "with thread-uniform bounds (a warp collective also in scf.if "
             "branches that whole warps take)";
      diag.attachNote(parent->getLoc()) << "enclosing op";
      return diag;
    }
    return WalkResult::advance();
  });
  return failure(result.wasInterrupted());
}

/// Gathers the grid and thread index ops and gpu.dynamic_shared_memory at the
/// top of the kernel, one per kind, and folds the y and z dimensions (the
/// host grid and CTA are 1-D) to constants. Afterwards every use of an index
/// or of the dynamic shared memory refers to an op that the emitter maps
/// directly.
static void normalizeIndexOps(gpu::GPUFuncOp kernel) {
  Block &entry = kernel.getBody().front();
  DenseMap<std::pair<OperationName, gpu::Dimension>, Operation *> canonical;
  SmallVector<Operation *> indexOps;
  kernel.walk([&](Operation *op) {
    if (isa<gpu::ThreadIdOp, gpu::BlockIdOp, gpu::BlockDimOp, gpu::GridDimOp>(
            op))
      indexOps.push_back(op);
  });
  for (Operation *op : indexOps) {
    gpu::Dimension dimension =
        TypeSwitch<Operation *, gpu::Dimension>(op)
            .Case<gpu::ThreadIdOp, gpu::BlockIdOp, gpu::BlockDimOp,
                  gpu::GridDimOp>([](auto op) { return op.getDimension(); });
    if (dimension != gpu::Dimension::x) {
      OpBuilder builder(op);
      int64_t value = isa<gpu::ThreadIdOp, gpu::BlockIdOp>(op) ? 0 : 1;
      op->getResult(0).replaceAllUsesWith(
          arith::ConstantIndexOp::create(builder, op->getLoc(), value));
      op->erase();
      continue;
    }
    auto [it, inserted] = canonical.try_emplace({op->getName(), dimension}, op);
    if (inserted) {
      op->moveBefore(&entry, entry.begin());
      continue;
    }
    op->getResult(0).replaceAllUsesWith(it->second->getResult(0));
    op->erase();
  }
  // Every gpu.dynamic_shared_memory returns the same memory.
  SmallVector<gpu::DynamicSharedMemoryOp> memories;
  kernel.walk([&](gpu::DynamicSharedMemoryOp op) { memories.push_back(op); });
  for (gpu::DynamicSharedMemoryOp op : memories) {
    if (op == memories.front()) {
      op->moveBefore(&entry, entry.begin());
      continue;
    }
    op.getResult().replaceAllUsesWith(memories.front().getResult());
    op->erase();
  }
}

/// norm.async_copy_rows as its rows' element copies.
static void lowerAsyncCopyRows(AsyncCopyRowsOp copy) {
  OpBuilder b(copy);
  Location loc = copy.getLoc();
  auto index = [&](int64_t value) {
    return arith::ConstantIndexOp::create(b, loc, value);
  };
  Value srcStride = copy.getSrcStride();
  for (int64_t i = 0, e = copy.getRows(); i < e; ++i) {
    Value src = arith::AddIOp::create(
        b, loc, copy.getSrcIndex(),
        arith::MulIOp::create(b, loc, srcStride, index(i)));
    Value dst = arith::AddIOp::create(b, loc, copy.getDstIndex(),
                                      index(i * copy.getDstStride()));
    scf::ForOp::create(
        b, loc, index(0), index(copy.getElements()), index(1), ValueRange(),
        [&](OpBuilder &lb, Location, Value k, ValueRange) {
          Value v = memref::LoadOp::create(
              lb, loc, copy.getSrc(),
              ValueRange{arith::AddIOp::create(lb, loc, src, k)});
          memref::StoreOp::create(
              lb, loc, v, copy.getDst(),
              ValueRange{arith::AddIOp::create(lb, loc, dst, k)});
          scf::YieldOp::create(lb, loc);
        });
  }
  copy.erase();
}

/// Replaces each norm.async_copy{,_rows} of `kernel` by a plain copy of its
/// elements (zeros past `src_elements`) and drops the commits and waits, the
/// opaque indices (their values) and the grid dependency ops (grids run one
/// after another here): the host runs a stretch's threads to completion before
/// the next stretch, so a copy done at once is complete by the barrier that
/// must precede any other thread's read.
//===----------------------------------------------------------------------===//
// mbarriers on the host
//===----------------------------------------------------------------------===//
//
// An mbarrier object's 8 bytes hold its state as the host tracks it: the
// arrivals a phase expects (bits 0-19), those still pending (20-39), the
// current phase's parity (40) and the transaction bytes still pending (41-63,
// offset by 2^22: a copy may complete before its arrive.expect_tx). A phase
// completes when no arrival and no byte is pending; the next one then
// expects the same arrivals. Copies complete their bytes at issue. The host
// runs every thread's code before a wait (a meeting point there) and the
// roles of a warp-specialized kernel in lockstep, so a wait whose phase has
// not completed when it runs would never complete: it records a fault
// (kHostFaultSymbol), which the launch reports (where a GPU would hang, or
// trap after the bounded try_wait loop), so that an arrival count, a
// transaction byte count or a parity that does not match the kernel's
// program fails on the host too; so does an arrival beyond a phase's count.

namespace {
constexpr int64_t kPendingShift = 20, kPhaseShift = 40, kBytesShift = 41;
constexpr int64_t kFieldMask = (int64_t(1) << 20) - 1;
constexpr int64_t kBytesOffset = int64_t(1) << 22;

struct BarrierState {
  Value count, pending, phase, bytes;
};

BarrierState loadBarrier(OpBuilder &b, Location loc, Value bars, Value at) {
  auto constant = [&](int64_t v) {
    return arith::ConstantIntOp::create(b, loc, v, 64).getResult();
  };
  Value state = memref::LoadOp::create(b, loc, bars, at);
  auto field = [&](int64_t shift, int64_t mask) {
    return arith::AndIOp::create(
        b, loc, arith::ShRUIOp::create(b, loc, state, constant(shift)),
        constant(mask));
  };
  return {field(0, kFieldMask), field(kPendingShift, kFieldMask),
          field(kPhaseShift, 1),
          arith::SubIOp::create(
              b, loc,
              arith::ShRUIOp::create(b, loc, state, constant(kBytesShift)),
              constant(kBytesOffset))};
}

void storeBarrier(OpBuilder &b, Location loc, Value bars, Value at,
                  const BarrierState &s) {
  auto constant = [&](int64_t v) {
    return arith::ConstantIntOp::create(b, loc, v, 64).getResult();
  };
  auto shifted = [&](Value v, int64_t shift) {
    return arith::ShLIOp::create(b, loc, v, constant(shift)).getResult();
  };
  Value state = arith::OrIOp::create(
      b, loc,
      arith::OrIOp::create(b, loc, s.count, shifted(s.pending, kPendingShift)),
      arith::OrIOp::create(b, loc, shifted(s.phase, kPhaseShift),
                           shifted(arith::AddIOp::create(
                                       b, loc, s.bytes, constant(kBytesOffset)),
                                   kBytesShift)));
  memref::StoreOp::create(b, loc, state, bars, at);
}

/// Records `fault` in `cell` (the first one stays) where `bad` holds.
void recordFault(OpBuilder &b, Location loc, Value cell, Value bad,
                 HostFault fault) {
  scf::IfOp::create(b, loc, bad, [&](OpBuilder &tb, Location) {
    Value zero = arith::ConstantIndexOp::create(tb, loc, 0);
    Value old = memref::LoadOp::create(tb, loc, cell, zero);
    Value first =
        arith::CmpIOp::create(tb, loc, arith::CmpIPredicate::eq, old,
                              arith::ConstantIntOp::create(tb, loc, 0, 64));
    memref::StoreOp::create(
        tb, loc,
        arith::SelectOp::create(tb, loc, first,
                                arith::ConstantIntOp::create(
                                    tb, loc, static_cast<int64_t>(fault), 64),
                                old),
        cell, zero);
    scf::YieldOp::create(tb, loc);
  });
}

/// `arrivals` (0 or 1) arrive at bars[at] and `bytes` (i64, negative for
/// completed ones) are expected; the phase completes when nothing is
/// pending. An arrival records a fault in `faults` where none was pending.
void updateBarrier(OpBuilder &b, Location loc, Value bars, Value at,
                   int64_t arrivals, Value bytes, Value faults = {}) {
  BarrierState s = loadBarrier(b, loc, bars, at);
  Value zero = arith::ConstantIntOp::create(b, loc, 0, 64);
  if (arrivals) {
    recordFault(b, loc, faults,
                arith::CmpIOp::create(b, loc, arith::CmpIPredicate::eq,
                                      s.pending, zero),
                HostFault::BarrierOverArrival);
    s.pending = arith::SubIOp::create(
        b, loc, s.pending, arith::ConstantIntOp::create(b, loc, arrivals, 64));
  }
  s.bytes = arith::AddIOp::create(b, loc, s.bytes, bytes);
  Value done = arith::AndIOp::create(
      b, loc,
      arith::CmpIOp::create(b, loc, arith::CmpIPredicate::eq, s.pending, zero),
      arith::CmpIOp::create(b, loc, arith::CmpIPredicate::eq, s.bytes, zero));
  Value one = arith::ConstantIntOp::create(b, loc, 1, 64);
  s.phase = arith::SelectOp::create(
      b, loc, done, arith::XOrIOp::create(b, loc, s.phase, one), s.phase);
  s.pending = arith::SelectOp::create(b, loc, done, s.count, s.pending);
  storeBarrier(b, loc, bars, at, s);
}

void completeBytes(OpBuilder &b, Location loc, Value bars, Value at,
                   int64_t bytes) {
  updateBarrier(b, loc, bars, at, 0,
                arith::ConstantIntOp::create(b, loc, -bytes, 64));
}
} // namespace

/// An mbarrier op where the host function runs it; faults go to `faults`.
static void lowerBarrierOp(Operation *op, Value faults) {
  OpBuilder b(op);
  Location loc = op->getLoc();
  auto i64 = [&](Value index) {
    return arith::IndexCastOp::create(b, loc, b.getI64Type(), index)
        .getResult();
  };
  if (auto init = dyn_cast<MbarrierInitOp>(op)) {
    Value count = arith::ConstantIntOp::create(b, loc, init.getCount(), 64);
    storeBarrier(b, loc, init.getBars(), init.getIndex(),
                 {count, count, arith::ConstantIntOp::create(b, loc, 0, 64),
                  arith::ConstantIntOp::create(b, loc, 0, 64)});
  } else if (auto arrive = dyn_cast<MbarrierArriveOp>(op)) {
    Value bytes = arrive.getTxBytes()
                      ? i64(arrive.getTxBytes())
                      : arith::ConstantIntOp::create(b, loc, 0, 64).getResult();
    updateBarrier(b, loc, arrive.getBars(), arrive.getIndex(), 1, bytes,
                  faults);
  } else if (auto wait = dyn_cast<MbarrierWaitOp>(op)) {
    // try_wait.parity p returns once the phase of parity p has completed:
    // the current phase's parity is the other one.
    BarrierState s = loadBarrier(b, loc, wait.getBars(), wait.getIndex());
    recordFault(
        b, loc, faults,
        arith::CmpIOp::create(
            b, loc, arith::CmpIPredicate::eq, s.phase,
            arith::AndIOp::create(b, loc, i64(wait.getParity()),
                                  arith::ConstantIntOp::create(b, loc, 1, 64))),
        HostFault::BarrierNeverCompletes);
  }
  op->erase();
}

/// A bulk copy at issue: its elements one by one, then its bytes complete
/// on its barrier.
static void lowerBulkCopy(BulkCopyOp copy) {
  OpBuilder b(copy);
  Location loc = copy.getLoc();
  int64_t bytes = copy.getSrc().getType().getElementTypeBitWidth() / 8;
  Value zero = arith::ConstantIndexOp::create(b, loc, 0);
  Value one = arith::ConstantIndexOp::create(b, loc, 1);
  Value count = arith::ConstantIndexOp::create(b, loc, copy.getBytes() / bytes);
  scf::ForOp::create(
      b, loc, zero, count, one, ValueRange(),
      [&](OpBuilder &lb, Location, Value k, ValueRange) {
        Value from = arith::AddIOp::create(lb, loc, copy.getSrcIndex(), k);
        Value to = arith::AddIOp::create(lb, loc, copy.getDstIndex(), k);
        Value v = memref::LoadOp::create(lb, loc, copy.getSrc(), from);
        memref::StoreOp::create(lb, loc, v, copy.getDst(), to);
        scf::YieldOp::create(lb, loc);
      });
  completeBytes(b, loc, copy.getBars(), copy.getBarIndex(), copy.getBytes());
  copy.erase();
}

/// The byte `offset` (from an atom-aligned start) as a swizzle of
/// `swizzle` bytes places it, as TMA writes and wgmma reads shared memory:
/// the 16-byte chunk index XOR the 128-byte line index.
static Value emitSwizzle(OpBuilder &b, Location loc, Value offset,
                         int64_t swizzle) {
  if (!swizzle)
    return offset;
  auto constant = [&](int64_t v) {
    return arith::ConstantIndexOp::create(b, loc, v).getResult();
  };
  Value line = arith::RemUIOp::create(
      b, loc, arith::ShRUIOp::create(b, loc, offset, constant(7)),
      constant(swizzle / 16));
  return arith::XOrIOp::create(
      b, loc, offset, arith::ShLIOp::create(b, loc, line, constant(4)));
}

/// A TMA box at issue: element (r, c) of the box is the view's (row + r,
/// column + c), zero outside it, at byte r * row bytes + c * element bytes
/// of the box, swizzled.
static void lowerTmaLoad(TmaLoadOp load) {
  OpBuilder b(load);
  Location loc = load.getLoc();
  auto index = [&](int64_t v) {
    return arith::ConstantIndexOp::create(b, loc, v).getResult();
  };
  Type element = load.getSrc().getType().getElementType();
  int64_t bytes = element.getIntOrFloatBitWidth() / 8;
  int64_t swizzle = load.getSwizzle(), columns = load.getBoxColumns();
  Value zero = index(0), one = index(1);
  Value fill = arith::ConstantOp::create(b, loc, b.getZeroAttr(element));
  scf::ForOp::create(
      b, loc, zero, index(load.getBoxRows()), one, ValueRange(),
      [&](OpBuilder &rb, Location, Value r, ValueRange) {
        scf::ForOp::create(
            rb, loc, zero, index(columns), one, ValueRange(),
            [&](OpBuilder &cb, Location, Value c, ValueRange) {
              auto constant = [&](int64_t v) {
                return arith::ConstantIndexOp::create(cb, loc, v).getResult();
              };
              Value row = arith::AddIOp::create(cb, loc, load.getRow(), r);
              Value column =
                  arith::AddIOp::create(cb, loc, load.getColumn(), c);
              // Signed: coordinates before the view are outside it too.
              auto within = [&](Value x, Value end) {
                return arith::AndIOp::create(
                    cb, loc,
                    arith::CmpIOp::create(cb, loc, arith::CmpIPredicate::sge, x,
                                          constant(0)),
                    arith::CmpIOp::create(cb, loc, arith::CmpIPredicate::slt, x,
                                          end));
              };
              Value inside =
                  arith::AndIOp::create(cb, loc, within(row, load.getRows()),
                                        within(column, load.getColumns()));
              auto value = scf::IfOp::create(
                  cb, loc, inside,
                  [&](OpBuilder &tb, Location) {
                    Value at = arith::AddIOp::create(
                        tb, loc,
                        arith::MulIOp::create(tb, loc, row,
                                              load.getRowStride()),
                        column);
                    scf::YieldOp::create(
                        tb, loc,
                        memref::LoadOp::create(tb, loc, load.getSrc(), at)
                            .getResult());
                  },
                  [&](OpBuilder &eb, Location) {
                    scf::YieldOp::create(eb, loc, fill);
                  });
              Value offset = arith::AddIOp::create(
                  cb, loc,
                  arith::MulIOp::create(cb, loc, r, constant(columns * bytes)),
                  arith::MulIOp::create(cb, loc, c, constant(bytes)));
              offset = emitSwizzle(cb, loc, offset, swizzle);
              Value at = arith::AddIOp::create(
                  cb, loc, load.getDstIndex(),
                  arith::DivUIOp::create(cb, loc, offset, constant(bytes)));
              memref::StoreOp::create(cb, loc, value.getResult(0),
                                      load.getDst(), at);
              scf::YieldOp::create(cb, loc);
            });
        scf::YieldOp::create(rb, loc);
      });
  // The whole box's bytes, those outside the view included.
  completeBytes(b, loc, load.getBars(), load.getBarIndex(),
                load.getBoxRows() * columns * bytes);
  load.erase();
}

static void lowerAsyncCopies(gpu::GPUFuncOp kernel) {
  SmallVector<Operation *> ops;
  kernel.walk([&](Operation *op) {
    if (isa<AsyncCopyOp, AsyncCopyRowsOp, AsyncCommitOp, AsyncWaitOp,
            GridDependencyWaitOp, LaunchDependentsOp, OpaqueIndexOp,
            WgmmaFenceOp, WgmmaCommitOp, WgmmaWaitOp, AsyncProxyFenceOp,
            MbarrierInitOp, MbarrierArriveOp, MbarrierWaitOp, BulkCopyOp,
            TmaLoadOp, SetMaxRegistersOp>(op))
      ops.push_back(op);
  });
  for (Operation *op : ops) {
    // The host's multiplies finish at issue: the values pass through.
    if (isa<WgmmaFenceOp, WgmmaWaitOp>(op)) {
      op->replaceAllUsesWith(op->getOperands());
      op->erase();
      continue;
    }
    if (auto opaque = dyn_cast<OpaqueIndexOp>(op)) {
      opaque.replaceAllUsesWith(opaque.getValue());
      opaque->erase();
      continue;
    }
    if (auto rows = dyn_cast<AsyncCopyRowsOp>(op)) {
      lowerAsyncCopyRows(rows);
      continue;
    }
    if (auto bulk = dyn_cast<BulkCopyOp>(op)) {
      lowerBulkCopy(bulk);
      continue;
    }
    if (auto tma = dyn_cast<TmaLoadOp>(op)) {
      lowerTmaLoad(tma);
      continue;
    }
    // Barriers are tracked where the host function runs them.
    if (isa<MbarrierInitOp, MbarrierArriveOp, MbarrierWaitOp>(op))
      continue;
    auto copy = dyn_cast<AsyncCopyOp>(op);
    if (!copy) {
      op->erase();
      continue;
    }
    OpBuilder b(copy);
    Location loc = copy.getLoc();
    Value zero = arith::ConstantIndexOp::create(b, loc, 0);
    Value one = arith::ConstantIndexOp::create(b, loc, 1);
    Value count = arith::ConstantIndexOp::create(b, loc, copy.getElements());
    Value read = count;
    if (Value valid = copy.getSrcElements())
      read = arith::MinSIOp::create(
          b, loc, arith::MaxSIOp::create(b, loc, valid, zero), count);
    // Element k of the copy: the innermost indices advanced by k.
    auto shifted = [&](OpBuilder &lb, ValueRange indices, Value k) {
      SmallVector<Value> at(indices);
      at.back() = arith::AddIOp::create(lb, loc, at.back(), k);
      return at;
    };
    scf::ForOp::create(
        b, loc, zero, read, one, ValueRange(),
        [&](OpBuilder &lb, Location, Value k, ValueRange) {
          Value v = memref::LoadOp::create(
              lb, loc, copy.getSrc(), shifted(lb, copy.getSrcIndices(), k));
          memref::StoreOp::create(lb, loc, v, copy.getDst(),
                                  shifted(lb, copy.getDstIndices(), k));
          scf::YieldOp::create(lb, loc);
        });
    if (copy.getSrcElements()) {
      Type element = copy.getDst().getType().getElementType();
      Value fill = arith::ConstantOp::create(b, loc, b.getZeroAttr(element));
      scf::ForOp::create(
          b, loc, read, count, one, ValueRange(),
          [&](OpBuilder &lb, Location, Value k, ValueRange) {
            memref::StoreOp::create(lb, loc, fill, copy.getDst(),
                                    shifted(lb, copy.getDstIndices(), k));
            scf::YieldOp::create(lb, loc);
          });
    }
    copy.erase();
  }
}

namespace {

/// The ops of one block, numbered by stretch: ops between two split points
/// share a number; each split point and the terminator have their own.
class Stretches {
public:
  explicit Stretches(Block &block) : block(block) {
    unsigned number = 0;
    for (Operation &op : block) {
      bool alone = isSplitPoint(&op) || op.hasTrait<OpTrait::IsTerminator>();
      if (alone)
        ++number;
      numbers[&op] = number;
      if (alone)
        ++number;
    }
  }

  /// Whether a value defined by `op` (an op of the block) is used outside
  /// its stretch.
  bool isUsedOutside(Operation *op, Value value) const {
    unsigned own = numbers.lookup(op);
    return llvm::any_of(value.getUsers(), [&](Operation *user) {
      Operation *ancestor = block.findAncestorOpInBlock(*user);
      return !ancestor || numbers.lookup(ancestor) != own;
    });
  }

private:
  Block &block;
  DenseMap<Operation *, unsigned> numbers;
};

/// Builds the host function of one kernel.
class HostKernelEmitter {
public:
  HostKernelEmitter(gpu::GPUFuncOp kernel, int64_t blockSize,
                    bool reverseThreads)
      : kernel(kernel), blockSize(blockSize), reverseThreads(reverseThreads),
        allocBuilder(kernel.getContext()) {}

  FailureOr<func::FuncOp> emit(OpBuilder &moduleBuilder);

private:
  LogicalResult emitBlock(Block &block, IRMapping &levelMap, OpBuilder &b);
  /// The ops [begin, end) of `block`, split at its split points.
  LogicalResult emitOps(Block &block, Block::iterator begin,
                        Block::iterator end, IRMapping &levelMap, OpBuilder &b);
  LogicalResult emitStretch(ArrayRef<Operation *> ops,
                            const Stretches &stretches, IRMapping &levelMap,
                            OpBuilder &b);
  LogicalResult emitRowAllReduce(RowAllReduceOp op, const IRMapping &levelMap,
                                 OpBuilder &b);
  LogicalResult emitMmaSync(MmaSyncOp op, const IRMapping &levelMap,
                            OpBuilder &b);
  LogicalResult emitLdMatrix(LdMatrixOp op, const IRMapping &levelMap,
                             OpBuilder &b);
  LogicalResult emitWgmma(WgmmaOp op, const IRMapping &levelMap, OpBuilder &b);
  /// A constant table of the byte offsets of elements (mn, k), mn < `rows`,
  /// k < 16, of an operand laid out as `layout` (before the swizzle).
  Value getLayoutTable(OpBuilder &b, Location loc, SharedMatrixAttr layout,
                       int64_t rows);
  /// A warp collective `op`: for each warp of the CTA, `gather` runs for
  /// each of its first `lanes` lanes with the lane index and the lane's
  /// operands of `op`, then `compute` (if any) once with the warp's first
  /// thread, then `scatter` for all
  /// 32 lanes returns each lane's results, which go to the per-thread
  /// buffers of `op`'s results.
  LogicalResult emitWarpCollective(
      Operation *op, const IRMapping &levelMap, OpBuilder &b, int64_t lanes,
      function_ref<void(OpBuilder &, Value lane, ValueRange operands)> gather,
      function_ref<void(OpBuilder &, Value first)> compute,
      function_ref<SmallVector<Value>(OpBuilder &, Value lane)> scatter);
  LogicalResult emitSplitLoop(scf::ForOp loop, IRMapping &levelMap,
                              OpBuilder &b);
  /// The per-thread buffers of `loop`'s carried values, seeded with its
  /// initial values (they also stand for its results).
  FailureOr<SmallVector<Value>>
  seedCarriedValues(scf::ForOp loop, const IRMapping &levelMap, OpBuilder &b);
  /// One iteration of `loop` with induction value `iv` at `b`.
  LogicalResult emitIteration(scf::ForOp loop, ArrayRef<Value> carried,
                              Value iv, const IRMapping &levelMap,
                              OpBuilder &b);
  LogicalResult checkUniformBounds(scf::ForOp loop);
  /// A branch that whole warps take (a warp-specialized kernel's roles):
  /// each region split like a block, its per-thread code guarded by the
  /// thread's condition and its warp collectives by the warp's.
  LogicalResult emitSplitIf(scf::IfOp branch, IRMapping &levelMap,
                            OpBuilder &b);
  /// Whether `value` is the same in all lanes of a warp: uniform, or
  /// computed from uniform values and the thread index over a multiple of
  /// 32.
  bool isWarpUniform(Value value) const;
  /// `body` under the enclosing branches' conditions (`guards`) as thread
  /// `thread` has them.
  void emitGuarded(OpBuilder &b, Location loc, Value thread, IRMapping &local,
                   function_ref<void(OpBuilder &)> body);

  /// `scf.for %t = 0 to blockSize` at `b`, its body built by `bodyBuilder`
  /// with a mapping that starts as `levelMap` plus the thread index.
  void emitThreadLoop(
      OpBuilder &b, Location loc, const IRMapping &levelMap,
      function_ref<void(OpBuilder &, Value, IRMapping &)> bodyBuilder);
  /// The per-thread buffers of `op`'s results, in `buffers`.
  FailureOr<SmallVector<Value>> createResultBuffers(Operation *op);
  /// A builder inside the enclosing branches' guards as thread `thread`
  /// (the first of a warp or group) has them, in `outer`'s block.
  OpBuilder guardedAt(OpBuilder &outer, Location loc, Value thread,
                      const IRMapping &levelMap);
  /// A heap buffer holding one `value` per thread.
  FailureOr<Value> createBuffer(Value value, Location loc);
  /// A heap buffer of `type`, allocated once, that one warp collective at a
  /// time uses.
  Value createScratch(MemRefType type, Location loc);
  /// `value` in a thread loop whose mapping is `local`: mapped already,
  /// recomputed from the thread index, or loaded from its buffer.
  Value materialize(OpBuilder &b, Location loc, Value value, Value thread,
                    IRMapping &local);
  /// Whether `op` (at the level, no regions, no memory effects) computes a
  /// function of `values` only.
  bool isFunctionOf(Operation *op, const DenseSet<Value> &values) const;
  /// Whether `op` computes the same results in every thread of a CTA
  /// although it reads memory or has regions; see the definition.
  bool isUniformOp(Operation *op) const;

  gpu::GPUFuncOp kernel;
  int64_t blockSize;
  /// Thread loops run from the last thread to the first.
  bool reverseThreads;
  /// Inserts before the grid loop: per-thread buffers.
  OpBuilder allocBuilder;
  Value zero, one, threadCount;
  SmallVector<Value> threadBuffers;
  /// Per-thread buffers of the values that live across split points.
  DenseMap<Value, Value> buffers;
  /// Values that are the same for all threads of a CTA; computed once per
  /// CTA, outside the thread loops.
  DenseSet<Value> uniformValues;
  /// Kernel arguments that no op of the kernel writes.
  DenseSet<Value> readOnlyBuffers;
  /// Cheap functions of the thread index (lane, row in the CTA, ...):
  /// recomputed in each thread loop instead of kept in buffers.
  DenseSet<Value> threadFunctions;
  Value threadIndex;
  /// The conditions of the split branches around the code being emitted,
  /// each with the value that takes its region (true: then, false: else).
  SmallVector<std::pair<Value, bool>> guards;
  /// The module of the host functions, which holds their constant tables.
  ModuleOp hostModule;
};

} // namespace

FailureOr<func::FuncOp> HostKernelEmitter::emit(OpBuilder &moduleBuilder) {
  MLIRContext *context = kernel.getContext();
  Location loc = kernel.getLoc();
  SmallVector<Type> inputs;
  for (Type type : kernel.getArgumentTypes())
    inputs.push_back(getHostType(type));
  inputs.push_back(moduleBuilder.getIndexType());
  auto host = func::FuncOp::create(
      moduleBuilder, loc, (kernel.getName() + kHostFunctionSuffix).str(),
      FunctionType::get(context, inputs, {}));
  host->setAttr(kHostKernelAttrName, UnitAttr::get(context));
  hostModule = host->getParentOfType<ModuleOp>();
  Block *entry = host.addEntryBlock();
  OpBuilder b = OpBuilder::atBlockEnd(entry);

  Block &body = kernel.getBody().front();
  IRMapping levelMap;
  for (auto [arg, hostArg] :
       llvm::zip(body.getArguments().take_front(kernel.getNumArguments()),
                 host.getArguments())) {
    levelMap.map(arg, hostArg);
    uniformValues.insert(arg);
    // Read-only memory: no op writes through the argument, and it aliases
    // no other (an in-place kernel's pair has no noalias: the stores
    // through the output change what the input reads).
    if (isa<MemRefType>(arg.getType()) &&
        kernel.getArgAttr(arg.getArgNumber(),
                          LLVM::LLVMDialect::getNoAliasAttrName()) &&
        llvm::all_of(arg.getUsers(), [&](Operation *user) {
          auto effects = dyn_cast<MemoryEffectOpInterface>(user);
          return effects &&
                 !effects.getEffectOnValue<MemoryEffects::Write>(arg);
        }))
      readOnlyBuffers.insert(arg);
  }
  // Workgroup memory: one buffer, reused by the CTAs one after the other.
  for (BlockArgument buffer : kernel.getWorkgroupAttributions()) {
    auto type = cast<MemRefType>(getHostType(buffer.getType()));
    if (!type.hasStaticShape())
      return kernel.emitOpError()
             << "has a workgroup attribution of dynamic shape " << type;
    levelMap.map(buffer, memref::AllocaOp::create(b, loc, type,
                                                  b.getI64IntegerAttr(64)));
    uniformValues.insert(buffer);
  }
  // Dynamic shared memory too, on the heap: it may hold whole rows.
  FailureOr<int64_t> sharedBytes = getDynamicSharedBytes(kernel);
  if (failed(sharedBytes))
    return failure();
  Value sharedMemory;
  if (*sharedBytes > 0) {
    auto shared = memref::AllocOp::create(
        b, loc, MemRefType::get({*sharedBytes}, b.getI8Type()),
        b.getI64IntegerAttr(64));
    threadBuffers.push_back(shared);
    sharedMemory = memref::CastOp::create(
        b, loc, MemRefType::get({ShapedType::kDynamic}, b.getI8Type()),
        shared);
  }

  Value grid = host.getArguments().back();
  zero = arith::ConstantIndexOp::create(b, loc, 0);
  one = arith::ConstantIndexOp::create(b, loc, 1);
  threadCount = arith::ConstantIndexOp::create(b, loc, blockSize);
  auto gridLoop = scf::ForOp::create(b, loc, zero, grid, one);
  allocBuilder.setInsertionPoint(gridLoop);

  for (Operation &op : body) {
    Value replacement =
        TypeSwitch<Operation *, Value>(&op)
            .Case([&](gpu::BlockIdOp) { return gridLoop.getInductionVar(); })
            .Case([&](gpu::BlockDimOp) { return threadCount; })
            .Case([&](gpu::GridDimOp) { return grid; })
            .Case([&](gpu::DynamicSharedMemoryOp) { return sharedMemory; })
            .Default([](Operation *) { return Value(); });
    if (replacement) {
      levelMap.map(op.getResult(0), replacement);
      uniformValues.insert(op.getResult(0));
    }
    if (isa<gpu::ThreadIdOp>(op)) {
      threadIndex = op.getResult(0);
      threadFunctions.insert(threadIndex);
    }
  }

  OpBuilder gridBuilder = OpBuilder::atBlockTerminator(gridLoop.getBody());
  if (failed(emitBlock(body, levelMap, gridBuilder)))
    return failure();
  // The barriers, each op where its thread runs it.
  SmallVector<Operation *> barrierOps;
  host.walk([&](Operation *op) {
    if (isa<MbarrierInitOp, MbarrierArriveOp, MbarrierWaitOp>(op))
      barrierOps.push_back(op);
  });
  if (!barrierOps.empty()) {
    auto cellType = MemRefType::get({1}, b.getI64Type());
    if (!SymbolTable::lookupSymbolIn(hostModule, kHostFaultSymbol)) {
      OpBuilder mb = OpBuilder::atBlockBegin(hostModule.getBody());
      memref::GlobalOp::create(
          mb, loc, kHostFaultSymbol, /*sym_visibility=*/StringAttr(), cellType,
          DenseElementsAttr::get(RankedTensorType::get({1}, b.getI64Type()),
                                 ArrayRef<int64_t>{0}),
          /*constant=*/false, /*alignment=*/IntegerAttr());
    }
    OpBuilder entryBuilder = OpBuilder::atBlockBegin(entry);
    Value faults = memref::GetGlobalOp::create(entryBuilder, loc, cellType,
                                               kHostFaultSymbol);
    for (Operation *op : barrierOps)
      lowerBarrierOp(op, faults);
  }

  b.setInsertionPointAfter(gridLoop);
  for (Value buffer : threadBuffers)
    memref::DeallocOp::create(b, loc, buffer);
  func::ReturnOp::create(b, loc);
  return host;
}

LogicalResult HostKernelEmitter::emitBlock(Block &block, IRMapping &levelMap,
                                           OpBuilder &b) {
  return emitOps(block, block.begin(), block.getTerminator()->getIterator(),
                 levelMap, b);
}

LogicalResult HostKernelEmitter::emitOps(Block &block, Block::iterator begin,
                                         Block::iterator end,
                                         IRMapping &levelMap, OpBuilder &b) {
  Stretches stretches(block);
  SmallVector<Operation *> stretch;
  for (Operation &op : llvm::make_range(begin, end)) {
    if (!isSplitPoint(&op)) {
      stretch.push_back(&op);
      continue;
    }
    if (failed(emitStretch(stretch, stretches, levelMap, b)))
      return failure();
    stretch.clear();
    LogicalResult emitted =
        TypeSwitch<Operation *, LogicalResult>(&op)
            .Case([&](RowAllReduceOp reduce) {
              return emitRowAllReduce(reduce, levelMap, b);
            })
            .Case([&](MmaSyncOp mma) { return emitMmaSync(mma, levelMap, b); })
            .Case([&](LdMatrixOp load) {
              return emitLdMatrix(load, levelMap, b);
            })
            .Case([&](WgmmaOp mma) { return emitWgmma(mma, levelMap, b); })
            .Case([&](scf::ForOp loop) {
              return emitSplitLoop(loop, levelMap, b);
            })
            .Case([&](scf::IfOp branch) {
              return emitSplitIf(branch, levelMap, b);
            })
            // The thread loops already run one after the other.
            .Case([](gpu::BarrierOp) { return success(); })
            .Case([](NamedBarrierOp) { return success(); })
            .Case([&](MbarrierWaitOp wait) {
              return emitStretch({wait}, stretches, levelMap, b);
            })
            .Default([](Operation *op) {
              return op->emitOpError("unexpected split point");
            });
    if (failed(emitted))
      return failure();
  }
  return emitStretch(stretch, stretches, levelMap, b);
}

bool HostKernelEmitter::isFunctionOf(Operation *op,
                                     const DenseSet<Value> &values) const {
  if (op->getNumRegions() != 0 || !isMemoryEffectFree(op))
    return false;
  return llvm::all_of(op->getOperands(), [&](Value v) {
    return uniformValues.contains(v) || values.contains(v);
  });
}

/// Ops whose operands are uniform and that, with every op nested in them,
/// use only uniform values or values defined inside, have no thread index,
/// no collective and no memory effect but reads of buffers the kernel never
/// writes: the same results in every thread. They run once per CTA (the
/// attention kernel's scan of the sequence offsets, say), so that loops
/// bounded by their results may contain collectives.
bool HostKernelEmitter::isUniformOp(Operation *op) const {
  if (op->getNumResults() == 0)
    return false;
  WalkResult result = op->walk([&](Operation *nested) {
    if (isa<gpu::ThreadIdOp>(nested) || isCollective(nested))
      return WalkResult::interrupt();
    for (Value operand : nested->getOperands()) {
      Operation *scope = operand.getParentRegion()->getParentOp();
      if (!uniformValues.contains(operand) &&
          !(nested != op && op->isAncestor(scope)))
        return WalkResult::interrupt();
    }
    if (nested->hasTrait<OpTrait::HasRecursiveMemoryEffects>())
      return WalkResult::advance();
    auto effects = dyn_cast<MemoryEffectOpInterface>(nested);
    if (!effects)
      return WalkResult::interrupt();
    SmallVector<MemoryEffects::EffectInstance> instances;
    effects.getEffects(instances);
    for (const MemoryEffects::EffectInstance &effect : instances)
      if (!isa<MemoryEffects::Read>(effect.getEffect()) ||
          !readOnlyBuffers.contains(effect.getValue()))
        return WalkResult::interrupt();
    return WalkResult::advance();
  });
  return !result.wasInterrupted();
}

LogicalResult HostKernelEmitter::emitStretch(ArrayRef<Operation *> ops,
                                             const Stretches &stretches,
                                             IRMapping &levelMap,
                                             OpBuilder &b) {
  SmallVector<Operation *> perThread;
  for (Operation *op : ops) {
    if (isa<gpu::ThreadIdOp, gpu::BlockIdOp, gpu::BlockDimOp, gpu::GridDimOp,
            gpu::DynamicSharedMemoryOp>(op))
      continue;
    if (isFunctionOf(op, /*values=*/{}) || isUniformOp(op)) {
      cloneForHost(b, *op, levelMap);
      uniformValues.insert(op->result_begin(), op->result_end());
      continue;
    }
    if (isFunctionOf(op, threadFunctions))
      threadFunctions.insert(op->result_begin(), op->result_end());
    perThread.push_back(op);
  }
  // Functions of the thread index alone are recomputed where they are used.
  if (llvm::all_of(perThread, [&](Operation *op) {
        return op->getNumResults() != 0 &&
               threadFunctions.contains(op->getResult(0));
      }))
    return success();

  // Buffers first: creating one can fail, emitting the loop cannot.
  for (Operation *op : perThread)
    for (Value result : op->getResults())
      if (!threadFunctions.contains(result) &&
          stretches.isUsedOutside(op, result) && !buffers.count(result)) {
        FailureOr<Value> buffer = createBuffer(result, op->getLoc());
        if (failed(buffer))
          return failure();
        buffers[result] = *buffer;
      }

  emitThreadLoop(
      b, perThread.front()->getLoc(), levelMap,
      [&](OpBuilder &tb, Value thread, IRMapping &local) {
        for (Operation *op : perThread) {
          // Functions of the thread index are emitted where they are used.
          if (op->getNumResults() != 0 &&
              threadFunctions.contains(op->getResult(0)))
            continue;
          SetVector<Value> used(op->operand_begin(), op->operand_end());
          getUsedValuesDefinedAbove(op->getRegions(), used);
          for (Value value : used)
            materialize(tb, op->getLoc(), value, thread, local);
          Operation *copy = cloneForHost(tb, *op, local);
          for (auto [result, value] :
               llvm::zip(op->getResults(), copy->getResults()))
            if (Value buffer = buffers.lookup(result))
              memref::StoreOp::create(tb, op->getLoc(), value, buffer, thread);
        }
      });
  return success();
}

LogicalResult HostKernelEmitter::emitRowAllReduce(RowAllReduceOp op,
                                                  const IRMapping &levelMap,
                                                  OpBuilder &b) {
  Location loc = op.getLoc();
  FailureOr<SmallVector<Value>> resultBuffersOr = createResultBuffers(op);
  if (failed(resultBuffersOr))
    return failure();
  SmallVector<Value> resultBuffers = *resultBuffersOr;
  // For each group of threads: the sum (or maximum) in thread order, then
  // the result to every thread of the group.
  bool isMax = op.getKind() == ReductionKind::max;
  Value groupSize = arith::ConstantIndexOp::create(b, loc, op.getGroupSize());
  SmallVector<Value> initial(
      op.getNumOperands(),
      arith::ConstantOp::create(
          b, loc,
          b.getF32FloatAttr(isMax ? -std::numeric_limits<float>::infinity()
                                  : 0.0f)));
  auto groups = scf::ForOp::create(b, loc, zero, threadCount, groupSize);
  OpBuilder outer = OpBuilder::atBlockTerminator(groups.getBody());
  Value first = groups.getInductionVar();
  // In split branches: the groups (inside one warp) that take them.
  OpBuilder gb = guardedAt(outer, loc, first, levelMap);
  Value end = arith::AddIOp::create(gb, loc, first, groupSize);
  auto sum = scf::ForOp::create(
      gb, loc, first, end, one, initial,
      [&](OpBuilder &sb, Location l, Value thread, ValueRange partial) {
        IRMapping local = levelMap;
        SmallVector<Value> next;
        for (auto [value, acc] : llvm::zip(op.getValues(), partial)) {
          Value v = materialize(sb, l, value, thread, local);
          next.push_back(
              isMax ? arith::MaximumFOp::create(sb, l, acc, v).getResult()
                    : arith::AddFOp::create(sb, l, acc, v).getResult());
        }
        scf::YieldOp::create(sb, l, next);
      });
  scf::ForOp::create(gb, loc, first, end, one, ValueRange(),
                     [&](OpBuilder &sb, Location l, Value thread, ValueRange) {
                       for (auto [total, buffer] :
                            llvm::zip(sum.getResults(), resultBuffers))
                         memref::StoreOp::create(sb, l, total, buffer, thread);
                       scf::YieldOp::create(sb, l);
                     });
  return success();
}

LogicalResult HostKernelEmitter::emitWarpCollective(
    Operation *op, const IRMapping &levelMap, OpBuilder &b, int64_t lanes,
    function_ref<void(OpBuilder &, Value lane, ValueRange operands)> gather,
    function_ref<void(OpBuilder &, Value first)> compute,
    function_ref<SmallVector<Value>(OpBuilder &, Value lane)> scatter) {
  Location loc = op->getLoc();
  FailureOr<SmallVector<Value>> resultBuffersOr = createResultBuffers(op);
  if (failed(resultBuffersOr))
    return failure();
  SmallVector<Value> resultBuffers = *resultBuffersOr;
  Value warpSize = arith::ConstantIndexOp::create(b, loc, kWarpSize);
  auto warps = scf::ForOp::create(b, loc, zero, threadCount, warpSize);
  OpBuilder outer = OpBuilder::atBlockTerminator(warps.getBody());
  Value first = warps.getInductionVar();
  // In split branches: the warps that take them (the same in all lanes).
  OpBuilder wb = guardedAt(outer, loc, first, levelMap);
  scf::ForOp::create(
      wb, loc, zero, arith::ConstantIndexOp::create(wb, loc, lanes), one,
      ValueRange(), [&](OpBuilder &lb, Location l, Value lane, ValueRange) {
        Value thread = arith::AddIOp::create(lb, l, first, lane);
        IRMapping local = levelMap;
        SmallVector<Value> operands;
        for (Value operand : op->getOperands())
          operands.push_back(materialize(lb, l, operand, thread, local));
        gather(lb, lane, operands);
        scf::YieldOp::create(lb, l);
      });
  if (compute)
    compute(wb, first);
  scf::ForOp::create(
      wb, loc, zero, warpSize, one, ValueRange(),
      [&](OpBuilder &lb, Location l, Value lane, ValueRange) {
        Value thread = arith::AddIOp::create(lb, l, first, lane);
        for (auto [value, buffer] :
             llvm::zip_equal(scatter(lb, lane), resultBuffers))
          memref::StoreOp::create(lb, l, value, buffer, thread);
        scf::YieldOp::create(lb, l);
      });
  return success();
}

namespace {
/// The fragments of mma.m16n8k16 with floating point types, as the PTX ISA
/// defines them ("Matrix Fragments for mma.m16n8k16 with floating point
/// type"): with g = lane / 4 and t = lane % 4,
///   A (16x16), element i: row g + 8 * ((i / 2) % 2),
///                         col 2t + i % 2 + 8 * (i / 4)
///   B (16x8),  element i: row 2t + i % 2 + 8 * (i / 2), col g
///   C, D (16x8), element i: row g + 8 * (i / 2), col 2t + i % 2
enum class Fragment { A, B, C };

/// A lane's g = lane / 4 and 2t = 2 * (lane % 4).
struct LaneCoordinates {
  Value group, pair;
};

LaneCoordinates getLaneCoordinates(OpBuilder &b, Location loc, Value lane) {
  Value four = arith::ConstantIndexOp::create(b, loc, 4);
  Value two = arith::ConstantIndexOp::create(b, loc, 2);
  return {arith::DivUIOp::create(b, loc, lane, four),
          arith::MulIOp::create(b, loc,
                                arith::RemUIOp::create(b, loc, lane, four),
                                two)};
}

/// The row and column of element `i` of the lane's `fragment`.
std::pair<Value, Value> getFragmentPosition(OpBuilder &b, Location loc,
                                            Fragment fragment,
                                            LaneCoordinates lane, int64_t i) {
  auto plus = [&](Value x, int64_t v) {
    if (v == 0)
      return x;
    return arith::AddIOp::create(b, loc, x,
                                 arith::ConstantIndexOp::create(b, loc, v))
        .getResult();
  };
  Value g = lane.group, t2 = lane.pair;
  switch (fragment) {
  case Fragment::A:
    return {plus(g, 8 * ((i / 2) % 2)), plus(t2, i % 2 + 8 * (i / 4))};
  case Fragment::B:
    return {plus(t2, i % 2 + 8 * (i / 2)), g};
  case Fragment::C:
    return {plus(g, 8 * (i / 2)), plus(t2, i % 2)};
  }
  llvm_unreachable("unknown fragment");
}
} // namespace

LogicalResult HostKernelEmitter::emitMmaSync(MmaSyncOp op,
                                             const IRMapping &levelMap,
                                             OpBuilder &b) {
  Location loc = op.getLoc();
  Type f32 = b.getF32Type();
  Value a = createScratch(MemRefType::get({16, 16}, f32), loc);
  Value bMatrix = createScratch(MemRefType::get({16, 8}, f32), loc);
  Value d = createScratch(MemRefType::get({16, 8}, f32), loc);
  // The warp's fragments into whole matrices, in f32 (exact for bf16 and
  // f16); C goes to D, which accumulates in place.
  auto gather = [&](OpBuilder &lb, Value laneIndex, ValueRange operands) {
    LaneCoordinates lane = getLaneCoordinates(lb, loc, laneIndex);
    auto spread = [&](Value fragment, Fragment kind, Value matrix) {
      auto vector = cast<VectorType>(fragment.getType());
      for (int64_t i = 0; i < vector.getNumElements(); ++i) {
        Value element = vector::ExtractOp::create(lb, loc, fragment, i);
        if (element.getType() != f32)
          element = arith::ExtFOp::create(lb, loc, f32, element);
        auto [row, col] = getFragmentPosition(lb, loc, kind, lane, i);
        memref::StoreOp::create(lb, loc, element, matrix, ValueRange{row, col});
      }
    };
    spread(operands[0], Fragment::A, a);
    spread(operands[1], Fragment::B, bMatrix);
    spread(operands[2], Fragment::C, d);
  };
  // Once per warp: D = C + A * B. Each product of two bf16 or f16 values
  // is exact in f32; the products are added to C in increasing k order,
  // rounding after each addition. The hardware's order is unspecified, so
  // a GPU's results may differ in the last bits.
  auto compute = [&](OpBuilder &wb, Value) {
    auto index = [&](int64_t v) {
      return arith::ConstantIndexOp::create(wb, loc, v).getResult();
    };
    Value m16 = index(16), n8 = index(8), k16 = index(16);
    scf::ForOp::create(
        wb, loc, zero, m16, one, ValueRange(),
        [&](OpBuilder &mb, Location, Value m, ValueRange) {
          scf::ForOp::create(
              mb, loc, zero, n8, one, ValueRange(),
              [&](OpBuilder &nb, Location, Value n, ValueRange) {
                Value c = memref::LoadOp::create(nb, loc, d, ValueRange{m, n});
                auto sum = scf::ForOp::create(
                    nb, loc, zero, k16, one, ValueRange{c},
                    [&](OpBuilder &kb, Location, Value k, ValueRange acc) {
                      Value x =
                          memref::LoadOp::create(kb, loc, a, ValueRange{m, k});
                      Value y = memref::LoadOp::create(kb, loc, bMatrix,
                                                       ValueRange{k, n});
                      Value product = arith::MulFOp::create(kb, loc, x, y);
                      Value next =
                          arith::AddFOp::create(kb, loc, acc[0], product);
                      scf::YieldOp::create(kb, loc, next);
                    });
                memref::StoreOp::create(nb, loc, sum.getResult(0), d,
                                        ValueRange{m, n});
                scf::YieldOp::create(nb, loc);
              });
          scf::YieldOp::create(mb, loc);
        });
  };
  auto scatter = [&](OpBuilder &lb, Value laneIndex) {
    LaneCoordinates lane = getLaneCoordinates(lb, loc, laneIndex);
    SmallVector<Value> elements;
    for (int64_t i = 0; i < 4; ++i) {
      auto [row, col] = getFragmentPosition(lb, loc, Fragment::C, lane, i);
      elements.push_back(
          memref::LoadOp::create(lb, loc, d, ValueRange{row, col}));
    }
    return SmallVector<Value>{vector::FromElementsOp::create(
        lb, loc, cast<VectorType>(op.getD().getType()), elements)};
  };
  return emitWarpCollective(op, levelMap, b, kWarpSize, gather, compute,
                            scatter);
}

LogicalResult HostKernelEmitter::emitLdMatrix(LdMatrixOp op,
                                              const IRMapping &levelMap,
                                              OpBuilder &b) {
  Location loc = op.getLoc();
  auto result = cast<VectorType>(op.getResult().getType());
  Type element = result.getElementType();
  // An 8x8 matrix of 16-bit elements: of one element each or, for bytes,
  // of two (the low one first).
  int64_t width = 16 / element.getIntOrFloatBitWidth();
  auto row = VectorType::get({8 * width}, element);
  // Row r of matrix j is the row lane 8j + r points at.
  Value rows =
      createScratch(MemRefType::get({kWarpSize, 8 * width}, element), loc);
  auto index = [&](OpBuilder &lb, int64_t v) {
    return arith::ConstantIndexOp::create(lb, loc, v).getResult();
  };
  return emitWarpCollective(
      op, levelMap, b, 8 * op.getCount(),
      [&](OpBuilder &lb, Value lane, ValueRange operands) {
        Value values = vector::LoadOp::create(lb, loc, row, operands.front(),
                                              operands.drop_front());
        vector::StoreOp::create(lb, loc, values, rows,
                                ValueRange{lane, index(lb, 0)});
      },
      /*compute=*/nullptr,
      [&](OpBuilder &lb, Value lane) {
        // Lane l gets row l / 4, columns 2 (l % 4) + {0, 1} of each matrix,
        // or with transpose rows 2 (l % 4) + {0, 1}, column l / 4 (16-bit
        // columns: `width` elements each).
        auto [quad, pair] = getLaneCoordinates(lb, loc, lane);
        SmallVector<Value> elements;
        for (int64_t i = 0; i < result.getNumElements(); ++i) {
          int64_t matrix = i / (2 * width), half = i / width % 2;
          Value across = pair;
          if (half)
            across = arith::AddIOp::create(lb, loc, pair, index(lb, 1));
          Value r = op.getTranspose() ? across : quad;
          Value c = op.getTranspose() ? quad : across;
          Value at = r;
          if (matrix)
            at = arith::AddIOp::create(lb, loc, r, index(lb, 8 * matrix));
          if (width > 1)
            c = arith::AddIOp::create(
                lb, loc, arith::MulIOp::create(lb, loc, c, index(lb, width)),
                index(lb, i % width));
          elements.push_back(
              memref::LoadOp::create(lb, loc, rows, ValueRange{at, c}));
        }
        return SmallVector<Value>{
            vector::FromElementsOp::create(lb, loc, result, elements)};
      });
}

Value HostKernelEmitter::getLayoutTable(OpBuilder &b, Location loc,
                                        SharedMatrixAttr layout, int64_t rows) {
  std::string name = llvm::formatv(
      "__norm_wgmma_offsets_s{0}_l{1}_s{2}_{3}_r{4}", layout.getSwizzle(),
      layout.getLbo(), layout.getSbo(), layout.getMnMajor() ? "mn" : "k", rows);
  auto type = MemRefType::get({rows, 16}, b.getI64Type());
  if (!SymbolTable::lookupSymbolIn(hostModule, name)) {
    SmallVector<int64_t> offsets;
    for (int64_t mn = 0; mn < rows; ++mn)
      for (int64_t k = 0; k < 16; ++k)
        offsets.push_back(layout.getOffset(mn, k));
    OpBuilder mb = OpBuilder::atBlockBegin(hostModule.getBody());
    memref::GlobalOp::create(
        mb, loc, name, mb.getStringAttr("private"), type,
        DenseElementsAttr::get(
            RankedTensorType::get({rows, 16}, b.getI64Type()),
            ArrayRef(offsets)),
        /*constant=*/true, /*alignment=*/IntegerAttr());
  }
  return memref::GetGlobalOp::create(b, loc, type, name);
}

LogicalResult HostKernelEmitter::emitWgmma(WgmmaOp op,
                                           const IRMapping &levelMap,
                                           OpBuilder &b) {
  Location loc = op.getLoc();
  SharedMatrixAttr aLayout = op.getALayoutAttr();
  SmallVector<Value> memrefs = {op.getB()};
  if (aLayout)
    memrefs.push_back(op.getA());
  for (Value memref : memrefs)
    if (!uniformValues.contains(memref))
      return op.emitOpError()
             << "reads a memref that depends on the thread; the host "
                "execution needs the warpgroup's operands in views of the "
                "CTA's workgroup memory";
  int64_t n = op.getN();
  Type f32 = b.getF32Type(), indexType = b.getIndexType();
  Value a = createScratch(MemRefType::get({16, 16}, f32), loc);
  Value bMatrix = createScratch(MemRefType::get({16, n}, f32), loc);
  Value d = createScratch(MemRefType::get({16, n}, f32), loc);
  // Where A and B start (elements), the same in every lane.
  Value starts = createScratch(MemRefType::get({2}, indexType), loc);
  auto index = [&](OpBuilder &lb, int64_t v) {
    return arith::ConstantIndexOp::create(lb, loc, v).getResult();
  };
  // Element i of a thread's accumulators: C's position of i % 4, 8 * (i / 4)
  // columns on.
  auto accumulatorPosition = [&](OpBuilder &lb, LaneCoordinates lane,
                                 int64_t i) {
    auto [row, col] = getFragmentPosition(lb, loc, Fragment::C, lane, i % 4);
    if (i >= 4)
      col = arith::AddIOp::create(lb, loc, col, index(lb, 8 * (i / 4)));
    return std::pair{row, col};
  };

  auto gather = [&](OpBuilder &lb, Value laneIndex, ValueRange operands) {
    LaneCoordinates lane = getLaneCoordinates(lb, loc, laneIndex);
    WgmmaOp::Adaptor adaptor(operands, op);
    auto c = cast<VectorType>(op.getC().getType());
    for (int64_t i = 0; i < c.getNumElements(); ++i) {
      auto [row, col] = accumulatorPosition(lb, lane, i);
      memref::StoreOp::create(
          lb, loc, vector::ExtractOp::create(lb, loc, adaptor.getC(), i), d,
          ValueRange{row, col});
    }
    if (aLayout) {
      memref::StoreOp::create(lb, loc, adaptor.getAIndex(), starts,
                              index(lb, 0));
    } else {
      for (int64_t i = 0; i < 8; ++i) {
        Value element = arith::ExtFOp::create(
            lb, loc, f32,
            vector::ExtractOp::create(lb, loc, adaptor.getA(), i).getResult());
        auto [row, col] = getFragmentPosition(lb, loc, Fragment::A, lane, i);
        memref::StoreOp::create(lb, loc, element, a, ValueRange{row, col});
      }
    }
    memref::StoreOp::create(lb, loc, adaptor.getBIndex(), starts, index(lb, 1));
  };

  // Once per warp: its 16 rows of D = A * B (+ C), the products exact in
  // f32 and added in increasing k order.
  auto compute = [&](OpBuilder &wb, Value first) {
    Value k16 = index(wb, 16), width = index(wb, 2);
    // Element (mn, k) of an operand that starts at element `start`: the
    // layout's offset, swizzled on the address (the memref's first element
    // aligned to the swizzle's atom), as a wgmma reads it.
    auto read = [&](OpBuilder &rb, Value memref, Value start, Value table,
                    SharedMatrixAttr layout, Value mn, Value k) {
      Value offset = arith::AddIOp::create(
          rb, loc, arith::MulIOp::create(rb, loc, start, width),
          arith::IndexCastOp::create(
              rb, loc, indexType,
              memref::LoadOp::create(rb, loc, table, ValueRange{mn, k})));
      offset = emitSwizzle(rb, loc, offset, layout.getSwizzle());
      Value element = memref::LoadOp::create(
          rb, loc, memref,
          arith::DivUIOp::create(rb, loc, offset, width).getResult());
      return arith::ExtFOp::create(rb, loc, f32, element).getResult();
    };
    auto forEach = [&](OpBuilder &fb, int64_t rows, int64_t cols,
                       function_ref<void(OpBuilder &, Value, Value)> body) {
      scf::ForOp::create(fb, loc, zero, index(fb, rows), one, ValueRange(),
                         [&](OpBuilder &rb, Location, Value r, ValueRange) {
                           scf::ForOp::create(rb, loc, zero, index(rb, cols),
                                              one, ValueRange(),
                                              [&](OpBuilder &cb, Location,
                                                  Value c, ValueRange) {
                                                body(cb, r, c);
                                                scf::YieldOp::create(cb, loc);
                                              });
                           scf::YieldOp::create(rb, loc);
                         });
    };
    Value bStart = memref::LoadOp::create(wb, loc, starts, index(wb, 1));
    Value bTable = getLayoutTable(wb, loc, op.getBLayoutAttr(), n);
    Value bMemref = levelMap.lookup(op.getB());
    forEach(wb, n, 16, [&](OpBuilder &eb, Value col, Value k) {
      memref::StoreOp::create(
          eb, loc,
          read(eb, bMemref, bStart, bTable, op.getBLayoutAttr(), col, k),
          bMatrix, ValueRange{k, col});
    });
    if (aLayout) {
      // Warp w of the warpgroup: rows 16w to 16w + 15 of A.
      Value warp = arith::RemUIOp::create(
          wb, loc, arith::DivUIOp::create(wb, loc, first, index(wb, 32)),
          index(wb, 4));
      Value firstRow = arith::MulIOp::create(wb, loc, warp, k16);
      Value aStart = memref::LoadOp::create(wb, loc, starts, index(wb, 0));
      Value aTable = getLayoutTable(wb, loc, aLayout, 64);
      Value aMemref = levelMap.lookup(op.getA());
      forEach(wb, 16, 16, [&](OpBuilder &eb, Value row, Value k) {
        Value mn = arith::AddIOp::create(eb, loc, firstRow, row);
        memref::StoreOp::create(
            eb, loc, read(eb, aMemref, aStart, aTable, aLayout, mn, k), a,
            ValueRange{row, k});
      });
    }
    Value zeroF32 = arith::ConstantOp::create(wb, loc, wb.getF32FloatAttr(0));
    forEach(wb, 16, n, [&](OpBuilder &eb, Value m, Value col) {
      Value c = op.getAccumulate()
                    ? memref::LoadOp::create(eb, loc, d, ValueRange{m, col})
                          .getResult()
                    : zeroF32;
      auto sum = scf::ForOp::create(
          eb, loc, zero, k16, one, ValueRange{c},
          [&](OpBuilder &kb, Location, Value k, ValueRange acc) {
            Value x = memref::LoadOp::create(kb, loc, a, ValueRange{m, k});
            Value y =
                memref::LoadOp::create(kb, loc, bMatrix, ValueRange{k, col});
            Value product = arith::MulFOp::create(kb, loc, x, y);
            scf::YieldOp::create(
                kb, loc,
                arith::AddFOp::create(kb, loc, acc[0], product).getResult());
          });
      memref::StoreOp::create(eb, loc, sum.getResult(0), d, ValueRange{m, col});
    });
  };

  auto scatter = [&](OpBuilder &lb, Value laneIndex) {
    LaneCoordinates lane = getLaneCoordinates(lb, loc, laneIndex);
    auto type = cast<VectorType>(op.getD().getType());
    SmallVector<Value> elements;
    for (int64_t i = 0; i < type.getNumElements(); ++i) {
      auto [row, col] = accumulatorPosition(lb, lane, i);
      elements.push_back(
          memref::LoadOp::create(lb, loc, d, ValueRange{row, col}));
    }
    return SmallVector<Value>{
        vector::FromElementsOp::create(lb, loc, type, elements)};
  };
  return emitWarpCollective(op, levelMap, b, kWarpSize, gather, compute,
                            scatter);
}

LogicalResult HostKernelEmitter::checkUniformBounds(scf::ForOp loop) {
  for (Value bound :
       {loop.getLowerBound(), loop.getUpperBound(), loop.getStep()})
    if (!uniformValues.contains(bound))
      return loop.emitOpError()
             << "contains a collective but its bounds depend on the thread; "
                "the host execution runs such loops once per CTA";
  return success();
}

FailureOr<SmallVector<Value>>
HostKernelEmitter::seedCarriedValues(scf::ForOp loop, const IRMapping &levelMap,
                                     OpBuilder &b) {
  // Loop-carried values live in per-thread buffers, seeded with the initial
  // values; the loop results are the buffers after the last iteration.
  Location loc = loop.getLoc();
  SmallVector<Value> carried;
  for (auto [arg, result] :
       llvm::zip(loop.getRegionIterArgs(), loop.getResults())) {
    FailureOr<Value> buffer = createBuffer(arg, loc);
    if (failed(buffer))
      return failure();
    buffers[arg] = *buffer;
    buffers[result] = *buffer;
    carried.push_back(*buffer);
  }
  if (!carried.empty())
    emitThreadLoop(
        b, loc, levelMap, [&](OpBuilder &tb, Value thread, IRMapping &local) {
          for (auto [init, buffer] : llvm::zip(loop.getInitArgs(), carried))
            memref::StoreOp::create(tb, loc,
                                    materialize(tb, loc, init, thread, local),
                                    buffer, thread);
        });
  return carried;
}

LogicalResult HostKernelEmitter::emitIteration(scf::ForOp loop,
                                               ArrayRef<Value> carried,
                                               Value iv,
                                               const IRMapping &levelMap,
                                               OpBuilder &b) {
  Location loc = loop.getLoc();
  IRMapping bodyMap = levelMap;
  bodyMap.map(loop.getInductionVar(), iv);
  uniformValues.insert(loop.getInductionVar());
  if (failed(emitBlock(*loop.getBody(), bodyMap, b)))
    return failure();

  // The next iteration's arguments: all values are read before any buffer
  // is written, so yields that permute the arguments stay correct.
  auto yield = cast<scf::YieldOp>(loop.getBody()->getTerminator());
  SmallVector<std::pair<Value, Value>> updates;
  for (auto [value, arg, buffer] :
       llvm::zip(yield.getOperands(), loop.getRegionIterArgs(), carried))
    if (value != arg)
      updates.push_back({value, buffer});
  if (!updates.empty())
    emitThreadLoop(
        b, loc, bodyMap, [&](OpBuilder &tb, Value thread, IRMapping &local) {
          SmallVector<Value> next;
          for (auto [value, buffer] : updates)
            next.push_back(materialize(tb, loc, value, thread, local));
          for (auto [value, update] : llvm::zip(next, updates))
            memref::StoreOp::create(tb, loc, value, update.second, thread);
        });
  return success();
}

LogicalResult HostKernelEmitter::emitSplitLoop(scf::ForOp loop,
                                               IRMapping &levelMap,
                                               OpBuilder &b) {
  if (failed(checkUniformBounds(loop)))
    return failure();
  FailureOr<SmallVector<Value>> carried = seedCarriedValues(loop, levelMap, b);
  if (failed(carried))
    return failure();
  auto hostLoop = scf::ForOp::create(
      b, loop.getLoc(), levelMap.lookup(loop.getLowerBound()),
      levelMap.lookup(loop.getUpperBound()), levelMap.lookup(loop.getStep()));
  OpBuilder inner = OpBuilder::atBlockTerminator(hostLoop.getBody());
  return emitIteration(loop, *carried, hostLoop.getInductionVar(), levelMap,
                       inner);
}

void HostKernelEmitter::emitThreadLoop(
    OpBuilder &b, Location loc, const IRMapping &levelMap,
    function_ref<void(OpBuilder &, Value, IRMapping &)> bodyBuilder) {
  scf::ForOp::create(
      b, loc, zero, threadCount, one, ValueRange(),
      [&](OpBuilder &tb, Location, Value thread, ValueRange) {
        if (reverseThreads)
          thread = arith::SubIOp::create(
              tb, loc, arith::SubIOp::create(tb, loc, threadCount, one),
              thread);
        IRMapping local = levelMap;
        emitGuarded(tb, loc, thread, local,
                    [&](OpBuilder &gb) { bodyBuilder(gb, thread, local); });
        scf::YieldOp::create(tb, loc);
      });
}

void HostKernelEmitter::emitGuarded(OpBuilder &b, Location loc, Value thread,
                                    IRMapping &local,
                                    function_ref<void(OpBuilder &)> body) {
  if (guards.empty())
    return body(b);
  Value taken;
  for (auto [condition, expected] : guards) {
    Value value = materialize(b, loc, condition, thread, local);
    if (!expected)
      value = arith::XOrIOp::create(b, loc, value,
                                    arith::ConstantIntOp::create(b, loc, 1, 1));
    taken = taken ? arith::AndIOp::create(b, loc, taken, value) : value;
  }
  auto branch = scf::IfOp::create(b, loc, taken);
  OpBuilder inner = OpBuilder::atBlockTerminator(branch.thenBlock());
  body(inner);
}

bool HostKernelEmitter::isWarpUniform(Value value) const {
  if (uniformValues.contains(value))
    return true;
  Operation *op = value.getDefiningOp();
  if (!op || value == threadIndex || op->getNumRegions() != 0 ||
      !isMemoryEffectFree(op))
    return false;
  // The thread index over (or shifted right past) a multiple of 32.
  APInt divisor;
  if (isa<arith::DivUIOp, arith::ShRUIOp>(op) &&
      op->getOperand(0) == threadIndex &&
      matchPattern(op->getOperand(1), m_ConstantInt(&divisor))) {
    int64_t d = divisor.getSExtValue();
    return isa<arith::DivUIOp>(op) ? d > 0 && d % kWarpSize == 0 : d >= 5;
  }
  return llvm::all_of(op->getOperands(),
                      [&](Value operand) { return isWarpUniform(operand); });
}

LogicalResult HostKernelEmitter::emitSplitIf(scf::IfOp branch,
                                             IRMapping &levelMap,
                                             OpBuilder &b) {
  Value condition = branch.getCondition();
  if (!isWarpUniform(condition))
    return branch.emitOpError()
           << "contains a warp collective but its condition may differ "
              "between the lanes of a warp; the host execution takes such "
              "branches by whole warps (a function of the uniform values and "
              "the thread index over a multiple of 32)";
  Location loc = branch.getLoc();
  FailureOr<SmallVector<Value>> resultsOr = createResultBuffers(branch);
  if (failed(resultsOr))
    return failure();
  SmallVector<Value> results = *resultsOr;
  // Warp specialization: a loop in each branch over the same range (the
  // producer's and the consumers') runs in lockstep, an iteration of the
  // first branch's, then one of the second's: the producer's loads of
  // iteration i land before the consumers' wait for them, as on the GPU,
  // where the producer runs ahead of the consumers.
  auto getRoleLoop = [](Region &region) -> scf::ForOp {
    if (region.empty())
      return {};
    for (Operation &op : region.front())
      if (auto loop = dyn_cast<scf::ForOp>(op); loop && isSplitPoint(loop))
        return loop;
    return {};
  };
  scf::ForOp roleLoops[2] = {getRoleLoop(branch.getThenRegion()),
                             getRoleLoop(branch.getElseRegion())};
  bool lockstep =
      roleLoops[0] && roleLoops[1] &&
      roleLoops[0].getLowerBound() == roleLoops[1].getLowerBound() &&
      roleLoops[0].getUpperBound() == roleLoops[1].getUpperBound() &&
      roleLoops[0].getStep() == roleLoops[1].getStep();
  IRMapping regionMaps[2] = {levelMap, levelMap};
  if (lockstep) {
    SmallVector<Value> carried[2];
    for (int64_t r = 0; r < 2; ++r) {
      guards.push_back({condition, r == 0});
      Block *block = roleLoops[r]->getBlock();
      if (failed(emitOps(*block, block->begin(), roleLoops[r]->getIterator(),
                         regionMaps[r], b)) ||
          failed(checkUniformBounds(roleLoops[r])))
        return failure();
      FailureOr<SmallVector<Value>> seeded =
          seedCarriedValues(roleLoops[r], regionMaps[r], b);
      guards.pop_back();
      if (failed(seeded))
        return failure();
      carried[r] = *seeded;
    }
    scf::ForOp loop = roleLoops[0];
    auto hostLoop = scf::ForOp::create(
        b, loc, levelMap.lookup(loop.getLowerBound()),
        levelMap.lookup(loop.getUpperBound()), levelMap.lookup(loop.getStep()));
    OpBuilder inner = OpBuilder::atBlockTerminator(hostLoop.getBody());
    for (int64_t r = 0; r < 2; ++r) {
      guards.push_back({condition, r == 0});
      LogicalResult emitted =
          emitIteration(roleLoops[r], carried[r], hostLoop.getInductionVar(),
                        regionMaps[r], inner);
      guards.pop_back();
      if (failed(emitted))
        return failure();
    }
  }
  for (auto [region, taken] : {std::pair{&branch.getThenRegion(), true},
                               std::pair{&branch.getElseRegion(), false}}) {
    if (region->empty())
      continue;
    guards.push_back({condition, taken});
    IRMapping &regionMap = regionMaps[taken ? 0 : 1];
    Block &block = region->front();
    Block::iterator begin = block.begin();
    if (lockstep)
      begin = std::next(roleLoops[taken ? 0 : 1]->getIterator());
    if (failed(emitOps(block, begin, block.getTerminator()->getIterator(),
                       regionMap, b)))
      return failure();
    if (!results.empty())
      emitThreadLoop(
          b, loc, regionMap,
          [&](OpBuilder &tb, Value thread, IRMapping &local) {
            for (auto [value, buffer] :
                 llvm::zip(block.getTerminator()->getOperands(), results))
              memref::StoreOp::create(
                  tb, loc, materialize(tb, loc, value, thread, local), buffer,
                  thread);
          });
    guards.pop_back();
  }
  return success();
}

FailureOr<SmallVector<Value>>
HostKernelEmitter::createResultBuffers(Operation *op) {
  SmallVector<Value> results;
  for (Value result : op->getResults()) {
    FailureOr<Value> buffer = createBuffer(result, op->getLoc());
    if (failed(buffer))
      return failure();
    buffers[result] = *buffer;
    results.push_back(*buffer);
  }
  return results;
}

OpBuilder HostKernelEmitter::guardedAt(OpBuilder &outer, Location loc,
                                       Value thread,
                                       const IRMapping &levelMap) {
  IRMapping local = levelMap;
  OpBuilder inside(outer);
  emitGuarded(outer, loc, thread, local,
              [&](OpBuilder &guarded) { inside = guarded; });
  return inside;
}

FailureOr<Value> HostKernelEmitter::createBuffer(Value value, Location loc) {
  Type type = value.getType();
  auto vector = dyn_cast<VectorType>(type);
  Type scalar = vector ? vector.getElementType() : type;
  if (!scalar.isIntOrIndexOrFloat() || (vector && vector.isScalable()))
    return emitError(loc) << "a value of type " << type
                          << " lives across a collective; the host execution "
                             "keeps such values in per-thread buffers, which "
                             "hold scalars and fixed-size vectors only";
  // On the heap: large CTAs times many live vectors would not fit the
  // caller's stack.
  auto memref = memref::AllocOp::create(allocBuilder, loc,
                                        MemRefType::get({blockSize}, type),
                                        allocBuilder.getI64IntegerAttr(64));
  threadBuffers.push_back(memref);
  return Value(memref);
}

Value HostKernelEmitter::createScratch(MemRefType type, Location loc) {
  auto memref = memref::AllocOp::create(allocBuilder, loc, type,
                                        allocBuilder.getI64IntegerAttr(64));
  threadBuffers.push_back(memref);
  return memref;
}

Value HostKernelEmitter::materialize(OpBuilder &b, Location loc, Value value,
                                     Value thread, IRMapping &local) {
  if (Value mapped = local.lookupOrNull(value))
    return mapped;
  Value result;
  if (value == threadIndex) {
    result = thread;
  } else if (threadFunctions.contains(value)) {
    Operation *op = value.getDefiningOp();
    for (Value operand : op->getOperands())
      materialize(b, loc, operand, thread, local);
    result = cloneForHost(b, *op, local)
                 ->getResult(cast<OpResult>(value).getResultNumber());
  } else {
    result = memref::LoadOp::create(b, loc, buffers.lookup(value), thread);
  }
  local.map(value, result);
  return result;
}

namespace {
struct NormKernelsToHostPass
    : mlir::norm::impl::NormKernelsToHostBase<NormKernelsToHostPass> {
  using Base::Base;

  void runOnOperation() override {
    ModuleOp module = getOperation();
    SmallVector<gpu::GPUModuleOp> gpuModules(module.getOps<gpu::GPUModuleOp>());
    OpBuilder builder(module.getContext());
    for (gpu::GPUModuleOp gpuModule : gpuModules) {
      for (auto kernel : gpuModule.getOps<gpu::GPUFuncOp>()) {
        if (!kernel.isKernel())
          continue;
        // A host program may declare the host function to call it.
        std::string name = (kernel.getName() + kHostFunctionSuffix).str();
        Operation *existing = module.lookupSymbol(name);
        auto declaration = dyn_cast_or_null<func::FuncOp>(existing);
        if (existing && !(declaration && declaration.isDeclaration())) {
          kernel.emitOpError() << "cannot be run on the host: the module "
                                  "already defines '"
                               << name << "'";
          return signalPassFailure();
        }
        FailureOr<int64_t> blockSize = getBlockSize(kernel, this->blockSize);
        if (failed(blockSize) || failed(verifyHostContract(kernel, *blockSize)))
          return signalPassFailure();
        // Work on a copy: the index ops move, the kernel stays as it was.
        OwningOpRef<gpu::GPUFuncOp> work(kernel.clone());
        normalizeIndexOps(*work);
        lowerAsyncCopies(*work);
        if (declaration)
          builder.setInsertionPoint(declaration);
        else
          builder.setInsertionPointToEnd(module.getBody());
        FailureOr<func::FuncOp> host =
            HostKernelEmitter(*work, *blockSize, reverseThreads).emit(builder);
        if (failed(host))
          return signalPassFailure();
        if (declaration) {
          if (declaration.getFunctionType() != host->getFunctionType()) {
            declaration.emitOpError()
                << "declares the host function of '" << kernel.getName()
                << "' with type " << declaration.getFunctionType()
                << "; expected " << host->getFunctionType();
            return signalPassFailure();
          }
          declaration.erase();
        }
        if (failed(verify(*host)))
          return signalPassFailure();
      }
    }
    if (!keepGpuModule)
      for (gpu::GPUModuleOp gpuModule : gpuModules)
        gpuModule.erase();
  }
};
} // namespace
