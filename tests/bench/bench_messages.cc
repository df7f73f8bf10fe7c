// Messages at their scale, as whole processes against the least nats.c
// does the same: `send` of 1 KB against one publish with its ack, `inbox
// -n 100` of a 100,000-message bus (1,000 inboxes) against an ordered read
// of that inbox's subject, `ask` answered by a waiting responder against a
// raw question and answer through the stream, and `blob put` of 100 MB
// against its chunks published raw, with its peak memory at 10 and 100 MB.
#include <fcntl.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <fstream>
#include <random>
#include <thread>

#include "bench/bench_cases.h"
#include "kv/stream.h"
#include "swarm/bus/bus.h"

#ifndef MINIMAL_BUS_BINARY
#error "MINIMAL_BUS_BINARY must name the raw program"
#endif

namespace bench {

namespace {

constexpr int kInboxes = 1000;
constexpr int kPerInbox = 100;

std::string bucket_of(const Bench& b) { return b.up.config.bucket; }
swarm::WorkspaceNames names_of(const Bench& b) { return b.up.config.names(); }

std::string message_json(const std::string& id, const std::string& to, const std::string& body) {
  swarm::Message m;
  m.id = id;
  m.from = "bench";
  m.to = to;
  m.body = body;
  return m.to_json();
}

// 100,000 messages, 100 to each of 1,000 inboxes, interleaved as a busy bus has them.
void fill_bus(Bench& b) {
  auto stream = kv::Stream::bind(b.nats, names_of(b).bus);
  const std::string bucket = bucket_of(b);
  if (stream.last(swarm::inbox_subject(names_of(b).bus_root, bucket, "i999"))) return;
  jsPubOptions options;
  jsPubOptions_Init(&options);
  const std::string body(150, 'm');
  for (int n = 0; n < kPerInbox; ++n)
    for (int i = 0; i < kInboxes; ++i) {
      const std::string to = "i" + std::to_string(i);
      const std::string subject = swarm::inbox_subject(names_of(b).bus_root, bucket, to);
      const std::string value = message_json("fill-" + std::to_string(n) + "-" + std::to_string(i), to, body);
      check(js_PublishAsync(b.raw.js, subject.c_str(), value.data(), static_cast<int>(value.size()), &options),
            "fill the bus");
    }
  jsPubOptions complete;
  jsPubOptions_Init(&complete);
  complete.MaxWait = 120000;
  check(js_PublishAsyncComplete(b.raw.js, &complete), "fill the bus: acknowledgements");
}

}  // namespace

// 33. `swarm send` of a 1 KB message against a nats.c process's publish with its ack.
void send_message(Bench& b) {
  const int n = b.quick ? 10 : 40;
  const std::string body(1024, 'b');
  const std::string subject = swarm::inbox_subject(names_of(b).bus_root, bucket_of(b), "send-bench");
  std::vector<double> swarm_ms, base_ms;
  for (int i = 0; i < n + 2; ++i) {
    auto s = run_process({b.swarm_bin, "send", "--to", "send-bench", "--from", "bench", body}, {b.ws_env});
    auto base = run_process({MINIMAL_BUS_BINARY, b.server.url(), "publish", subject, "1024"}, {});
    if (s.exit != 0 || base.exit != 0) fail("send of 1 KB failed");
    if (i < 2) continue;
    swarm_ms.push_back(s.ms);
    base_ms.push_back(base.ms);
  }
  Row row{.name = "swarm send, 1 KB", .swarm = stats_of(swarm_ms), .baseline = stats_of(base_ms), .target = "<= 1.3x"};
  finish(row, 1.3);
  row.note = std::to_string(n) + " sends each; baseline: a nats.c process, one publish with its ack (minimal_bus)";
  b.rows.push_back(row);
}

// 34. `swarm inbox -n 100` of one of 1,000 inboxes in a 100,000-message bus
// against an ordered read of that inbox's 100 messages.
void inbox_of_many(Bench& b) {
  fill_bus(b);
  const int n = b.quick ? 10 : 30;
  const std::string subject = swarm::inbox_subject(names_of(b).bus_root, bucket_of(b), "i500");
  for (const char* json : {"", "--json"}) {
    std::vector<double> swarm_ms, base_ms;
    std::vector<std::string> args = {b.swarm_bin, "inbox", "--as", "i500", "-n", "100"};
    if (*json) args.push_back(json);
    for (int i = 0; i < n + 2; ++i) {
      auto s = run_process(args, {b.ws_env});
      auto base = run_process({MINIMAL_BUS_BINARY, b.server.url(), "read", subject, "100"}, {});
      if (s.exit != 0 || base.exit != 0) fail("inbox -n 100 failed");
      if (i < 2) continue;
      swarm_ms.push_back(s.ms);
      base_ms.push_back(base.ms);
    }
    Row row{.name = std::string("swarm inbox -n 100 ") + (*json ? "--json " : "") + "(100,000 messages, 1,000 inboxes)",
            .swarm = stats_of(swarm_ms), .baseline = stats_of(base_ms), .target = "<= 2x and < 50 ms"};
    finish(row, 2.0);
    row.met = row.met && row.swarm.p50 < 50;
    row.note = std::to_string(n) + " reads each; baseline: a nats.c process's ordered read of the inbox's subject";
    b.rows.push_back(row);
  }
}

// 35. A question and its answer: `swarm ask` against a nats.c process that
// listens, publishes the same question and awaits the answer; the same
// responder (a thread here, waiting on lead's subject) answers both.
void ask_round_trip(Bench& b) {
  const int n = b.quick ? 10 : 40;
  const std::string bucket = bucket_of(b);
  const swarm::Bus bus(b.nats, names_of(b));
  std::atomic<bool> stop{false};
  std::thread responder([&] {
    auto reader = kv::Stream::bind(b.nats, names_of(b).bus).read(swarm::inbox_subject(names_of(b).bus_root, bucket, "lead"), {.new_only = true});
    while (!stop) {
      auto m = reader.next(std::chrono::milliseconds(100));
      if (!m) continue;
      auto d = swarm::delivered_of(*m, names_of(b).bus_root, bucket);
      if (d.corrupt()) continue;
      swarm::Message reply;
      reply.id = swarm::fresh_message_id();
      reply.from = "lead";
      reply.to = d.message->from;
      reply.reply_to = d.message->id;
      reply.corr = d.message->corr;
      reply.body = "yes";
      bus.send(reply);
    }
  });
  std::vector<double> swarm_ms, base_ms;
  for (int i = 0; i < n + 2; ++i) {
    auto s = run_process({b.swarm_bin, "ask", "--to", "lead", "--from", "asker", "--wait", "10s", "may I?"}, {b.ws_env});
    auto base = run_process({MINIMAL_BUS_BINARY, b.server.url(), "ask", swarm::inbox_subject(names_of(b).bus_root, bucket, "lead"),
                             swarm::inbox_subject(names_of(b).bus_root, bucket, "rawasker")},
                            {});
    if (s.exit != 0 || base.exit != 0) {
      stop = true;
      responder.join();
      fail("ask round trip failed");
    }
    if (i < 2) continue;
    swarm_ms.push_back(s.ms);
    base_ms.push_back(base.ms);
  }
  stop = true;
  responder.join();
  Row row{.name = "swarm ask, answered by a waiting responder", .swarm = stats_of(swarm_ms),
          .baseline = stats_of(base_ms), .target = "<= 1.5x"};
  finish(row, 1.5);
  row.note = std::to_string(n) + " questions each; baseline: a nats.c process: listen, publish, await the answer";
  b.rows.push_back(row);
}

// 36. `swarm blob put` of 100 MB (on tmpfs; each sample a new blob) against
// its 128 KiB chunks published asynchronously by a nats.c process; then
// its peak memory at 10 MB and at 100 MB.
void blob_put(Bench& b) {
  const int n = b.quick ? 2 : 5;
  ShmDir shm;
  const auto file = shm.path / "blob.bin";
  auto write_random = [&](std::size_t bytes) {
    std::ofstream out(file, std::ios::binary | std::ios::trunc);
    std::mt19937_64 engine(42);
    std::vector<std::uint64_t> block(1 << 16);
    for (std::size_t done = 0; done < bytes; done += block.size() * 8) {
      for (auto& w : block) w = engine();
      out.write(reinterpret_cast<const char*>(block.data()),
                static_cast<std::streamsize>(std::min(bytes - done, block.size() * 8)));
    }
  };
  // Each sample stores a new blob: its first 8 bytes are the sample's number.
  auto mark = [&](std::uint64_t i) {
    const int fd = ::open(file.c_str(), O_WRONLY);
    if (fd < 0 || ::pwrite(fd, &i, sizeof i, 0) != static_cast<ssize_t>(sizeof i)) fail("mark the blob");
    ::close(fd);
  };
  auto purge = [&] {
    jsOptions o;
    jsOptions_Init(&o);
    check(js_PurgeStream(b.raw.js, ("OBJ_" + b.up.config.names().blobs).c_str(), &o, nullptr), "purge the blob store");
  };
  write_random(std::size_t(100) << 20);
  std::vector<double> swarm_ms, base_ms;
  for (int i = 0; i < n + 1; ++i) {
    mark(1000 + static_cast<std::uint64_t>(i));
    auto s = run_process({b.swarm_bin, "blob", "put", file.string()}, {b.ws_env});
    auto base = run_process({MINIMAL_BUS_BINARY, b.server.url(), "chunks",
                             "$O." + b.up.config.names().blobs + ".C.rawbench" + std::to_string(i), file.string()},
                            {});
    if (s.exit != 0 || base.exit != 0) fail("blob put of 100 MB failed");
    purge();
    if (i < 1) continue;
    swarm_ms.push_back(s.ms);
    base_ms.push_back(base.ms);
  }
  Row row{.name = "swarm blob put, 100 MB (tmpfs)", .swarm = stats_of(swarm_ms), .baseline = stats_of(base_ms),
          .target = "<= 1.5x"};
  finish(row, 1.5);
  row.note = std::to_string(n) + " puts each; baseline: a nats.c process publishing its 128 KiB chunks (minimal_bus)";
  b.rows.push_back(row);
  // Peak memory: a 10 MB blob and a 100 MB one.
  double rss[2] = {0, 0};
  int k = 0;
  for (std::size_t mb : {std::size_t(10), std::size_t(100)}) {
    write_random(mb << 20);
    mark(5000 + mb);
    const long kb = peak_rss_kb({b.swarm_bin, "blob", "put", file.string()}, {b.ws_env});
    if (kb <= 0) fail("peak memory of blob put");
    rss[k++] = static_cast<double>(kb) / 1024.0;
    purge();
  }
  Row mem{.name = "peak RSS of swarm blob put, 10 MB / 100 MB", .unit = "MiB", .has_baseline = false,
          .target = "100 MB within 8 MiB of 10 MB"};
  mem.swarm = stats_of({rss[0]});
  mem.swarm.max = rss[1];  // shown beside it: 10 MB, then 100 MB
  mem.met = rss[1] <= rss[0] + 8;
  char note[128];
  std::snprintf(note, sizeof note, "10 MB: %.1f MiB, 100 MB: %.1f MiB (streamed: at most 64 chunks in flight)", rss[0], rss[1]);
  mem.note = note;
  b.rows.push_back(mem);
}

}  // namespace bench
