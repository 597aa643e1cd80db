//===- ElementType.cpp - the storage types of kernel buffers --------------===//

#include "compiler/model/ElementType.h"

using namespace norm;

int64_t norm::getElementBytes(ElementType type) {
  return type == ElementType::f32 || type == ElementType::i32 ? 4 : 2;
}

std::string_view norm::getElementTypeName(ElementType type) {
  switch (type) {
  case ElementType::f32:
    return "f32";
  case ElementType::f16:
    return "f16";
  case ElementType::bf16:
    return "bf16";
  case ElementType::i32:
    return "i32";
  }
  return "?";
}

std::optional<ElementType> norm::parseElementType(std::string_view name) {
  for (ElementType type : {ElementType::f32, ElementType::f16,
                           ElementType::bf16, ElementType::i32})
    if (getElementTypeName(type) == name)
      return type;
  return std::nullopt;
}

bool norm::isKnownElementType(ElementType type) {
  return getElementTypeName(type) != "?";
}

bool norm::isFloatElementType(ElementType type) {
  return type == ElementType::f32 || type == ElementType::f16 ||
         type == ElementType::bf16;
}
