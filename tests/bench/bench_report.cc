// The table and the JSON document of the benchmark's rows (bench_report.h).
#include "bench/bench_report.h"

#include <unistd.h>

#include <cstdio>
#include <utility>

namespace bench {

void print_table(const std::vector<Row>& rows) {
  std::printf("\n%-40s %10s %10s %10s %10s %8s %8s  %-28s %s\n", "case", "swarm p50", "swarm p99", "base p50",
              "base p99", "x p50", "x p99", "target", "met");
  for (const auto& r : rows) {
    if (r.has_baseline)
      std::printf("%-40s %8.3f%-2s %8.3f%-2s %8.3f%-2s %8.3f%-2s %7.2fx %7.2fx  %-28s %s\n", r.name.c_str(), r.swarm.p50,
                  r.unit.c_str(), r.swarm.p99, r.unit.c_str(), r.baseline.p50, r.unit.c_str(), r.baseline.p99,
                  r.unit.c_str(), r.ratio_p50, r.ratio_p99, r.target.c_str(), r.met ? "yes" : "NO");
    else
      std::printf("%-40s %8.3f%-3s %8.3f%-3s %10s %10s %8s %8s  %-28s %s\n", r.name.c_str(), r.swarm.p50, r.unit.c_str(),
                  r.swarm.max, r.unit.c_str(), "-", "-", "-", "-", r.target.c_str(), r.met ? "yes" : "NO");
  }
  std::printf("(for rows without a baseline the second column is the max, not p99)\n");
  for (const auto& r : rows)
    if (!r.note.empty()) std::printf("  %s: %s\n", r.name.c_str(), r.note.c_str());
}

namespace {

swarm::Json json_case(const Row& r) {
  swarm::Json c = swarm::Json::object();
  c.set("case", r.name).set("unit", r.unit);
  swarm::Json s = swarm::Json::object();
  s.set("median", r.swarm.p50).set("p99", r.swarm.p99).set("max", r.swarm.max).set("n", static_cast<int>(r.swarm.n));
  c.set("swarm", std::move(s));
  if (r.has_baseline) {
    swarm::Json b = swarm::Json::object();
    b.set("median", r.baseline.p50).set("p99", r.baseline.p99).set("n", static_cast<int>(r.baseline.n));
    c.set("baseline", std::move(b));
    c.set("ratio_median", r.ratio_p50).set("ratio_p99", r.ratio_p99);
  } else {
    c.set_null("baseline");
  }
  c.set("target", r.target).set("met", r.met).set("note", r.note);
  return c;
}

}  // namespace

swarm::Json json_document(const std::vector<Row>& rows, const std::string& nats_url, bool quick) {
  swarm::Json cases = swarm::Json::array();
  for (const auto& r : rows) cases.push(json_case(r));
  swarm::Json doc = swarm::Json::object();
  char host[256] = {0};
  gethostname(host, sizeof host - 1);
  doc.set("schema", "swarm.bench.v1")
      .set("host", host)
      .set("cpus", static_cast<int>(sysconf(_SC_NPROCESSORS_ONLN)))
      .set("nats_server", nats_url)
      .set("quick", quick)
      .set("cases", std::move(cases));
  return doc;
}

}  // namespace bench
