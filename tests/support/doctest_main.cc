#define DOCTEST_CONFIG_IMPLEMENT
#include <doctest/doctest.h>

#include "support/git_module.h"

int main(int argc, char** argv) {
  testing::use_built_git_module();
  return doctest::Context(argc, argv).run();
}
