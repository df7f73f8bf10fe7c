// The acknowledged-write counters of a partition run: writers that raise a
// counter by CAS through every cut and log each acknowledgement, and what
// their logs say (partition_writer.cc).
#pragma once

#include <filesystem>

namespace partition {

// `partition_runner writer URLS KEY LOG STOPFILE`: writes until STOPFILE shows.
int run_writer(int argc, char** argv);

// What one writer's log says.
struct AckedWrites {
  int acked = 0;                // writes the server acknowledged
  unsigned long long last = 0;  // the highest count acknowledged
  int regressions = 0;          // rereads that found less than was acknowledged
};
AckedWrites acked_writes(const std::filesystem::path& log);

}  // namespace partition
