// Test programs do not sit next to the git module the build made: they name
// it in $SWARM_GIT_MODULE (their child swarm processes inherit it). An
// installed swarm finds its own (adr/0017).
#pragma once

#include <cstdlib>

namespace testing {

inline void use_built_git_module() { setenv("SWARM_GIT_MODULE", SWARM_GIT_MODULE_BUILT, 0); }

}  // namespace testing
