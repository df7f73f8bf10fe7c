// `swarm serve` in the swarm binary: hands over to swarm-serve (the same
// arguments), which has the HTTP server (adr/0022).
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "cli/command/serve_options.h"
#include "swarm/base/error.h"
#include "swarm/base/private_files.h"

namespace cli {

Verb add_serve(CLI::App& app) {
  auto flags = std::make_shared<ServeFlags>();
  CLI::App* cmd = add_serve_command(app, *flags);
  return {cmd, [](Context&) -> int {
            std::string tried;
            for (const auto& path : swarm::private_file_candidates(kServeProgram, "SWARM_SERVE_PROGRAM")) {
              if (::access(path.c_str(), X_OK) != 0) {
                tried += " " + path.string() + " (" + std::strerror(errno) + ")";
                continue;
              }
              ::execv(path.c_str(), program_args());
              tried += " " + path.string() + " (" + std::strerror(errno) + ")";
            }
            throw swarm::Error(swarm::Errc::internal,
                               std::string("cannot run swarm's HTTP server ") + kServeProgram + "; tried:" + tried +
                                   " (it is installed in " + swarm::private_folder_from_bin() +
                                   " relative to the swarm binary; $SWARM_SERVE_PROGRAM names another)");
          }};
}

}  // namespace cli
