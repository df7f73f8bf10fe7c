// What the benchmark prints: the table of its rows (with their notes) and one
// JSON document of the same rows (schema swarm.bench.v1), which
// scripts/bench.sh and the README read.
#pragma once

#include <string>
#include <vector>

#include "bench/bench_support.h"
#include "swarm/base/json.h"

namespace bench {

void print_table(const std::vector<Row>& rows);

swarm::Json json_document(const std::vector<Row>& rows, const std::string& nats_url, bool quick);

}  // namespace bench
