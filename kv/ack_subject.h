// Reading a JetStream message's delivery metadata from its ack subject.
// Private to kv/ (tested on its own).
#pragma once

#include <cstdint>
#include <optional>
#include <string_view>

namespace kv::detail {

struct Delivery {
  std::uint64_t stream_seq = 0;
  std::uint64_t consumer_seq = 0;
  std::int64_t timestamp = 0;  // unix nanoseconds
  std::uint64_t pending = 0;
  // The consumer's name: a view into the subject read (empty when nats.c
  // read an ack subject of another shape).
  std::string_view consumer;
};

// nullopt when `reply` is not an ack subject of a known shape.
std::optional<Delivery> parse_ack_subject(std::string_view reply);

}  // namespace kv::detail
