// Owning C handles: std::unique_ptr<T, CFree<destroy_function>>. Used by kv/
// for nats.c objects and by the git module for libgit2 objects.
#pragma once

namespace kv {

template <auto Free>
struct CFree {
  template <typename T>
  void operator()(T* p) const { Free(p); }
};

}  // namespace kv
