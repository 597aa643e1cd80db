//===- NormOps.h - norm dialect operations ----------------------*- C++ -*-===//

#ifndef NORM_DIALECTS_NORMOPS_H
#define NORM_DIALECTS_NORMOPS_H

#include "dialects/NormDialect.h"

#define GET_OP_CLASSES
#include "dialects/NormOps.h.inc"

#endif // NORM_DIALECTS_NORMOPS_H
