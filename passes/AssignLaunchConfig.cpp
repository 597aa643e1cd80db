//===- AssignLaunchConfig.cpp - heuristic launch configurations -----------===//

#include "passes/LoweringPasses.h"

#include "dialects/NormOps.h"

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
  ::norm::LaunchConfig pickLaunch(KernelOpInterface op);
};

} // namespace

::norm::LaunchConfig AssignLaunchConfig::pickLaunch(KernelOpInterface op) {
  ::norm::LaunchConfig launch =
      ::norm::getHeuristicLaunch(op.getOpSpec(), op.getStaticRows());
  int64_t rowGroups = launch.rowsPerCta / launch.getConcurrentRows();
  int64_t rowTiles = launch.isAttention() ? launch.getRowTiles() : 0;
  if (vector)
    launch.vector = vector;
  if (threadsPerRow) {
    launch.threadsPerRow = threadsPerRow;
    // Keep the CTA at least as wide as a row.
    launch.warps = std::max<int64_t>(launch.warps, (threadsPerRow + 31) / 32);
  }
  if (warps)
    launch.warps = warps;
  // sm_90a: the wgmma family where it takes the op and nothing is forced.
  ::norm::TargetOptions target = getTargetOptions(op);
  bool forced =
      vector || threadsPerRow || warps || rowsPerCta || blockN || stages;
  if (!forced)
    if (std::optional<::norm::LaunchConfig> hopper =
            ::norm::getWarpgroupAttentionHeuristic(
                op.getOpSpec(), target.getMaxSharedBytes(), target.chip))
      return *hopper;
  // Attention: rows_per_cta if forced, else the heuristic's query rows a
  // warp (32 or 16) where the rest of what is forced leaves them room, else
  // 16.
  if (launch.isAttention()) {
    if (blockN)
      launch.blockN = blockN;
    if (stages)
      launch.stages = stages;
    if (rowsPerCta) {
      launch.rowsPerCta = rowsPerCta;
      return launch;
    }
    return ::norm::fitAttentionRows(op.getOpSpec(), launch, rowTiles,
                                    target.getMaxSharedBytes());
  }
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
  SmallVector<KernelOpInterface> ops;
  getOperation()->walk([&](KernelOpInterface op) {
    if (!op.getLaunchAttr())
      ops.push_back(op);
  });
  for (KernelOpInterface op : ops) {
    ::norm::LaunchConfig launch = pickLaunch(op);
    // The kernel model decides whether the configuration fits the op
    // (elements per thread and the CTA's registers, idle threads, the
    // alignment of row segments).
    ::norm::Status status = ::norm::verifyLaunchFor(
        op.getOpSpec(), launch,
        getTargetOptions(op).getMaxSharedBytes());
    if (!status) {
      op->emitOpError() << "cannot use the launch configuration "
                        << launch.getMangledSuffix() << ": "
                        << status.message();
      return signalPassFailure();
    }
    op.setLaunchAttr(getLaunchAttr(&getContext(), launch));
  }
}
