//===- AssignLaunchConfig.cpp - heuristic launch configurations -----------===//

#include "passes/LoweringPasses.h"

#include "compiler/KernelDescription.h"
#include "dialects/NormOps.h"

#include "mlir/IR/Verifier.h"

namespace mlir::norm {
#define GEN_PASS_DEF_NORMASSIGNLAUNCHCONFIG
#include "passes/LoweringPasses.h.inc"
} // namespace mlir::norm

using namespace mlir;
using namespace mlir::norm;

namespace {

struct AssignLaunchConfig
    : public mlir::norm::impl::NormAssignLaunchConfigBase<AssignLaunchConfig> {
  using Base::Base;

  void runOnOperation() override;

private:
  /// The heuristic's configuration for `op` with the forced fields applied.
  ::norm::LaunchConfig pickLaunch(Operation *op, const ::norm::OpSpec &spec);
};

} // namespace

::norm::LaunchConfig
AssignLaunchConfig::pickLaunch(Operation *op, const ::norm::OpSpec &spec) {
  ::norm::LaunchConfig launch =
      ::norm::getHeuristicLaunch(spec, ::norm::getStaticRows(op));
  int64_t rowGroups = launch.rowsPerCta / launch.getConcurrentRows();
  if (vector)
    launch.vector = vector;
  if (threadsPerRow) {
    launch.threadsPerRow = threadsPerRow;
    // Keep the CTA at least as wide as a row.
    launch.warps = std::max<int64_t>(launch.warps, (threadsPerRow + 31) / 32);
  }
  if (warps)
    launch.warps = warps;
  if (rowsPerCta)
    launch.rowsPerCta = rowsPerCta;
  else if (threadsPerRow || warps)
    launch.rowsPerCta =
        launch.threadsPerRow > 0 && launch.warps * 32 >= launch.threadsPerRow
            ? launch.getConcurrentRows() * rowGroups
            : 1;
  return launch;
}

void AssignLaunchConfig::runOnOperation() {
  SmallVector<Operation *> ops;
  getOperation()->walk([&](Operation *op) {
    if (::norm::isKernelOp(op) && !::norm::getLaunch(op))
      ops.push_back(op);
  });
  for (Operation *op : ops) {
    FailureOr<::norm::OpSpec> spec = ::norm::getOpSpec(op);
    if (failed(spec))
      return signalPassFailure();
    // QK-Norm heads live in registers: 1024 threads hold at most this many
    // elements. Fused rows beyond them are staged or streamed.
    int64_t length = ::norm::getKernelRowLength(op);
    if (isa<QKNormPrologueOp>(op) && length > 1024 * kMaxElementsPerThread) {
      op->emitOpError() << "heads of " << length
                        << " elements do not fit in the registers of one CTA "
                           "(at most "
                        << 1024 * kMaxElementsPerThread
                        << "); such heads are not supported";
      return signalPassFailure();
    }
    if (isa<FusedRowOp>(op) && length > kMaxFusedRowLength) {
      op->emitOpError() << "rows of " << length
                        << " elements are longer than a kernel supports (at "
                           "most "
                        << kMaxFusedRowLength << ")";
      return signalPassFailure();
    }
    ::norm::LaunchConfig launch = pickLaunch(op, *spec);
    auto emitError = [&] {
      return op->emitOpError("cannot use the launch configuration: ");
    };
    LaunchAttr attr = LaunchAttr::getChecked(
        emitError, op->getContext(), launch.vector, launch.threadsPerRow,
        launch.warps, launch.rowsPerCta);
    if (!attr)
      return signalPassFailure();
    op->setAttr("launch", attr);
    // The op's own rules (elements per thread, idle threads, alignment of
    // row segments) decide whether the configuration fits it.
    if (failed(verify(op)))
      return signalPassFailure();
  }
}
