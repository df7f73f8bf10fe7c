#include "swarm/base/error.h"

namespace swarm {

std::string_view to_string(Errc kind) {
  switch (kind) {
    case Errc::internal: return "internal";
    case Errc::bad_input: return "bad_input";
    case Errc::conflict: return "conflict";
    case Errc::corrupt: return "corrupt";
    case Errc::not_found: return "not_found";
    case Errc::blob_missing: return "blob_missing";
    case Errc::foreign_host: return "foreign_host";
    case Errc::not_bootstrapped: return "not_bootstrapped";
    case Errc::unavailable: return "unavailable";
    case Errc::problems_remain: return "problems_remain";
    case Errc::filesystem: return "filesystem";
  }
  return "internal";
}

Error Error::corrupt_session(const std::string& slot, const std::string& why) {
  return Error(Errc::corrupt, "the record of slot " + slot + " is corrupt (" + why +
                                  "); remove it with `swarm doctor --fix` or `swarm evict --slot " + slot + "`");
}

Error Error::corrupt_lease(const std::string& name, const std::string& why) {
  return Error(Errc::corrupt, "the record of lease " + name + " is corrupt (" + why +
                                  "); remove it with `swarm doctor --fix`");
}

Error Error::filesystem(const std::filesystem::filesystem_error& error) { return Error(Errc::filesystem, error.what()); }

Error Error::from(const std::exception& error) {
  if (const auto* own = dynamic_cast<const Error*>(&error)) return *own;
  if (const auto* kv = dynamic_cast<const kv::Error*>(&error)) return from_kv(*kv);
  if (const auto* fs = dynamic_cast<const std::filesystem::filesystem_error*>(&error)) return filesystem(*fs);
  return Error(Errc::internal, error.what());
}

Error bucket_open_error(const kv::Error& error, std::string_view what, const std::string& bucket,
                        const std::string& server) {
  if (error.kind() != kv::Errc::not_found) return from_kv(error);
  return Error(Errc::not_bootstrapped, "the " + std::string(what) + " bucket " + bucket + " does not exist on " + server +
                                           "; the workspace is not set up on this NATS server");
}

Error from_kv(const kv::Error& error) {
  switch (error.kind()) {
    case kv::Errc::not_found: return Error(Errc::not_found, error.what());
    case kv::Errc::conflict: return Error(Errc::conflict, error.what());
    case kv::Errc::unavailable:
    case kv::Errc::timeout: return Error(Errc::unavailable, error.what());
    case kv::Errc::bad_request: return Error(Errc::bad_input, error.what());
    case kv::Errc::no_room: return Error(Errc::filesystem, std::string(error.what()) + "; " + std::string(kStoreFullNote));
    case kv::Errc::internal: break;
  }
  return Error(Errc::internal, error.what());
}

}  // namespace swarm
