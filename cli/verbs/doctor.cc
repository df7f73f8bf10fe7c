// swarm doctor: what is wrong with the workspace, and the command that fixes it.
#include <sstream>

#include "cli/verbs/documents/server.h"
#include "cli/verbs/exit_code.h"
#include "cli/verbs/verbs.h"
#include "swarm/base/host.h"
#include "swarm/base/text.h"
#include "swarm/doctor/doctor.h"

namespace cli {

namespace {

std::string report_text(const swarm::DoctorReport& r, bool fix) {
  std::ostringstream out;
  // Findings quote records (a task id, a holder): every text is escaped.
  using swarm::printable;
  out << "swarm doctor: " << printable(r.workspace) << " (NATS " << (r.nats_url.empty() ? "?" : printable(r.nats_url))
      << (r.nats_reachable ? "" : ", unreachable") << ")\n";
  if (r.durability) {
    out << "durability: " << r.durability->level << ": " << printable(r.durability->message) << "\n";
    for (const auto& lack : r.durability->lacks)
      if (lack.what != "durability") out << "server: lacks " << lack.what << ": " << printable(lack.detail) << "\n";
  }
  for (auto severity : {swarm::Severity::problem, swarm::Severity::notice}) {
    std::vector<const swarm::Finding*> group;
    for (const auto& f : r.findings)
      if (f.severity == severity) group.push_back(&f);
    if (group.empty()) continue;
    out << "\n" << (severity == swarm::Severity::problem ? "PROBLEMS" : "NOTICES") << " (" << group.size() << ")\n";
    for (const auto* f : group) {
      out << "  [" << swarm::to_string(f->kind) << "] " << printable(f->message) << "\n";
      if (f->fixed) out << "      fixed: " << printable(f->fix_note) << "\n";
      else if (!f->fix_note.empty()) out << "      " << printable(f->fix_note) << "\n";
      else out << "      fix: " << printable(f->fix) << "\n";
    }
  }
  int problems = r.problems_remaining();
  out << "\n";
  if (r.findings.empty()) {
    out << "healthy: nothing to do\n";
  } else {
    if (fix) out << r.fixed() << " fixed, ";
    out << problems << " problem(s) remain, " << r.notices() << " notice(s)\n";
    if (!fix && problems > 0) out << "`swarm doctor --fix` repairs what is safe on this host\n";
  }
  return out.str();
}

swarm::Json report_json(const swarm::DoctorReport& r) {
  swarm::Json findings = swarm::Json::array();
  for (const auto& f : r.findings) {
    swarm::Json item = swarm::Json::object();
    item.set("severity", swarm::to_string(f.severity))
        .set("check", swarm::to_string(f.kind))
        .set("subject", f.subject)
        .set("message", f.message)
        .set("fix", f.fix)
        .set("fixed", f.fixed);
    if (!f.fix_note.empty()) item.set("fix_note", f.fix_note);
    findings.push(std::move(item));
  }
  swarm::Json doc = swarm::Json::object();
  doc.set("workspace", r.workspace)
      .set("nats_url", r.nats_url)
      .set("nats_reachable", r.nats_reachable)
      .set("healthy", r.problems_remaining() == 0)
      .set("problems", r.problems_remaining())
      .set("notices", r.notices())
      .set("fixed", r.fixed())
      .set("findings", std::move(findings));
  if (!r.durability) {
    doc.set_null("durability");
  } else {
    swarm::Json d = swarm::Json::object();
    d.set("level", r.durability->level)
        .set("server_version", r.durability->server_version)
        .set("message", r.durability->message);
    d.set("lacks", lacks_json(r.durability->lacks));
    doc.set("durability", std::move(d));
  }
  return doc;
}

struct DoctorRequest {
  bool fix = false;
};

VerbResult doctor(const DoctorRequest& r, Context& ctx, Reporter&) {
  ctx.timeout();
  auto ws = ctx.workspace();
  kv::ConnectionOptions options = ctx.auth_options();
  if (!ctx.globals().nats_url.empty()) options.urls = kv::split_urls(ctx.globals().nats_url);
  swarm::Doctor doctor(ws, swarm::HostIdentity::detect(), options, ctx.globals().bucket);
  auto report = doctor.run(r.fix);
  VerbResult out;
  out.text = report_text(report, r.fix);
  out.doc = report_json(report);
  out.exit = report.problems_remaining() > 0 ? kProblemsRemain : kOk;
  return out;
}

}  // namespace

VerbSpec doctor_verb() {
  auto options =
      OptionTable<DoctorRequest>()
          .flag(&DoctorRequest::fix,
                {.name = "--fix", .help = "Repair what is safe, on this host's slots only (CAS: live sessions survive)"})
          .done();
  return make_verb<DoctorRequest>(
      {"doctor"}, "Find stale, corrupt and orphaned state; --fix repairs what is safe",
      "Examples:\n"
      "  swarm doctor              # read-only report; exit 8 when problems remain\n"
      "  swarm doctor --fix --json\n"
      "Never starts a server. Each finding names the command that fixes it.",
      std::move(options), {}, {}, doctor);
}

}  // namespace cli
