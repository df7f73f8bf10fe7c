// Benchmark case of the journal: `swarm log --slot S -n 20` over a stream of
// 1,000,000 events, against the least a nats.c process does to read one
// event of that slot (a direct get of its subject's last message).
#include <cstdio>

#include "bench/bench_cases.h"
#include "swarm/journal/journal.h"
#include "swarm/slots/events.h"

namespace bench {

namespace {

// Fills the journal with `n` events of `slots` slots, round-robin: one
// slot's events are spread over the whole stream (the worst case for
// reading its last few).
void fill_journal(Raw& raw, const swarm::WorkspaceNames& names, int n, int slots) {
  jsPubOptions options;
  jsPubOptions_Init(&options);
  for (int i = 0; i < n; ++i) {
    const std::string slot = "j" + std::to_string(i % slots);
    swarm::Event e = swarm::slot_event(i % 3 == 0 ? "join" : (i % 3 == 1 ? "commit" : "close"), names.sessions,
                                       slot, {"bench-host", "bench-id", 4242}, "T-" + std::to_string(i), i + 1, i + 1);
    e.detail.set("head", "0123456789abcdef0123456789abcdef01234567").set("pushed", true);
    const std::string value = e.to_json().dump();
    const std::string subject = swarm::event_subject(names.event_root, swarm::Thing::slot, names.sessions, slot);
    check(js_PublishAsync(raw.js, subject.c_str(), value.data(), static_cast<int>(value.size()), &options),
          "journal fill publish");
  }
  jsPubOptions complete;
  jsPubOptions_Init(&complete);
  complete.MaxWait = 120000;
  check(js_PublishAsyncComplete(raw.js, &complete), "journal fill complete");
}

}  // namespace

// 19. `swarm log --slot S -n 20` (text and --json) over 1,000,000 events.
void log_long_history(Bench& b) {
  const int events = b.quick ? 100000 : 1000000;
  const int slots = 1000;
  const swarm::WorkspaceNames names = b.up.config.names();
  swarm::Journal journal(b.nats, names);
  auto before = journal.state();
  if (!before) fail("no journal stream: swarm up should have made it");
  const auto fill_start = Clock::now();
  fill_journal(b.raw, names, events, slots);
  const double fill_s = ms_since(fill_start) / 1000.0;
  auto after = journal.state();
  if (!after || after->messages < before->messages + static_cast<std::uint64_t>(events))
    fail("the journal did not take all " + std::to_string(events) + " events");

  const std::string slot = "j17";
  const int n = b.quick ? 10 : 30;
  std::vector<double> text_ms, json_ms, base_ms;
  for (int i = 0; i < n; ++i) {
    auto t = run_process({b.swarm_bin, "log", "--slot", slot, "-n", "20"}, {b.ws_env});
    if (t.exit != 0) fail("swarm log failed");
    text_ms.push_back(t.ms);
    auto j = run_process({b.swarm_bin, "log", "--slot", slot, "-n", "20", "--json"}, {b.ws_env});
    if (j.exit != 0) fail("swarm log --json failed");
    json_ms.push_back(j.ms);
    auto base = run_process({b.minimal_get, b.server.url(), "--last-of",
                             names.events + ":" +
                                 swarm::event_subject(names.event_root, swarm::Thing::slot, names.sessions, slot)},
                            {});
    if (base.exit != 0) fail("minimal_get --last-of failed");
    base_ms.push_back(base.ms);
  }
  // The answer must be the slot's last 20 events.
  swarm::JournalQuery q;
  q.thing = swarm::Thing::slot;
  q.name = slot;
  q.buckets = {b.up.config.bucket};
  q.last = 20;
  if (journal.read(q).size() != 20) fail("log --slot -n 20 did not find 20 events");

  char note[256];
  std::snprintf(note, sizeof note,
                "%d events of %d slots (filled in %.1f s); baseline: a nats.c process's direct get of the "
                "slot's last event",
                events, slots, fill_s);
  for (auto* which : {&text_ms, &json_ms}) {
    Row row{.name = which == &text_ms ? "log --slot S -n 20 (1M events)" : "log --slot S -n 20 --json (1M events)",
            .swarm = stats_of(*which), .baseline = stats_of(base_ms), .target = "< 50 ms"};
    finish(row, 1e9);
    row.met = row.swarm.p50 < 50.0;
    row.note = note;
    if (b.quick) row.name.replace(row.name.find("1M"), 2, "100k");
    b.rows.push_back(row);
  }
}

}  // namespace bench
