//===- ElementType.cpp - the storage types of kernel buffers --------------===//

#include "compiler/model/ElementType.h"

using namespace norm;

int64_t norm::getElementBytes(ElementType type) {
  if (isFp8ElementType(type))
    return 1;
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
  case ElementType::f8E4M3FN:
    return "f8E4M3FN";
  case ElementType::f8E5M2:
    return "f8E5M2";
  }
  return "?";
}

std::optional<ElementType> norm::parseElementType(std::string_view name) {
  for (ElementType type :
       {ElementType::f32, ElementType::f16, ElementType::bf16, ElementType::i32,
        ElementType::f8E4M3FN, ElementType::f8E5M2})
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

bool norm::isFp8ElementType(ElementType type) {
  return type == ElementType::f8E4M3FN || type == ElementType::f8E5M2;
}

double norm::getFp8MaxFinite(ElementType type) {
  return type == ElementType::f8E4M3FN ? 448.0 : 57344.0;
}
