// Which kind of error a call throws, for tests that pin error kinds.
#pragma once

#include <doctest/doctest.h>

#include "kv/error.h"
#include "swarm/base/error.h"

namespace testing {

// The kind of the `Error` that `call` throws; fails the test when it throws
// nothing (and then returns `none`).
template <typename Error, typename Kind>
Kind kind_thrown(const auto& call, Kind none) {
  try {
    call();
  } catch (const Error& e) {
    return e.kind();
  }
  FAIL("expected an error, got none");
  return none;
}

inline kv::Errc kv_kind_of(const auto& call) { return kind_thrown<kv::Error>(call, kv::Errc::internal); }
inline swarm::Errc kind_of(const auto& call) { return kind_thrown<swarm::Error>(call, swarm::Errc::internal); }

}  // namespace testing
