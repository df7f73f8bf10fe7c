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
              // Appended piece by piece: GCC 12 at -O3 warns falsely of
              // `" " + path.string()` (a memcpy bound, like bug 105329).
              auto say_tried = [&tried, &path](int error) {
                tried.append(" ").append(path.string()).append(" (").append(std::strerror(error)).append(")");
              };
              if (::access(path.c_str(), X_OK) != 0) {
                say_tried(errno);
                continue;
              }
              ::execv(path.c_str(), program_args());
              say_tried(errno);
            }
            throw swarm::Error(swarm::Errc::internal,
                               std::string("cannot run swarm's HTTP server ") + kServeProgram + "; tried:" + tried +
                                   " (it is installed in " + swarm::private_folder_from_bin() +
                                   " relative to the swarm binary; $SWARM_SERVE_PROGRAM names another)");
          }};
}

}  // namespace cli
