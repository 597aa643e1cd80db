//===- RealFormat.h - how norm-opt spells reals -----------------*- C++ -*-===//
//
// Reals such as `eps(1.0e-06)` print in the shortest decimal form that parses
// back to the same double, so that IR stays readable and round-trips exactly;
// diagnostics and descriptions of operations use the same spelling.
//
//===----------------------------------------------------------------------===//

#ifndef NORM_COMPILER_MODEL_REALFORMAT_H
#define NORM_COMPILER_MODEL_REALFORMAT_H

#include <string>

namespace norm {

/// The shortest decimal spelling of `value` that parses back to the same
/// double, in MLIR's float literal syntax (`1.0e-06`, `2.0`, `0.5`). NaN and
/// the infinities have no decimal literal: they print as the hexadecimal bit
/// pattern MLIR's parser accepts (`0x7FF8000000000000`).
std::string formatReal(double value);

/// As formatReal, but NaN and the infinities by name (`NaN`, `+inf`, `-inf`):
/// for messages.
std::string describeReal(double value);

} // namespace norm

#endif // NORM_COMPILER_MODEL_REALFORMAT_H
