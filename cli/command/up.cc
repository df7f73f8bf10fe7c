// swarm up: bootstrap the workspace (idempotent).
#include <filesystem>

#include "cli/command/context.h"
#include "cli/verbs/documents/server.h"
#include "swarm/base/duration.h"
#include "swarm/base/text.h"
#include "swarm/base/words.h"
#include "swarm/base/workspace_names.h"
#include "swarm/bus/message.h"
#include "swarm/journal/journal.h"
#include "swarm/workspace/bootstrap.h"

namespace cli {

namespace {
struct UpFlags {
  std::string name;
  CLI::Option* name_option = nullptr;
  std::string hub;
  CLI::Option* hub_option = nullptr;
  std::string ttl;
  int replicas = 0;
  CLI::Option* ttl_option = nullptr;
  CLI::Option* replicas_option = nullptr;
  std::string events_max_age;
  std::string events_max_bytes;
  bool accept_unsafe_server = false;
  std::string ports;
  std::string check;
  CLI::Option* check_option = nullptr;
  bool require_review = false;
  bool no_require_review = false;
  std::string bus_max_age;
  std::string bus_max_bytes;
  std::string blob_max_bytes;
  std::string blob_store_max_bytes;
  std::string holds;
};

// How long a log stream (the journal, the bus) keeps what it holds: at
// least its 2-minute window of deduplication (JetStream's own floor); else
// bad_input naming `option`, what it keeps and `examples`.
std::chrono::milliseconds log_max_age_of(const std::string& text, const char* option, const char* keeps,
                                         const char* examples) {
  auto age = swarm::parse_long_duration(text);
  if (age < std::chrono::minutes(2))
    throw swarm::Error(swarm::Errc::bad_input, std::string("bad ") + option + " '" +
                                                   swarm::printable(text.substr(0, 40)) + "': " + keeps +
                                                   " at least 2m (e.g. " + examples + ")");
  return age;
}

std::chrono::milliseconds events_max_age_of(const std::string& text) {
  return log_max_age_of(text, "--events-max-age", "the journal keeps events", "7d, 30d, 720h");
}

std::chrono::milliseconds bus_max_age_of(const std::string& text) {
  return log_max_age_of(text, "--bus-max-age", "the bus keeps messages", "7d, 24h");
}

// "1GiB", "500MiB", "100MB", "2000000": at least 1 MiB; else bad_input naming it.
std::int64_t parse_byte_size(const std::string& text) {
  constexpr std::int64_t kMin = std::int64_t(1) << 20;
  constexpr std::int64_t kMax = std::int64_t(1) << 50;
  const struct {
    const char* suffix;
    std::int64_t scale;
  } units[] = {{"TiB", std::int64_t(1) << 40}, {"GiB", 1 << 30}, {"MiB", 1 << 20}, {"KiB", 1 << 10},
               {"TB", 1000LL * 1000 * 1000 * 1000}, {"GB", 1000 * 1000 * 1000}, {"MB", 1000 * 1000},
               {"KB", 1000}, {"B", 1}};
  std::string digits = text;
  std::int64_t scale = 1;
  for (const auto& u : units) {
    const std::string suffix = u.suffix;
    if (digits.size() > suffix.size() && digits.compare(digits.size() - suffix.size(), suffix.size(), suffix) == 0) {
      digits.resize(digits.size() - suffix.size());
      scale = u.scale;
      break;
    }
  }
  bool ok = !digits.empty() && digits.size() <= 16 && digits.find_first_not_of("0123456789") == std::string::npos;
  std::int64_t value = ok ? std::stoll(digits) : 0;
  if (!ok || value > kMax / scale || value * scale < kMin)
    throw swarm::Error(swarm::Errc::bad_input, "bad size '" + swarm::printable(text.substr(0, 40)) +
                                                    "': use bytes or a unit (KiB, MiB, GiB, TiB, KB, MB, GB, TB), "
                                                    "at least 1MiB, e.g. 1GiB");
  return value * scale;
}
// A log stream's limits and count for people: "keeps 30d, at most 1024 MiB; 12 events".
std::string log_limits(const kv::StreamStatus& log, const char* noun) {
  const auto& c = log.config;
  return "keeps " +
         (c.max_age.count() % (24 * 3600 * 1000) == 0 ? std::to_string(c.max_age.count() / (24 * 3600 * 1000)) + "d"
                                                        : swarm::format_duration(c.max_age)) +
         ", at most " + std::to_string(c.max_bytes >> 20) + " MiB; " + std::to_string(log.messages) + " " + noun;
}

std::string journal_line(const std::string& stream, const std::optional<kv::StreamStatus>& journal) {
  if (!journal) return stream + " (missing)";
  return stream + " (" + log_limits(*journal, "events") + ")";
}

// The same for `--json`: {stream, exists, max_age_seconds, max_bytes, replicas, <count_key>}.
swarm::Json log_json(const char* stream, const std::optional<kv::StreamStatus>& log, const char* count_key) {
  swarm::Json j = swarm::Json::object();
  j.set("stream", stream).set("exists", log.has_value());
  if (!log) return j;
  j.set("max_age_seconds", static_cast<double>(log->config.max_age.count()) / 1000.0)
      .set("max_bytes", static_cast<std::int64_t>(log->config.max_bytes))
      .set("replicas", log->config.replicas)
      .set(count_key, log->messages);
  return j;
}
// What `up` was asked, from the globals and its own options. Given at all,
// even empty or 0, is given: checked, never ignored.
swarm::UpOptions options_of(const Context& ctx, const UpFlags& f) {
  const Globals& g = ctx.globals();
  swarm::UpOptions options;
  if (!g.workspace.empty()) {
    options.root = g.workspace;
  } else if (auto here = swarm::current_folder()) {
    options.root = *here;
  } else {
    throw swarm::Error(swarm::Errc::bad_input, "the current folder no longer exists: cd to the workspace, or pass "
                                               "--workspace DIR");
  }
  if (!g.nats_url.empty()) options.nats_url = g.nats_url;
  if (f.ttl_option->count() > 0) options.ttl = swarm::parse_duration(f.ttl);
  if (f.replicas_option->count() > 0) options.replicas = f.replicas;
  if (!g.bucket.empty()) options.bucket = g.bucket;
  if (f.name_option->count() > 0) options.name = f.name;
  if (f.hub_option->count() > 0) options.hub = f.hub;
  if (!f.events_max_age.empty()) options.events_max_age = events_max_age_of(f.events_max_age);
  if (!f.events_max_bytes.empty()) options.events_max_bytes = parse_byte_size(f.events_max_bytes);
  options.connection = ctx.auth_options();
  options.accept_unsafe_server = f.accept_unsafe_server;
  if (!f.ports.empty()) options.ports = swarm::parse_port_range(f.ports);
  if (f.check_option->count() > 0) options.check = f.check;
  if (f.require_review) options.require_review = true;
  if (f.no_require_review) options.require_review = false;
  if (!f.bus_max_age.empty()) options.bus_max_age = bus_max_age_of(f.bus_max_age);
  if (!f.bus_max_bytes.empty()) options.bus_max_bytes = parse_byte_size(f.bus_max_bytes);
  if (!f.blob_max_bytes.empty()) options.blob_max_bytes = static_cast<std::uint64_t>(parse_byte_size(f.blob_max_bytes));
  if (!f.blob_store_max_bytes.empty())
    options.blob_store_max_bytes = static_cast<std::uint64_t>(parse_byte_size(f.blob_store_max_bytes));
  if (!f.holds.empty()) options.holds = swarm::parse_hold_policy(f.holds);
  return options;
}

// The workspace's name and where it came from, for people.
std::string name_line(const swarm::UpResult& r) {
  if (r.config.name.empty())
    return "none (made before workspace names: it keeps the shared names swarm-events, swarm-bus, ...; alone on its "
           "server only with no other such workspace there)";
  const std::string from = r.name_from == "hub"   ? " (the hub's workspace, joined)"
                           : r.name_from == "new" ? " (new; every bucket and stream of the workspace carries it)"
                                                  : "";
  return r.config.name + from;
}

// What `up` made or found, for people.
std::string up_text(const swarm::UpResult& r) {
  const std::string hub = r.config.hub_location().shown();
  const std::string nats_url = kv::redact_urls(r.config.nats_url);
  const std::string server =
      r.config.embedded ? "embedded nats-server " + nats_url +
                              (r.server_pid ? " (pid " + std::to_string(*r.server_pid) + ", " +
                                                  (r.started_server ? "started" : "already running") + ")"
                                            : "")
                        : "NATS " + nats_url;
  const bool empty_hub =
      r.created_hub && !r.config.hub_location().remote() && !std::filesystem::exists(r.workspace.root() / ".git");
  std::string human = "workspace " + r.workspace.root().string() + " is ready\n" + "  name:    " + name_line(r) + "\n" +
                      "  nats:    " + server + "\n" + "  server:  " + server_line(r.server) + "\n" +
                      "  bucket:  " + r.config.bucket + " (TTL " + swarm::format_duration(r.config.ttl) +
                      ", replicas " + std::to_string(r.config.replicas) +
                      (r.ttl_was ? (r.ttl_changed ? ", changed from " : ", as the bucket has it; the config said ") +
                                       swarm::format_duration(*r.ttl_was)
                                 : "") +
                      ")\n" + "  hub:     " + hub +
                      (r.created_hub ? " (created)" : "") + "\n";
  if (empty_hub)
    human += "  note:    " + r.workspace.root().string() + " is no git checkout, so the hub starts with one empty "
             "commit on main; run `swarm up` in a checkout to seed it from its history instead\n";
  human += "  journal: " + journal_line(r.config.names().events, r.journal) + "\n";
  if (r.bus)
    human += "  bus:     " + r.config.names().bus + " (" + log_limits(*r.bus, "messages") + "; full, it refuses new "
             "ones; blobs up to " + std::to_string(r.config.blob_max() >> 20) + " MiB each, " +
             std::to_string(r.config.blob_store_max_bytes >> 20) + " MiB in all)\n";
  if (r.store_room)
    human += "  store:   " + std::to_string(*r.store_room >> 20) + " MiB of room on the server: the journal, the bus "
             "and the blobs each take a share of it by default\n";
  if (r.config.ports)
    human += "  ports:   " + r.config.ports->text() + " (`swarm join --ports K` takes a block of K of them)\n";
  if (!r.config.check.empty())
    human += "  check:   " + swarm::printable(r.config.check) + " (every land runs it; `land --no-check` skips it)\n";
  if (r.config.holds == swarm::HoldPolicy::refuse)
    human += "  holds:   refuse (a commit that changes paths another live slot holds exclusively commits nothing)\n";
  if (r.config.require_review)
    human += "  review:  required (a task closed success lands once `swarm review approve` approved its head)\n";
  if (r.added_remote) human += "  remote:  swarm, added to this checkout (`git fetch swarm` brings the slots' branches)\n";
  if (r.found_buckets && (r.created_config || r.moved_nats))
    human += "  joined:  buckets made by another host; took their TTL and replicas\n";
  return human;
}

swarm::Json up_json(const swarm::UpResult& r) {
  swarm::Json doc = swarm::Json::object();
  doc.set("workspace", r.workspace.root().string());
  if (r.config.name.empty()) doc.set_null("name");
  else doc.set("name", r.config.name);
  doc.set("name_from", r.name_from)
      .set("nats_url", kv::redact_urls(r.config.nats_url))
      .set("embedded", r.config.embedded)
      .set("started_server", r.started_server)
      .set("bucket", r.config.bucket)
      .set("lease_bucket", r.config.lease_bucket)
      .set("ttl_seconds", static_cast<double>(r.config.ttl.count()) / 1000.0)
      .set("replicas", r.config.replicas)
      .set("hub", r.config.hub_location().shown())
      .set("created_hub", r.created_hub)
      .set("found_buckets", r.found_buckets)
      .set("added_remote", r.added_remote);
  doc.set("journal", log_json(r.config.names().events.c_str(), r.journal, "events"));
  swarm::Json bus = log_json(r.config.names().bus.c_str(), r.bus, "messages");
  bus.set("blob_max_bytes", r.config.blob_max());
  bus.set("blob_store_max_bytes", r.config.blob_store_max_bytes);
  if (r.store_room) doc.set("store_room_bytes", *r.store_room);
  else doc.set_null("store_room_bytes");
  doc.set("bus", std::move(bus));
  if (r.ttl_was) doc.set("ttl_was_seconds", static_cast<double>(r.ttl_was->count()) / 1000.0);
  doc.set("ttl_changed", r.ttl_changed);
  if (r.config.ports) doc.set("ports", r.config.ports->text());
  else doc.set_null("ports");
  if (r.config.check.empty()) doc.set_null("check");
  else doc.set("check", r.config.check);
  doc.set("require_review", r.config.require_review);
  doc.set("holds", swarm::to_string(r.config.holds));
  doc.set("server", server_json(r.server));
  if (r.server_pid) doc.set("server_pid", static_cast<std::int64_t>(*r.server_pid));
  else doc.set_null("server_pid");
  return doc;
}

int run_up(Context& ctx, const UpFlags& f) {
  if (ctx.globals().nats_url.empty()) swarm::require_valid_nats_server_variable();
  auto r = swarm::up(options_of(ctx, f));
  for (const auto& s : r.unsafe_servers)
    ctx.out().warn(s + " is older than 2.10: this replicated workspace may lose acknowledged writes and see fencing "
                       "tokens go backwards under partitions (--accept-unsafe-server)");
  // What the server cannot give is said every time, never left to be found.
  for (const auto& lack : r.server.lacks) ctx.out().warn("the workspace's server lacks " + lack.what + ": " + lack.detail);
  if (r.config.embedded && r.server.sync == swarm::ServerSync::interval)
    ctx.out().warn("the current release (" + std::string(swarm::current_nats_release()) + ") syncs every write: "
                   "scripts/setup.sh builds it, and `swarm down && swarm up` restarts the workspace's server on it "
                   "(the data is kept)");
  for (const auto& d : r.bus_differs)
    ctx.out().warn("bus " + r.config.names().bus + ": " + d + (d.rfind("replicas", 0) == 0 ? " (kept as it is)" : ""));
  for (const auto& d : r.journal_differs)
    ctx.out().warn("journal " + r.config.names().events + ": " + d +
                   (d.rfind("replicas", 0) == 0 ? " (kept as it is)" : ""));
  if (!r.replaced_config.empty())
    ctx.out().warn("config.json was corrupt: rebuilt it, and kept the corrupt one as " + r.replaced_config);
  ctx.out().result("up", up_text(r), up_json(r));
  return 0;
}

// How much the journal, the bus and the blob store keep.
void add_store_options(CLI::App& cmd, UpFlags& flags) {
  cmd.add_option("--events-max-age", flags.events_max_age,
                  "How long the journal (stream swarm-<name>-events) keeps an event: 30d by default; given, it is applied "
                  "to an existing journal too")
      ->option_text("DUR")
      ->check(validator_of([](const std::string& t) { events_max_age_of(t); }, "DUR"));
  cmd.add_option("--events-max-bytes", flags.events_max_bytes,
                  "How much the journal keeps, oldest events dropped first: 1GiB by default (half the server's "
                  "store, when that is less); given, it is applied to an existing journal too")
      ->option_text("SIZE")
      ->check(validator_of([](const std::string& t) { parse_byte_size(t); }, "SIZE"));
  cmd.add_option("--bus-max-age", flags.bus_max_age,
                  "How long the message bus (stream swarm-<name>-bus) keeps a message: 7d by default; given, it is applied "
                  "to an existing bus too")
      ->option_text("DUR")
      ->check(validator_of([](const std::string& t) { bus_max_age_of(t); }, "DUR"));
  cmd.add_option("--bus-max-bytes", flags.bus_max_bytes,
                  "How much the bus keeps: full, it refuses new messages (exit 9) rather than drop unread ones; "
                  "256MiB by default (an eighth of the server's store, when that is less); given, it is applied to "
                  "an existing bus too")
      ->option_text("SIZE")
      ->check(validator_of([](const std::string& t) { parse_byte_size(t); }, "SIZE"));
  cmd.add_option("--blob-store-max-bytes", flags.blob_store_max_bytes,
                  "The most the blob store holds in all: full, it refuses a new blob (exit 9) and keeps every one it "
                  "has. Default: a quarter of the room the server's store has, at most 1GiB (kept in config.json)")
      ->option_text("SIZE")
      ->check(validator_of([](const std::string& t) { parse_byte_size(t); }, "SIZE"));
  cmd.add_option("--blob-max-bytes", flags.blob_max_bytes,
                  "The most one blob may weigh (`swarm blob put`, a long message): 1GiB by default (kept in "
                  "config.json)")
      ->option_text("SIZE")
      ->check(validator_of([](const std::string& t) { parse_byte_size(t); }, "SIZE"));
}

// What lands take: the check, review, and what commit does with held paths.
void add_landing_options(CLI::App& cmd, UpFlags& flags) {
  flags.check_option =
      cmd.add_option("--check", flags.check,
                      "A check every land runs on the merged tree before the onto branch moves, as one line: "
                      "'make test' (split into words as a shell would, run without one; kept in config.json; '' "
                      "removes it). `land --no-check` skips it, journaled as forced")
          ->option_text("'CMD ...'")
          ->check(validator_of(
              [](const std::string& t) {
                if (!t.empty()) swarm::split_words(t, "--check");
              },
              "CMD"));
  auto* review = cmd.add_flag("--require-review", flags.require_review,
                               "A task closed success waits in_review until `swarm review approve` approves its "
                               "head; `land --ready` takes only approved heads (kept in config.json)");
  cmd.add_flag("--no-require-review", flags.no_require_review, "Turn --require-review off again")
      ->excludes(review);
  cmd.add_option("--holds", flags.holds,
                  "What commit does with paths another live slot holds exclusively (`swarm hold`): warn (the "
                  "default: commits, says so and journals hold.conflict) or refuse (commits nothing, exit 3); kept "
                  "in config.json")
      ->option_text("warn|refuse")
      ->check(CLI::Validator(  // described as a set, so that completion offers its values
          [](std::string& t) -> std::string {
            try {
              swarm::parse_hold_policy(t);
            } catch (const std::exception& e) {
              return e.what();
            }
            return {};
          },
          "{warn,refuse}", "POLICY"));
}

}  // namespace

Verb add_up(CLI::App& app) {
  auto flags = std::make_shared<UpFlags>();
  CLI::App* cmd = app.add_subcommand("up", "Bootstrap the workspace: .swarm/, the hub, the buckets, and (without "
                                           "--nats-url) an embedded nats-server");
  flags->name_option =
      cmd->add_option("--name", flags->name,
                      "The workspace's name on its NATS server: every bucket, stream and subject it uses carries it, "
                      "so workspaces sharing a server see nothing of each other. Default for a new workspace: the "
                      "name its hub is marked with (another host's workspace), else the folder's name and 6 random "
                      "hex digits. Kept in config.json; it never changes")
          ->option_text("NAME")
          ->check(validator_of([](const std::string& t) { swarm::require_workspace_name(t); }, "NAME"));
  flags->ttl_option = cmd->add_option("--ttl", flags->ttl,
                                      "Session TTL, 1s to 1h: a record not renewed within it expires (default 5m); on a "
                                      "workspace set up already, changes it in place, live sessions kept")
                          ->option_text("DUR")
                          ->check(duration_validator());
  flags->replicas_option =
      cmd->add_option("--replicas", flags->replicas, "Bucket replicas on a NATS cluster, 1 to 5 (default 1)")
          ->option_text("N")
          ->transform(decimal_in(1, 5));
  flags->hub_option =
      cmd->add_option("--hub", flags->hub,
                      "The workspace's git hub, shared by every host: a path (e.g. on a shared filesystem), "
                      "ssh://[user@]host[:port]/path, user@host:path, git://host/path or https://host/path "
                      "(default: the config's, else .swarm/hub.git). An empty one is seeded from this checkout")
          ->option_text("URL");
  add_store_options(*cmd, *flags);
  cmd->add_option("--ports", flags->ports,
                  "A range of ports FIRST-LAST that `join --ports K` hands out in blocks of K consecutive ports, "
                  "no two live slots' blocks sharing a port on any host (kept in config.json)")
      ->option_text("A-B")
      ->check(validator_of([](const std::string& t) { swarm::parse_port_range(t); }, "A-B"));
  add_landing_options(*cmd, *flags);
  cmd->add_flag("--accept-unsafe-server", flags->accept_unsafe_server,
                "Run --replicas N>1 on nats-server older than 2.10 all the same (it loses acknowledged writes "
                "and lets fencing tokens go backwards under partitions; doctor reports it)");
  cmd->footer(
      "Examples:\n"
      "  swarm up                                  # embedded nats-server on 127.0.0.1\n"
      "  swarm up --ttl 2m\n"
      "  swarm up --nats-url nats://n1:4222,nats://n2:4222,nats://n3:4222 --replicas 3\n"
      "  swarm up --nats-url nats://n1:4222 --hub ssh://git@build-1/srv/app.git   # another host joins\n"
      "  swarm up --ports 20000-20999               # then: swarm join --slot a --task T-1 --ports 10\n"
      "  swarm up --check 'make test'               # every land runs it; --check '' removes it\n"
      "  swarm up --require-review                 # land only what `swarm review approve` approved\n"
      "  swarm up --bus-max-age 2d --blob-max-bytes 100MiB\n"
      "Running it again reuses what is there; after `swarm down` it restarts the server on the same data.\n"
      "The embedded server is $SWARM_NATS_SERVER when set, else the newest of the nats-server beside swarm (the\n"
      "current release, which the setup builds) and the first on PATH; on an older one up names what it lacks\n"
      "(`swarm version` says which it would start).\n"
      "A host joining buckets that another host made takes their TTL and replicas unless given.\n"
      "SSH hubs: keys from ssh-agent, ~/.ssh/id_ed25519, id_ecdsa, id_rsa, or $SWARM_SSH_KEY; the host key must be\n"
      "in ~/.ssh/known_hosts. HTTPS hubs: user and password in the URL, or $SWARM_HUB_USERNAME and\n"
      "$SWARM_HUB_PASSWORD. A hub that cannot be reached is exit 7; refused credentials are exit 2.");
  return {cmd, [flags](Context& ctx) { return run_up(ctx, *flags); }};
}

}  // namespace cli
