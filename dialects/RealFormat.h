//===- RealFormat.h - how the norm dialect spells reals ---------*- C++ -*-===//
//
// Reals such as `eps(1.0e-06)` print in the shortest decimal form that parses
// back to the same double, so that IR stays readable and round-trips exactly.
//
//===----------------------------------------------------------------------===//

#ifndef NORM_DIALECTS_REALFORMAT_H
#define NORM_DIALECTS_REALFORMAT_H

#include <string>

namespace mlir::norm {

/// The shortest decimal spelling of `value` that parses back to the same
/// double, in MLIR's float literal syntax (`1.0e-06`, `2.0`, `0.5`). NaN and
/// the infinities have no decimal literal: they print as the hexadecimal bit
/// pattern MLIR's parser accepts (`0x7FF8000000000000`).
std::string formatReal(double value);

} // namespace mlir::norm

#endif // NORM_DIALECTS_REALFORMAT_H
