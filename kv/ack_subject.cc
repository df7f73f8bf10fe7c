#include "kv/ack_subject.h"

#include <charconv>

namespace kv::detail {

// Read in place: nats.c's natsMsg_GetMetaData allocates for every message of
// a replay, and a snapshot of 100,000 keys is 100,000 messages.
// "$JS.ACK.<stream>.<consumer>.<delivered>.<sseq>.<cseq>.<ts>.<pending>" (9
// tokens) or, with a domain, "$JS.ACK.<domain>.<hash>.<stream>.<consumer>.
// <delivered>.<sseq>.<cseq>.<ts>.<pending>.<token>" (12 or more).
std::optional<Delivery> parse_ack_subject(std::string_view reply) {
  constexpr std::string_view kPrefix = "$JS.ACK.";
  if (reply.substr(0, kPrefix.size()) != kPrefix) return std::nullopt;
  std::string_view tokens[16];
  std::size_t count = 0, start = 0;
  while (count < 16) {
    auto dot = reply.find('.', start);
    tokens[count++] = reply.substr(start, dot == std::string_view::npos ? std::string_view::npos : dot - start);
    if (dot == std::string_view::npos) break;
    start = dot + 1;
  }
  std::size_t base;  // index of <delivered>
  if (count == 9) base = 4;
  else if (count >= 12) base = 6;
  else return std::nullopt;
  Delivery d;
  auto number = [&](std::size_t i, auto* out) {  // the whole token, digits only
    auto t = tokens[i];
    auto [end, ec] = std::from_chars(t.data(), t.data() + t.size(), *out);
    return !t.empty() && ec == std::errc() && end == t.data() + t.size();
  };
  if (!number(base + 1, &d.stream_seq) || !number(base + 2, &d.consumer_seq) || !number(base + 3, &d.timestamp) ||
      !number(base + 4, &d.pending))
    return std::nullopt;
  d.consumer = tokens[base - 1];
  return d;
}

}  // namespace kv::detail
