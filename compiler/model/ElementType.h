//===- ElementType.h - the storage types of kernel buffers ------*- C++ -*-===//

#ifndef NORM_COMPILER_MODEL_ELEMENTTYPE_H
#define NORM_COMPILER_MODEL_ELEMENTTYPE_H

#include <cstdint>
#include <optional>
#include <string_view>

namespace norm {

/// The float types of tensors, i32 for offsets (attention's cumulative
/// sequence lengths), and the FP8 types of quantized outputs (OCP's e4m3
/// without infinities, and e5m2).
enum class ElementType { f32, f16, bf16, i32, f8E4M3FN, f8E5M2 };

/// Bytes per element.
int64_t getElementBytes(ElementType type);
/// "f32", "f16", "bf16", "f8E4M3FN" (MLIR's spelling); "?" for a value
/// outside the enum.
std::string_view getElementTypeName(ElementType type);
std::optional<ElementType> parseElementType(std::string_view name);
/// Whether `type` is one of the enumerators (C callers pass integers).
bool isKnownElementType(ElementType type);
/// f32, f16 or bf16: the types of tensors and parameters.
bool isFloatElementType(ElementType type);
/// f8E4M3FN or f8E5M2: the types of quantized outputs.
bool isFp8ElementType(ElementType type);
/// The largest finite value of an FP8 type (448, 57344): where quantization
/// saturates.
double getFp8MaxFinite(ElementType type);

} // namespace norm

#endif // NORM_COMPILER_MODEL_ELEMENTTYPE_H
