#include "swarm/git/hub_packs.h"

namespace swarm {

namespace fs = std::filesystem;

std::vector<std::string> repackable_packs(const fs::path& hub) { return repackable_packs_in(hub / "objects" / "pack"); }

std::vector<std::string> repackable_packs_in(const fs::path& pack_dir) {
  std::vector<std::string> out;
  std::error_code ec;
  for (const auto& entry : fs::directory_iterator(pack_dir, ec)) {
    const fs::path& p = entry.path();
    if (p.extension() != ".pack") continue;
    fs::path keep = p;
    keep.replace_extension(".keep");
    fs::path index = p;
    index.replace_extension(".idx");
    std::error_code exists_ec;
    if (fs::exists(keep, exists_ec) || !fs::exists(index, exists_ec)) continue;
    out.push_back(p.stem().string());
  }
  return out;
}

}  // namespace swarm
