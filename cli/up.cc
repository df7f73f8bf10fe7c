// swarm up: bootstrap the workspace (idempotent).
#include <filesystem>

#include "cli/context.h"
#include "swarm/bootstrap.h"
#include "swarm/duration.h"

namespace cli {

namespace {
struct UpFlags {
  std::string hub;
  CLI::Option* hub_option = nullptr;
  std::string ttl;
  int replicas = 0;
  CLI::Option* ttl_option = nullptr;
  CLI::Option* replicas_option = nullptr;
};
}  // namespace

Verb add_up(CLI::App& app) {
  auto flags = std::make_shared<UpFlags>();
  CLI::App* cmd = app.add_subcommand("up", "Bootstrap the workspace: .swarm/, the hub, the buckets, and (without "
                                           "--nats-url) an embedded nats-server");
  flags->ttl_option = cmd->add_option("--ttl", flags->ttl,
                                      "Session TTL, 1s to 1h: a record not renewed within it expires (default 5m)")
                          ->option_text("DUR")
                          ->check(duration_validator());
  flags->replicas_option =
      cmd->add_option("--replicas", flags->replicas, "Bucket replicas on a NATS cluster, 1 to 5 (default 1)")
          ->option_text("N")
          ->check(CLI::Range(1, 5));
  flags->hub_option =
      cmd->add_option("--hub", flags->hub,
                      "The workspace's git hub, shared by every host: a path (e.g. on a shared filesystem), "
                      "ssh://[user@]host[:port]/path, user@host:path, git://host/path or https://host/path "
                      "(default: the config's, else .swarm/hub.git). An empty one is seeded from this checkout")
          ->option_text("URL");
  cmd->footer(
      "Examples:\n"
      "  swarm up                                  # embedded nats-server on 127.0.0.1\n"
      "  swarm up --ttl 2m\n"
      "  swarm up --nats-url nats://n1:4222,nats://n2:4222,nats://n3:4222 --replicas 3\n"
      "  swarm up --nats-url nats://n1:4222 --hub ssh://git@build-1/srv/app.git   # another host joins\n"
      "Running it again reuses what is there; after `swarm down` it restarts the server on the same data.\n"
      "A host joining buckets that another host made takes their TTL and replicas unless given.\n"
      "SSH hubs: keys from ssh-agent, ~/.ssh/id_ed25519, id_ecdsa, id_rsa, or $SWARM_SSH_KEY; the host key must be\n"
      "in ~/.ssh/known_hosts. HTTPS hubs: user and password in the URL, or $SWARM_HUB_USERNAME and\n"
      "$SWARM_HUB_PASSWORD. A hub that cannot be reached is exit 7; refused credentials are exit 2.");
  return {cmd, [flags](Context& ctx) {
            const Globals& g = ctx.globals();
            swarm::UpOptions options;
            options.root = g.workspace.empty() ? std::filesystem::current_path() : std::filesystem::path(g.workspace);
            if (!g.nats_url.empty()) options.nats_url = g.nats_url;
            // Given at all, even empty or 0, is given: checked, never ignored.
            if (flags->ttl_option->count() > 0) options.ttl = swarm::parse_duration(flags->ttl);
            if (flags->replicas_option->count() > 0) options.replicas = flags->replicas;
            if (!g.bucket.empty()) options.bucket = g.bucket;
            if (flags->hub_option->count() > 0) options.hub = flags->hub;
            options.connection = ctx.auth_options();
            auto r = swarm::up(options);
            if (!r.replaced_config.empty())
              ctx.out().warn("config.json was corrupt: rebuilt it, and kept the corrupt one as " + r.replaced_config);

            const std::string hub = r.config.hub_location().shown();
            const std::string nats_url = kv::redact_urls(r.config.nats_url);
            std::string server = r.config.embedded
                                     ? "embedded nats-server " + nats_url +
                                           (r.server_pid ? " (pid " + std::to_string(*r.server_pid) + ", " +
                                                               (r.started_server ? "started" : "already running") + ")"
                                                         : "")
                                     : "NATS " + nats_url;
            std::string human = "workspace " + r.workspace.root().string() + " is ready\n" +
                                "  nats:    " + server + "\n" +
                                "  bucket:  " + r.config.bucket + " (TTL " + swarm::format_duration(r.config.ttl) +
                                ", replicas " + std::to_string(r.config.replicas) + ")\n" +
                                "  hub:     " + hub + (r.created_hub ? " (created)" : "") + "\n" +
                                (r.found_buckets && (r.created_config || r.moved_nats)
                                     ? "  joined:  buckets made by another host; took their TTL and replicas\n"
                                     : "");
            swarm::Json doc = swarm::Json::object();
            doc.set("workspace", r.workspace.root().string())
                .set("nats_url", nats_url)
                .set("embedded", r.config.embedded)
                .set("started_server", r.started_server)
                .set("bucket", r.config.bucket)
                .set("lease_bucket", r.config.lease_bucket)
                .set("ttl_seconds", static_cast<double>(r.config.ttl.count()) / 1000.0)
                .set("replicas", r.config.replicas)
                .set("hub", hub)
                .set("created_hub", r.created_hub)
                .set("found_buckets", r.found_buckets);
            if (r.server_pid) doc.set("server_pid", static_cast<std::int64_t>(*r.server_pid));
            else doc.set_null("server_pid");
            ctx.out().result("up", human, std::move(doc));
            return 0;
          }};
}

}  // namespace cli
