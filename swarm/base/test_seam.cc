#include "swarm/base/test_seam.h"

#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <string_view>

namespace swarm {

void stop_here_for_test(const char* variable, const char* stage) {
  const char* wanted = std::getenv(variable);
  if (wanted == nullptr || std::string_view(wanted) != stage) return;
  std::fprintf(stderr, "swarm: test stop at %s\n", stage);
  std::fflush(stderr);
  std::raise(SIGSTOP);
}

}  // namespace swarm
