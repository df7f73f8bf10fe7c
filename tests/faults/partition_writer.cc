// The writers of a partition run (`partition_runner writer ...`): an
// independent count of acknowledged writes, beside the lock loops. Each writer
// owns one key of the lease bucket ("_acked.<side>", no lease) and raises a
// counter in it by CAS, through every cut; each write the server acknowledges
// is logged ("ack COUNT REVISION"). The checker then wants each key to hold at
// least the last count acknowledged: a lower one means the stream lost
// acknowledged writes (nats-server 2.9 did, under partitions).
#include "faults/partition_writer.h"

#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <string>

#include "faults/partition_support.h"
#include "kv/bucket.h"
#include "swarm/workspace/bootstrap.h"

using namespace std::chrono_literals;
namespace fs = std::filesystem;

namespace partition {

namespace {

unsigned long long count_in(const std::string& value) { return std::strtoull(value.c_str(), nullptr, 10); }

// One writer's loop, on its own connection; a failure of any kind (a cut, an
// election, a conflict after a retry) rereads the key and goes on.
void write_until_stopped(const std::string& urls, const std::string& key, std::ofstream& log, const fs::path& stop) {
  unsigned long long acked = 0;  // the last count the server acknowledged
  while (!fs::exists(stop)) {
    try {
      kv::ConnectionOptions o;
      o.urls = kv::split_urls(urls);
      o.connect_timeout = 2s;
      o.request_timeout = 3s;
      o.name = "partition-writer";
      auto connection = swarm::connect_nats(o);
      auto bucket = kv::Bucket::open(connection, kLeaseBucket);
      std::uint64_t revision = 0;
      unsigned long long count = 0;
      if (auto entry = bucket.get(key)) {
        revision = entry->revision;
        count = count_in(entry->value);
        if (count < acked)
          log << "regressed " << count << " " << revision << " after ack " << acked << "\n" << std::flush;
      }
      while (!fs::exists(stop)) {
        const unsigned long long next = count + 1;
        revision = revision == 0 ? bucket.create(key, std::to_string(next))
                                 : bucket.update(key, std::to_string(next), revision);
        count = next;
        acked = std::max(acked, next);
        log << "ack " << next << " " << revision << "\n" << std::flush;
        pause_for(50ms);
      }
    } catch (const std::exception& e) {
      log << "error " << e.what() << "\n" << std::flush;
      pause_for(200ms);
    }
  }
}

}  // namespace

int run_writer(int argc, char** argv) {
  // partition_runner writer URLS KEY LOG STOPFILE
  if (argc != 6) {
    std::fprintf(stderr, "usage: partition_runner writer URLS KEY LOG STOPFILE\n");
    return 2;
  }
  std::ofstream log(argv[4], std::ios::app);
  write_until_stopped(argv[2], argv[3], log, argv[5]);
  return 0;
}

AckedWrites acked_writes(const fs::path& log) {
  AckedWrites out;
  std::ifstream in(log);
  std::string word;
  while (in >> word) {
    if (word == "ack") {
      unsigned long long count = 0, revision = 0;
      in >> count >> revision;
      ++out.acked;
      out.last = std::max(out.last, count);
    } else if (word == "regressed") {
      ++out.regressions;
    }
    in.ignore(1 << 20, '\n');
  }
  return out;
}

}  // namespace partition
