// `swarm serve` in swarm-serve: the command line's serve verb, served by
// the HTTP front end (cli/serve/).
#include "cli/command/serve_options.h"
#include "cli/serve/serve.h"

namespace cli {

Verb add_serve(CLI::App& app) {
  auto flags = std::make_shared<ServeFlags>();
  CLI::App* cmd = add_serve_command(app, *flags);
  return {cmd, [flags](Context& ctx) { return run_serve(ctx, *flags); }};
}

}  // namespace cli
