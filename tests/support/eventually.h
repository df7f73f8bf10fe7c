// Waiting, bounded, for what arrives asynchronously: a test that reads a value
// another process or thread produces asks again until it is right or the
// limit passes, never samples it once (the suite runs on busy machines).
#pragma once

#include <chrono>
#include <functional>
#include <thread>

namespace testing {

// Whether `ok` became true within `limit`, asked every 50 ms.
inline bool eventually(const std::function<bool()>& ok,
                       std::chrono::milliseconds limit = std::chrono::seconds(15)) {
  const auto end = std::chrono::steady_clock::now() + limit;
  do {
    if (ok()) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  } while (std::chrono::steady_clock::now() < end);
  return false;
}

}  // namespace testing
