#include "cli/verbs/exit_code.h"

namespace cli {

int exit_code_for(swarm::Errc kind) {
  using swarm::Errc;
  switch (kind) {
    case Errc::internal: return kInternal;
    case Errc::bad_input: return kBadInput;
    case Errc::conflict:
    case Errc::corrupt: return kConflict;
    case Errc::not_found:
    case Errc::blob_missing: return kNotFound;
    case Errc::foreign_host: return kForeignHost;
    case Errc::not_bootstrapped: return kNotBootstrapped;
    case Errc::unavailable: return kUnavailable;
    case Errc::problems_remain: return kProblemsRemain;
    case Errc::filesystem: return kFilesystem;
  }
  return kInternal;
}

}  // namespace cli
