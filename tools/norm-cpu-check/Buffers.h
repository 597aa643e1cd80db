//===- Buffers.h - guarded, poisoned host buffers ---------------*- C++ -*-===//
//
// Kernel operands on the host: rows of `cols` elements `stride` elements
// apart (stride > cols leaves a gap after each row), surrounded by guard
// regions. Everything outside the rows holds one element pattern; after a
// run, the pattern must be intact (no stray writes) and inputs must be
// unchanged byte for byte.
//
//===----------------------------------------------------------------------===//

#ifndef NORM_TOOLS_NORMCPUCHECK_BUFFERS_H
#define NORM_TOOLS_NORMCPUCHECK_BUFFERS_H

#include "compiler/model/Reference.h"

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <type_traits>
#include <vector>

namespace norm::check {

/// splitmix64: deterministic inputs for every case.
class Random {
public:
  explicit Random(uint64_t seed) : state(seed) {}
  uint64_t next();
  /// Uniform in [low, high).
  double uniform(double low, double high);

private:
  uint64_t state;
};

class GuardedBuffer {
public:
  /// `rows` rows of `cols` elements, `stride` elements apart; a 1-D buffer
  /// is one row. The first element is 64-byte aligned, or one element past
  /// that when `misaligned`.
  GuardedBuffer(ElementType type, int64_t rows, int64_t cols, int64_t stride,
                bool misaligned = false);

  ElementType getType() const { return type; }
  int64_t getRows() const { return rows; }
  int64_t getCols() const { return cols; }
  int64_t getStride() const { return stride; }
  /// The first element.
  void *data() { return storage.get() + guardBytes; }
  const void *data() const { return storage.get() + guardBytes; }
  RowsView view() const { return {type, data(), rows, cols, stride}; }
  ParamView paramView() const { return {type, data()}; }

  /// The bytes from the first element to the end of the allocation (the
  /// rows, their gaps and the guard after them).
  int64_t getBytesFromData() const { return size - guardBytes; }
  /// Sets every element of the allocation, guards and gaps included.
  void fill(uint32_t bits);
  /// Sets the elements of the rows to values drawn from `draw(row)` or
  /// `draw(row, col)`, rounded to the element type.
  template <typename Draw> void fillRows(Draw draw) {
    for (int64_t row = 0; row < rows; ++row)
      for (int64_t col = 0; col < cols; ++col) {
        if constexpr (std::is_invocable_v<Draw, int64_t, int64_t>)
          store(row, col, draw(row, col));
        else
          store(row, col, draw(row));
      }
  }
  void store(int64_t row, int64_t col, double value);
  double load(int64_t row, int64_t col) const;
  void storeBits(int64_t row, int64_t col, uint32_t bits);

  /// A description of the first element outside the rows that is not
  /// `bits`, if any.
  std::optional<std::string> findStrayWrite(uint32_t bits) const;
  /// Writes one byte into the guard after the rows (fault injection).
  void corruptGuard();

  /// A copy of the whole allocation, and whether it is still the same.
  std::vector<uint8_t> snapshot() const;
  bool matches(const std::vector<uint8_t> &bytes) const;

private:
  static constexpr int64_t kGuardBytes = 256;
  struct Free {
    void operator()(uint8_t *p) const;
  };

  ElementType type;
  int64_t rows, cols, stride, elementBytes;
  /// Bytes before the first element.
  int64_t guardBytes;
  /// Guard, rows (with their gaps), guard.
  int64_t size;
  std::unique_ptr<uint8_t[], Free> storage;
};

} // namespace norm::check

#endif // NORM_TOOLS_NORMCPUCHECK_BUFFERS_H
