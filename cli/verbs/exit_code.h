// The contract's exit codes, and the one place error kinds become them.
#pragma once

#include "swarm/base/error.h"

namespace cli {

enum ExitCode {
  kOk = 0,
  kInternal = 1,
  kBadInput = 2,
  kConflict = 3,
  kNotFound = 4,
  kForeignHost = 5,
  kNotBootstrapped = 6,
  kUnavailable = 7,
  kProblemsRemain = 8,
  kFilesystem = 9,
};

int exit_code_for(swarm::Errc kind);

}  // namespace cli
