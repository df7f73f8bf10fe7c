// Where swarm's private files are: its git module (libswarm_git.so) and its
// HTTP server (swarm-serve), kept out of the binary so that every verb does
// not pay for linking what few use (adr/0008, adr/0022).
#pragma once

#include <filesystem>
#include <vector>

namespace swarm {

// Where the private file `name` may be, in order: $<env> (when env is given: tests, and anyone
// who moved it), next to the program (the build tree), in the private
// library folder relative to the program (an installed prefix, wherever it
// was moved: bin/../lib/<multiarch>/swarm), and where it was installed (a
// program of a library user that lives elsewhere). Nothing names the build tree.
std::vector<std::filesystem::path> private_file_candidates(const char* name, const char* env);

// Where it is installed relative to the program ("../lib/<multiarch>/swarm").
const char* private_folder_from_bin();

}  // namespace swarm
