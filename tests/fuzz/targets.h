// Fuzz targets, one per parser of what users and other clients hand swarm:
// durations, names, session records, config.json, NATS URLs. Each states the
// parser's contract as properties and throws FuzzFailure when one breaks.
// scripts/fuzz.sh runs them under libFuzzer (clang); the corpus they found is
// replayed by an ordinary test (tests/swarm/fuzz_replay_test.cc).
#pragma once

#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

namespace fuzz {

struct FuzzFailure : std::logic_error {
  using std::logic_error::logic_error;
};

// Bad input is a swarm::Error of kind bad_input and nothing else; a duration
// that parses formats to a text that parses back to it.
void duration(std::string_view input);
// The slot, lease and task-id rules hold exactly as the contract writes them.
void names(std::string_view input);
// A record is read or reported corrupt, never thrown; what is read writes back
// to a record that reads the same, and every time is one a clock can hold.
void record(std::string_view input);
// config.json text is good or corrupt with a reason, never thrown; a good one
// saves and reads back the same.
void config(std::string_view input);
// A URL list is accepted or refused as bad input, nothing else.
void url(std::string_view input);

struct Target {
  const char* name;
  void (*run)(std::string_view);
};
const std::vector<Target>& targets();

}  // namespace fuzz
