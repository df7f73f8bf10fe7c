// The packs of a local hub that a repack takes: shared by the core (which
// counts them after a commit, without loading git) and the git module
// (which repacks them), so both count the same packs.
#pragma once

#include <filesystem>
#include <string>
#include <vector>

namespace swarm {

// The packs in `hub`/objects/pack by name without extension ("pack-<hash>"),
// leaving out kept ones (a .keep file: someone asked for them to stay) and
// ones still being written (no .idx yet).
std::vector<std::string> repackable_packs(const std::filesystem::path& hub);
// The same in a pack folder given itself (a repack holds it open).
std::vector<std::string> repackable_packs_in(const std::filesystem::path& pack_dir);

}  // namespace swarm
