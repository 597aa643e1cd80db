//===- KernelModel.h - the kernel model, in one include ---------*- C++ -*-===//
//
// The plain-C++ description of norm-opt's kernels that every layer shares:
// operations and their rules (Operation.h), their buffers (Buffers.h),
// launch configurations, row storage and the heuristic (Launch.h), targets
// (Target.h), kernel signatures (KernelSignature.h) and Status.
//
//===----------------------------------------------------------------------===//

#ifndef NORM_COMPILER_MODEL_KERNELMODEL_H
#define NORM_COMPILER_MODEL_KERNELMODEL_H

#include "compiler/model/Buffers.h"
#include "compiler/model/ElementType.h"
#include "compiler/model/KernelSignature.h"
#include "compiler/model/Launch.h"
#include "compiler/model/Operation.h"
#include "compiler/model/RealFormat.h"
#include "compiler/model/Status.h"
#include "compiler/model/Target.h"

#endif // NORM_COMPILER_MODEL_KERNELMODEL_H
