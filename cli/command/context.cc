#include "cli/command/context.h"

#include <mutex>

#include <map>

#include <filesystem>

#include "kv/bucket.h"
#include "kv/nats_context.h"
#include "swarm/base/duration.h"
#include "swarm/base/error.h"
#include "swarm/base/host.h"
#include "swarm/base/names.h"
#include "swarm/base/text.h"
#include "swarm/workspace/bootstrap.h"
#include "swarm/workspace/embedded_server.h"

namespace cli {


CLI::Validator fencing_token_validator() {
  return CLI::Validator(
      [](std::string& value) -> std::string {
        // Digits only: strtoull would take "-1", "+7" or "0x47" and wrap or guess.
        bool digits = !value.empty() && value.size() <= 19 && value.find_first_not_of("0123456789") == std::string::npos;
        if (!digits || std::strtoull(value.c_str(), nullptr, 10) == 0)
          return "--token " + value + " is not a fencing token: give the number `swarm lease acquire` printed";
        return {};
      },
      "N");
}

CLI::Validator decimal_in(std::int64_t min, std::int64_t max) {
  return CLI::Validator(
      [min, max](std::string& value) -> std::string {
        const std::size_t sign = min < 0 && !value.empty() && value.front() == '-' ? 1 : 0;
        if (value.size() <= sign || value.size() > 19 + sign ||
            value.find_first_not_of("0123456789", sign) != std::string::npos)
          return "'" + swarm::printable(value.substr(0, 40)) + "' is not a whole number in decimal digits (no " +
                 (min < 0 ? "spaces" : "sign, spaces") + ", 0x or other bases)";
        const auto first = value.find_first_not_of('0', sign);
        value.erase(sign, (first == std::string::npos ? value.size() - 1 : first) - sign);
        const std::int64_t n = std::stoll(value);
        if (n < min || n > max)
          return "'" + value + "' is out of range: " + std::to_string(min) + " to " + std::to_string(max);
        return {};
      },
      "", "DECIMAL");
}

CLI::Validator slot_name_validator() { return validator_of(swarm::require_slot_name, "SLOT"); }
CLI::Validator task_id_validator() { return validator_of(swarm::require_task_id, "TASK"); }
CLI::Validator duration_validator() {
  return validator_of([](const std::string& text) { swarm::parse_duration(text); }, "DUR");
}

CLI::Option* add_slot_option(CLI::App& cmd, std::string& slot, const std::string& help) {
  return cmd
      .add_option("--slot", slot,
                  help + " (default: $SWARM_SLOT, else the slot whose worktree holds the current folder)")
      ->envname("SWARM_SLOT")
      ->option_text("SLOT")
      ->check(slot_name_validator());
}

CLI::Option* add_session_option(CLI::App& cmd, std::string& session) {
  return cmd
      .add_option("--session", session,
                  "Act only while the slot's session is this one (the session_token join printed); a replaced "
                  "agent gets exit 3 and changes nothing")
      ->envname("SWARM_SESSION")
      ->option_text("TOKEN")
      ->check(validator_of(
          [](const std::string& text) {
            if (text.empty() || text.size() > 16 || text.find_first_not_of("0123456789") != std::string::npos ||
                std::stoull(text) == 0)
              throw swarm::Error(swarm::Errc::bad_input, "bad session token '" + swarm::printable(text) +
                                                             "': a session token is a positive whole number, as "
                                                             "`swarm join --json` prints it");
          },
          "TOKEN"));
}

void add_global_options(CLI::App& app, Globals& g) {
  app.add_option("--workspace", g.workspace, "Workspace folder (default: the nearest folder up with a .swarm/)")
      ->envname("SWARM_WORKSPACE")
      ->option_text("DIR");
  app.add_option("--nats-url", g.nats_url, "NATS server URL(s), comma-separated (default: the workspace's)")
      ->envname("NATS_URL")
      ->option_text("URL[,URL...]")
      ->check(validator_of(swarm::require_nats_urls, "URL"));
  app.add_option("--bucket", g.bucket, "Session bucket (default: the workspace's, else swarm-sessions)")
      ->check(validator_of(kv::require_valid_bucket_name, "NAME"));
  app.add_flag("--json", g.json, "Print one JSON document (schema swarm.<verb>.v1); errors as swarm.error.v1");
  app.add_option("--timeout", g.timeout, "How long a verb waits for NATS in all, e.g. 5s, 500ms")
      ->capture_default_str()
      ->option_text("DUR")
      ->check(duration_validator());
  // Credentials are read as the nats CLI reads them: a flag, else its
  // environment variable, else the --context's field. None needs to be on a
  // command line, where any user of the host could read it.
  app.add_option("--context", g.context, "A nats CLI context to take the server, credentials and TLS files from")
      ->envname("NATS_CONTEXT")
      ->option_text("NAME");
  app.add_option("--creds", g.creds, "NATS credentials file")->envname("NATS_CREDS")->option_text("FILE");
  app.add_option("--nkey", g.nkey, "NATS user nkey seed file")->envname("NATS_NKEY")->option_text("FILE");
  app.add_option("--user", g.user, "NATS user")->envname("NATS_USER");
  app.add_option("--password", g.password, "NATS password (better: $NATS_PASSWORD, or a --context)")
      ->envname("NATS_PASSWORD");
  app.add_option("--nats-token", g.token, "NATS auth token (`--token` on the lease verbs is a fencing token)")
      ->envname("NATS_TOKEN");
  app.add_option("--tls-ca", g.tls_ca, "CA certificate file (turns TLS on)")->envname("NATS_CA")->option_text("FILE");
  app.add_option("--tls-cert", g.tls_cert, "Client certificate file (with --tls-key)")
      ->envname("NATS_CERT")
      ->option_text("FILE");
  app.add_option("--tls-key", g.tls_key, "Client key file (with --tls-cert)")->envname("NATS_KEY")->option_text("FILE");
  app.add_option("--log-level", g.log_level, "trace, debug, info, warn, error or off")
      ->capture_default_str()
      ->check(CLI::IsMember({"trace", "debug", "info", "warn", "error", "off"}));
}

}  // namespace cli
