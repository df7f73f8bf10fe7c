// The libFuzzer entry point of one target, chosen when it is built
// (-DSWARM_FUZZ_TARGET=record): see scripts/fuzz.sh.
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string_view>

#include "fuzz/targets.h"

#define SWARM_STRINGIFY2(x) #x
#define SWARM_STRINGIFY(x) SWARM_STRINGIFY2(x)

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  static const fuzz::Target* target = [] {
    for (const auto& t : fuzz::targets())
      if (std::string_view(t.name) == SWARM_STRINGIFY(SWARM_FUZZ_TARGET)) return &t;
    std::abort();
  }();
  try {
    target->run(std::string_view(reinterpret_cast<const char*>(data), size));
  } catch (const fuzz::FuzzFailure& e) {
    std::fprintf(stderr, "property broken: %s\n", e.what());
    std::abort();
  }
  return 0;
}
