//===- ElementType.h - the storage types of kernel buffers ------*- C++ -*-===//

#ifndef NORM_COMPILER_MODEL_ELEMENTTYPE_H
#define NORM_COMPILER_MODEL_ELEMENTTYPE_H

#include <cstdint>
#include <optional>
#include <string_view>

namespace norm {

/// The float types of tensors, and i32 for offsets (attention's cumulative
/// sequence lengths).
enum class ElementType { f32, f16, bf16, i32 };

/// Bytes per element.
int64_t getElementBytes(ElementType type);
/// "f32", "f16", "bf16" (MLIR's spelling); "?" for a value outside the enum.
std::string_view getElementTypeName(ElementType type);
std::optional<ElementType> parseElementType(std::string_view name);
/// Whether `type` is one of the enumerators (C callers pass integers).
bool isKnownElementType(ElementType type);
/// f32, f16 or bf16: the types of tensors and parameters.
bool isFloatElementType(ElementType type);

} // namespace norm

#endif // NORM_COMPILER_MODEL_ELEMENTTYPE_H
