//===- Target.cpp - the GPUs kernels are generated for --------------------===//

#include "compiler/model/Target.h"

using namespace norm;

static constexpr ChipInfo kChips[] = {
    {"sm_80", 163 * 1024, false, 0},
    {"sm_89", 99 * 1024, false, 81},
    {"sm_90", 227 * 1024, true, 78},
    {"sm_90a", 227 * 1024, true, 78},
};

const ChipInfo *norm::findChip(std::string_view chip) {
  for (const ChipInfo &info : kChips)
    if (info.name == chip)
      return &info;
  return nullptr;
}

std::string_view norm::getKnownChips() { return "sm_80, sm_89, sm_90 or sm_90a"; }

int64_t TargetOptions::getMaxSharedBytes() const {
  if (maxSharedBytes > 0)
    return maxSharedBytes;
  const ChipInfo *info = findChip(chip);
  return info ? info->maxSharedBytesPerCta : 0;
}

Status TargetOptions::verify() const {
  const ChipInfo *info = findChip(chip);
  if (!info)
    return Status::invalid("unsupported chip '" + chip + "' (expected " +
                           std::string(getKnownChips()) + ")");
  if (ptxVersion < kMinPtxVersion || ptxVersion > kMaxPtxVersion)
    return Status::invalid("unsupported ptx-version " +
                           std::to_string(ptxVersion) +
                           " (expected 78 to 90, i.e. PTX 7.8 to 9.0)");
  if (maxSharedBytes < 0)
    return Status::invalid("max-shared-bytes (" +
                           std::to_string(maxSharedBytes) + ") is negative");
  if (maxSharedBytes > info->maxSharedBytesPerCta)
    return Status::invalid(
        "max-shared-bytes (" + std::to_string(maxSharedBytes) +
        ") exceeds what a CTA may use on " + chip + " (" +
        std::to_string(info->maxSharedBytesPerCta) + ")");
  if (pdl && !info->hasGridDependencyControl)
    return Status::invalid("pdl needs griddepcontrol, which " + chip +
                           " lacks (sm_90 and sm_90a have it)");
  return Status::success();
}

bool TargetOptions::hasFp8Conversions() const {
  const ChipInfo *info = findChip(chip);
  return info && info->minFp8PtxVersion &&
         ptxVersion >= info->minFp8PtxVersion;
}
