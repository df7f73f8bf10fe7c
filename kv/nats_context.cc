#include "kv/nats_context.h"

#include <cJSON.h>
#include <pwd.h>
#include <unistd.h>

#include <cstdlib>
#include <fstream>
#include <memory>
#include <sstream>

#include "kv/error.h"

namespace kv {

namespace fs = std::filesystem;

namespace {

struct JsonFree {
  void operator()(cJSON* p) const { cJSON_Delete(p); }
};

std::string env(const char* name) {
  const char* value = std::getenv(name);
  return value != nullptr ? value : "";
}

// A context file is small: anything bigger is not one.
constexpr std::streamsize kMaxContextBytes = 1 << 20;

}  // namespace

fs::path nats_context_dir() {
  if (std::string xdg = env("XDG_CONFIG_HOME"); !xdg.empty()) return fs::path(xdg) / "nats" / "context";
  std::string home = env("HOME");
  if (home.empty())
    if (const passwd* pw = ::getpwuid(::getuid()); pw != nullptr && pw->pw_dir != nullptr) home = pw->pw_dir;
  return fs::path(home) / ".config" / "nats" / "context";
}

NatsContext read_nats_context(const std::string& name, const fs::path& dir) {
  if (name.empty() || name.find('/') != std::string::npos || name == "." || name == ".." ||
      name.find_first_of(std::string("\0\n", 2)) != std::string::npos)
    throw Error(Errc::bad_request, "bad nats context name '" + name + "': a context is named by one word, as "
                                   "`nats context ls` shows them");
  const fs::path file = dir / (name + ".json");
  std::ifstream in(file, std::ios::binary);
  if (!in)
    throw Error(Errc::bad_request, "no nats context '" + name + "': " + file.string() +
                                       " cannot be read (make it with `nats context save " + name + " ...`)");
  std::ostringstream text;
  text << in.rdbuf();
  if (text.str().size() > static_cast<std::size_t>(kMaxContextBytes))
    throw Error(Errc::bad_request, "the nats context " + file.string() + " is too large to be one");
  std::unique_ptr<cJSON, JsonFree> json(cJSON_ParseWithOpts(text.str().c_str(), nullptr, true));
  if (!json || !cJSON_IsObject(json.get()))
    throw Error(Errc::bad_request, "the nats context " + file.string() + " is not a JSON object");
  NatsContext out;
  auto field = [&](const char* key, std::string* value) {
    const cJSON* item = cJSON_GetObjectItemCaseSensitive(json.get(), key);
    if (item == nullptr || cJSON_IsNull(item)) return;
    if (!cJSON_IsString(item))
      throw Error(Errc::bad_request, "the nats context " + file.string() + ": '" + key + "' is not a string");
    *value = item->valuestring;
  };
  field("url", &out.url);
  field("user", &out.user);
  field("password", &out.password);
  field("token", &out.token);
  field("creds", &out.creds);
  field("nkey", &out.nkey);
  field("cert", &out.cert);
  field("key", &out.key);
  field("ca", &out.ca);
  return out;
}

}  // namespace kv
