// swarm lease renew, release and limit: a grant renewed or released by its
// fencing token, a semaphore's limit changed. (acquire, which waits in
// line, is the command line's: cli/command/lease.cc; show and list are
// leases.cc.)
#include "cli/verbs/documents/documents.h"
#include "cli/verbs/verbs.h"
#include "swarm/base/duration.h"
#include "swarm/base/error.h"
#include "swarm/base/names.h"
#include "swarm/base/text.h"
#include "swarm/lease/semaphore.h"

namespace cli {

namespace {

struct LeaseTokenRequest {
  std::string name, token;
};

struct LeaseLimitRequest {
  std::string name;
  std::int64_t limit = 0;
};

std::uint64_t token_of(const LeaseTokenRequest& r) { return std::stoull(r.token); }

VerbResult lease_renew(const LeaseTokenRequest& r, Context& ctx, Reporter&) {
  const auto store = ctx.leases();
  const auto lease = store.renew(r.name, token_of(r));
  VerbResult out;
  out.verb = "lease";
  out.doc = granted_lease_json(store, lease);
  out.text = "renewed lease " + r.name + " (token " + std::to_string(lease.token) + ") for " +
             swarm::format_duration(lease.record.ttl);
  return out;
}

VerbResult lease_release(const LeaseTokenRequest& r, Context& ctx, Reporter&) {
  const std::uint64_t token = token_of(r);
  ctx.leases().release(r.name, token);
  swarm::Json released = swarm::Json::object();
  released.set("name", r.name).set("token", token);
  VerbResult out;
  out.verb = "lease";
  out.doc.set("leases", swarm::Json::array()).set("released", std::move(released));
  out.text = "released lease " + r.name + " (token " + std::to_string(token) + ")";
  return out;
}

VerbResult lease_limit(const LeaseLimitRequest& r, Context& ctx, Reporter&) {
  const int limit = static_cast<int>(r.limit);
  const int was = swarm::Semaphore(ctx.leases(), r.name).change(limit);
  VerbResult out;
  out.verb = "lease";
  out.doc.set("name", r.name).set("limit", limit).set("was", was);
  out.text = "semaphore " + r.name + ": limit " + std::to_string(was) + " -> " + std::to_string(limit);
  return out;
}

// renew or release: the name and the token of the grant.
VerbSpec by_token(const char* sub, const char* summary,
                  std::function<VerbResult(const LeaseTokenRequest&, Context&, Reporter&)> run) {
  auto options =
      OptionTable<LeaseTokenRequest>()
          .text(&LeaseTokenRequest::name, lease_name_option("Lease name"))
          .text(&LeaseTokenRequest::token,
                {.name = "--token",
                 .value_name = "N",
                 .help = "The fencing token `acquire` printed",
                 .required = true,
                 .token = true,
                 .check = [](const std::string& value) {
                   // Digits only: strtoull would take "-1", "+7" or "0x47" and wrap or guess.
                   const bool digits = !value.empty() && value.size() <= 19 &&
                                       value.find_first_not_of("0123456789") == std::string::npos;
                   if (!digits || std::stoull(value) == 0)
                     throw swarm::Error(swarm::Errc::bad_input,
                                        "'" + swarm::printable(value) +
                                            "' is not a fencing token: give the number `swarm lease acquire` printed");
                 }})
          .done();
  return make_verb<LeaseTokenRequest>({"lease", sub}, summary,
                                      std::string("Example:\n  swarm lease ") + sub + " claim.T-42 --token 1234",
                                      std::move(options), {}, {}, std::move(run));
}

}  // namespace

VerbSpec lease_renew_verb() {
  return by_token("renew", "Renew the lease, for the grant its token names", lease_renew);
}

VerbSpec lease_release_verb() {
  return by_token("release", "Release the lease, for the grant its token names", lease_release);
}

VerbSpec lease_limit_verb() {
  auto options = OptionTable<LeaseLimitRequest>()
                     .text(&LeaseLimitRequest::name, lease_name_option("Semaphore name"))
                     .number(&LeaseLimitRequest::limit, {.name = "limit",
                                                         .value_name = "N",
                                                         .help = "The new limit, 1 to 1000",
                                                         .min = 1,
                                                         .max = swarm::kMaxPermits,
                                                         .required = true})
                     .done();
  return make_verb<LeaseLimitRequest>(
      {"lease", "limit"}, "Change a semaphore's limit (a raise admits waiters at once)",
      "Example:\n  swarm lease limit integration 6\n"
      "A cut lets the holders finish and grants nothing until they are under the new limit.",
      std::move(options), {}, {}, lease_limit);
}

}  // namespace cli
