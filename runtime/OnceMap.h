//===- OnceMap.h - a thread-safe map that builds each value once -*- C++
//-*-===//
//
// The in-memory caches of libnormjit. When several threads ask for the same
// missing key at once, the first builds the value and the others wait for
// it: one compile, one tuning run. Failures are handed to the threads that
// waited for that attempt but not kept, so a later request tries again.
//
//===----------------------------------------------------------------------===//

#ifndef NORM_RUNTIME_ONCEMAP_H
#define NORM_RUNTIME_ONCEMAP_H

#include "runtime/Exceptions.h"
#include "runtime/Status.h"

#include <condition_variable>
#include <memory>
#include <mutex>
#include <string>
#include <unordered_map>

namespace norm::jit {

template <typename Value> class OnceMap {
public:
  /// The value of `key`, built with `build(Value &) -> Status` if missing.
  /// An exception from `build` is its failure (Exceptions.h): the threads
  /// waiting for it are woken with that status, never left waiting.
  template <typename Build>
  Status getOrBuild(const std::string &key, Build &&build, Value &value) {
    std::shared_ptr<Slot> slot;
    {
      std::unique_lock<std::mutex> lock(mutex);
      auto it = slots.find(key);
      if (it != slots.end()) {
        slot = it->second;
        done.wait(lock, [&] { return slot->finished; });
        if (slot->status.ok())
          value = slot->value;
        return slot->status;
      }
      // Allocated before it is inserted: a throw leaves no empty slot.
      slot = std::make_shared<Slot>();
      slots.emplace(key, slot);
    }
    Value built{};
    Status status =
        catchExceptions("libnormjit", [&] { return build(built); });
    {
      // Nothing here throws, so the slot always finishes.
      std::lock_guard<std::mutex> lock(mutex);
      slot->finished = true;
      slot->status = std::move(status);
      if (slot->status.ok()) {
        slot->value = built;
        value = std::move(built);
      } else {
        slots.erase(key);
      }
      done.notify_all();
    }
    return slot->status;
  }

  /// The value of `key` if it is built; false otherwise.
  bool lookup(const std::string &key, Value &value) const {
    std::lock_guard<std::mutex> lock(mutex);
    auto it = slots.find(key);
    if (it == slots.end() || !it->second->finished)
      return false;
    value = it->second->value;
    return true;
  }

  size_t size() const {
    std::lock_guard<std::mutex> lock(mutex);
    return slots.size();
  }

private:
  struct Slot {
    bool finished = false;
    Status status;
    Value value{};
  };

  mutable std::mutex mutex;
  std::condition_variable done;
  std::unordered_map<std::string, std::shared_ptr<Slot>> slots;
};

} // namespace norm::jit

#endif // NORM_RUNTIME_ONCEMAP_H
