//===- Buffers.cpp - guarded, poisoned host buffers -----------------------===//

#include "tools/norm-cpu-check/Buffers.h"

#include "compiler/model/FloatFormats.h"

#include <algorithm>
#include <cstdlib>
#include <cstring>

using namespace norm;
using namespace norm::check;

uint64_t Random::next() {
  uint64_t z = (state += 0x9e3779b97f4a7c15ull);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return z ^ (z >> 31);
}

double Random::uniform(double low, double high) {
  return low + (high - low) * static_cast<double>(next() >> 11) * 0x1.0p-53;
}

void GuardedBuffer::Free::operator()(uint8_t *p) const { std::free(p); }

GuardedBuffer::GuardedBuffer(ElementType type, int64_t rows, int64_t cols,
                             int64_t stride, bool misaligned)
    : type(type), rows(rows), cols(cols), stride(stride),
      elementBytes(getElementBytes(type)),
      guardBytes(kGuardBytes + (misaligned ? elementBytes : 0)) {
  // Two rows of guard after the last row catch a kernel that runs past the
  // row count.
  int64_t rowBytes = stride * elementBytes;
  int64_t after = std::max<int64_t>(kGuardBytes, 2 * rowBytes);
  size = guardBytes + rows * rowBytes + after;
  size = (size + 63) / 64 * 64;
  storage.reset(static_cast<uint8_t *>(std::aligned_alloc(64, size)));
}

void GuardedBuffer::fill(uint32_t bits) {
  for (int64_t i = 0; i < size / elementBytes; ++i)
    check::storeBits(type, storage.get(), i, bits);
}

void GuardedBuffer::store(int64_t row, int64_t col, double value) {
  storeElement(type, data(), row * stride + col, value);
}

double GuardedBuffer::load(int64_t row, int64_t col) const {
  return loadElement(type, data(), row * stride + col);
}

void GuardedBuffer::storeBits(int64_t row, int64_t col, uint32_t bits) {
  check::storeBits(type, data(), row * stride + col, bits);
}

std::optional<std::string> GuardedBuffer::findStrayWrite(uint32_t bits) const {
  // The element index (from data()) of the first element in [begin, end)
  // that is not `bits`, if any.
  auto findIn = [&](int64_t begin, int64_t end) -> std::optional<int64_t> {
    const uint8_t *base = static_cast<const uint8_t *>(data());
    for (int64_t i = begin; i < end; ++i) {
      uint32_t element;
      if (elementBytes == 4) {
        std::memcpy(&element, base + 4 * i, 4);
      } else if (elementBytes == 1) {
        element = base[i];
      } else {
        uint16_t half;
        std::memcpy(&half, base + 2 * i, 2);
        element = half;
      }
      if (element != bits)
        return i;
    }
    return std::nullopt;
  };
  int64_t total = (size - guardBytes) / elementBytes;
  if (auto i = findIn(-guardBytes / elementBytes, 0))
    return "the guard before the buffer, element " + std::to_string(*i);
  for (int64_t row = 0; row < rows; ++row)
    if (auto i = findIn(row * stride + cols, (row + 1) * stride))
      return "the gap after row " + std::to_string(row) + ", column " +
             std::to_string(*i - row * stride);
  if (auto i = findIn(rows * stride, total))
    return "the guard after the buffer, element " +
           std::to_string(*i - rows * stride) + " past the end";
  return std::nullopt;
}

void GuardedBuffer::corruptGuard() {
  storage[guardBytes + rows * stride * elementBytes + 3] ^= 0x40;
}

std::vector<uint8_t> GuardedBuffer::snapshot() const {
  return std::vector<uint8_t>(storage.get(), storage.get() + size);
}

bool GuardedBuffer::matches(const std::vector<uint8_t> &bytes) const {
  return static_cast<int64_t>(bytes.size()) == size &&
         std::memcmp(bytes.data(), storage.get(), size) == 0;
}
