#include "swarm/hub_packs.h"

namespace swarm {

namespace fs = std::filesystem;

std::vector<std::string> repackable_packs(const fs::path& hub) {
  std::vector<std::string> out;
  std::error_code ec;
  for (const auto& entry : fs::directory_iterator(hub / "objects" / "pack", ec)) {
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
