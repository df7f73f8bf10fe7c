#include "swarm/bus/message.h"

#include <cJSON.h>

#include <cstdio>

#include "swarm/base/error.h"
#include "swarm/base/names.h"
#include "swarm/base/random.h"
#include "swarm/base/text.h"

namespace swarm {

namespace {

constexpr std::size_t kMaxWordBytes = 255;

std::string text_of(const cJSON* object, const char* name, bool* wrong) {
  const cJSON* item = cJSON_GetObjectItemCaseSensitive(object, name);
  if (item == nullptr || cJSON_IsNull(item)) return "";
  if (!cJSON_IsString(item)) {
    *wrong = true;
    return "";
  }
  return item->valuestring;
}

}  // namespace

std::string inbox_subject(std::string_view root, std::string_view bucket, std::string_view name) {
  return std::string(root) + std::string(bucket) + ".to." + std::string(name);
}

std::string all_subject(std::string_view root, std::string_view bucket) {
  return std::string(root) + std::string(bucket) + ".all";
}

std::string Message::to_json() const {
  Json j = Json::object();
  j.add("schema", kMessageSchema).add("id", id).add("from", from).add("to", to).add("type", type);
  j.add("corr", corr).add("reply_to", reply_to).add("body", body);
  if (blob) {
    Json b = Json::object();
    b.add("sha256", blob->sha256).add("size", static_cast<std::int64_t>(blob->size)).add("name", blob->name);
    j.add("blob", std::move(b));
  } else {
    j.set_null("blob");
  }
  return j.dump();
}

Delivered delivered_of(const kv::StreamMessage& stored, std::string_view root, std::string_view bucket) {
  Delivered d;
  d.seq = stored.seq;
  d.time = std::chrono::time_point_cast<TimePoint::duration>(stored.time);
  auto corrupt = [&](std::string why) {
    d.corrupt_reason = std::move(why);
    return d;
  };
  if (auto problem = strict_json_problem(stored.data); !problem.empty()) return corrupt(problem);
  Json j = Json::parse(stored.data);
  if (!j || !cJSON_IsObject(j.get())) return corrupt("not a JSON object");
  bool wrong = false;
  if (text_of(j.get(), "schema", &wrong) != kMessageSchema) return corrupt(std::string("not ") + kMessageSchema);
  Message m;
  m.id = text_of(j.get(), "id", &wrong);
  m.from = text_of(j.get(), "from", &wrong);
  m.to = text_of(j.get(), "to", &wrong);
  m.type = text_of(j.get(), "type", &wrong);
  m.corr = text_of(j.get(), "corr", &wrong);
  m.reply_to = text_of(j.get(), "reply_to", &wrong);
  m.body = text_of(j.get(), "body", &wrong);
  if (wrong) return corrupt("a field that should be text is not");
  const cJSON* blob = cJSON_GetObjectItemCaseSensitive(j.get(), "blob");
  if (blob != nullptr && !cJSON_IsNull(blob)) {
    if (!cJSON_IsObject(blob)) return corrupt("blob is not an object");
    BlobRef ref;
    ref.sha256 = text_of(blob, "sha256", &wrong);
    ref.name = text_of(blob, "name", &wrong);
    const cJSON* size = cJSON_GetObjectItemCaseSensitive(blob, "size");
    if (wrong || !cJSON_IsNumber(size) || size->valuedouble < 0 || size->valuedouble > 9.0e15 ||
        !is_sha256_hex(ref.sha256))
      return corrupt("blob does not name a SHA-256 and a size");
    ref.size = static_cast<std::uint64_t>(size->valuedouble);
    m.blob = std::move(ref);
  }
  // The subject says whom it went to: a record that says otherwise was not
  // sent by swarm.
  const std::string expected = m.to == kToAll ? all_subject(root, bucket) : inbox_subject(root, bucket, m.to);
  if (stored.subject != expected) return corrupt("its `to` (" + m.to + ") is not the inbox it was sent to");
  d.message = std::move(m);
  return d;
}

Json Delivered::to_json() const {
  Json j = Json::object();
  if (message) {
    j = Json::parse(message->to_json());
  } else {
    j.set("state", "corrupt").set("error", corrupt_reason);
  }
  j.set("seq", seq).set("time", format_rfc3339(time));
  return j;
}

void require_message_word(std::string_view value, const char* what) {
  if (value.size() > kMaxWordBytes || !is_valid_utf8(value) || !is_plain_text(value))
    throw Error(Errc::bad_input, std::string("bad ") + what + " '" + printable(value) + "': at most " +
                                     std::to_string(kMaxWordBytes) + " bytes of text, no control characters");
}

std::string dedup_id(std::string_view bucket, const Message& message) {
  return std::string(bucket) + "/" + message.to + "/" + message.id;
}

bool is_sha256_hex(std::string_view text) {
  if (text.size() != 64) return false;
  for (char c : text)
    if (!((c >= '0' && c <= '9') || (c >= 'a' && c <= 'f'))) return false;
  return true;
}

std::string fresh_message_id() {
  auto& engine = thread_random();
  const std::uint64_t a = engine(), b = engine();
  char text[40];
  std::snprintf(text, sizeof text, "%08x-%04x-4%03x-%04x-%012llx", static_cast<unsigned>(a >> 32),
                static_cast<unsigned>((a >> 16) & 0xffff), static_cast<unsigned>(a & 0x0fff),
                static_cast<unsigned>(((b >> 48) & 0x3fff) | 0x8000),
                static_cast<unsigned long long>(b & 0xffffffffffffULL));
  return text;
}

}  // namespace swarm
