// Every input the fuzzers kept (tests/fuzz/corpus/<target>/), run through its
// target again: what broke a parser once stays fixed.
#include <doctest/doctest.h>

#include <filesystem>
#include <fstream>
#include <sstream>

#include "fuzz/targets.h"

TEST_CASE("FuzzCorpus_EveryFoundInputKeepsItsProperties") {
  // each target's properties hold for each input of its corpus (and every corpus has seeds).
  namespace fs = std::filesystem;
  const fs::path corpus = SWARM_FUZZ_CORPUS;
  for (const auto& target : fuzz::targets()) {
    int inputs = 0;
    for (const auto& file : fs::directory_iterator(corpus / target.name)) {
      std::ifstream in(file.path(), std::ios::binary);
      std::stringstream bytes;
      bytes << in.rdbuf();
      ++inputs;
      try {
        target.run(bytes.str());
      } catch (const std::exception& e) {
        FAIL_CHECK(target.name << " " << file.path().filename().string() << ": " << e.what());
      }
    }
    CHECK_MESSAGE(inputs > 0, target.name);
  }
}
