#include "cli/verbs/message_body.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>

#include "swarm/base/error.h"
#include "swarm/base/text.h"

namespace cli {

namespace {

[[noreturn]] void too_big(const std::string& what, std::uint64_t size, std::uint64_t max) {
  throw swarm::Error(swarm::Errc::bad_input, what + " is " + std::to_string(size) + " bytes, more than a blob may be (" +
                                                 std::to_string(max) + " bytes; `swarm up --blob-max-bytes SIZE` "
                                                 "changes it); nothing was sent");
}

}  // namespace

bool reads_standard_input(const std::vector<std::string>& text) { return text.size() == 1 && text[0] == "-"; }

void read_body(const BodySource& f, std::uint64_t max, Body& body) {
  const bool from_stdin = reads_standard_input(f.text);
  if (!f.file.empty()) {
    if (!f.text.empty()) throw swarm::Error(swarm::Errc::bad_input, "give the body as TEXT, - or --file, not two of them");
    body.shown = swarm::printable(f.file);
    std::uint64_t size = 0;
    body.fd = open_regular_file(f.file, "--file " + body.shown, &size);
    if (size > max) too_big("--file " + body.shown, size, max);
    body.blob_from_fd = true;
    body.name = std::filesystem::path(f.file).filename().string();
    return;
  }
  if (!from_stdin) {
    for (const auto& t : f.text) body.text += (body.text.empty() ? "" : " ") + t;
    if (body.text.size() > swarm::kInlineBodyMax || !swarm::is_valid_utf8(body.text) ||
        body.text.find('\0') != std::string::npos) {
      if (body.text.size() > max) too_big("the body", body.text.size(), max);
      body.blob_from_text = true;
    }
    return;
  }
  body.shown = "standard input";
  std::string head;
  char buffer[1 << 16];
  for (;;) {
    const ssize_t n = ::read(f.input, buffer, sizeof buffer);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) throw swarm::Error(swarm::Errc::filesystem, std::string("cannot read standard input: ") + std::strerror(errno));
    if (n == 0) break;
    if (!body.fd) {
      head.append(buffer, static_cast<std::size_t>(n));
      if (head.size() <= swarm::kInlineBodyMax) continue;
      const char* tmp = std::getenv("TMPDIR");
      body.fd = swarm::UniqueFd(::open(tmp != nullptr && *tmp != '\0' ? tmp : "/tmp", O_TMPFILE | O_RDWR | O_CLOEXEC, 0600));
      if (!body.fd) throw swarm::Error(swarm::Errc::filesystem, std::string("cannot keep standard input in a temporary file: ") + std::strerror(errno));
      if (::write(body.fd.get(), head.data(), head.size()) != static_cast<ssize_t>(head.size()))
        throw swarm::Error(swarm::Errc::filesystem, std::string("cannot keep standard input: ") + std::strerror(errno));
      continue;
    }
    if (::write(body.fd.get(), buffer, static_cast<std::size_t>(n)) != n)
      throw swarm::Error(swarm::Errc::filesystem, std::string("cannot keep standard input: ") + std::strerror(errno));
    if (static_cast<std::uint64_t>(::lseek(body.fd.get(), 0, SEEK_CUR)) > max)
      throw swarm::Error(swarm::Errc::bad_input, "standard input is more than a blob may be (" + std::to_string(max) +
                                                     " bytes; `swarm up --blob-max-bytes SIZE` changes it); nothing "
                                                     "was sent");
  }
  body.name = "stdin";
  if (body.fd) {
    body.blob_from_fd = true;
  } else if (!swarm::is_valid_utf8(head) || head.find('\0') != std::string::npos) {
    body.text = std::move(head);
    body.blob_from_text = true;
  } else {
    body.text = std::move(head);
  }
}

void store_blob(const swarm::Blobs& blobs, Body& body, swarm::Message& m) {
  if (body.blob_from_fd) m.blob = blobs.put_file(body.fd.get(), body.name, body.shown);
  else if (body.blob_from_text) m.blob = blobs.put_bytes(body.text, body.name);
  else m.body = body.text;
}

swarm::UniqueFd open_regular_file(const std::string& path, const std::string& shown, std::uint64_t* size) {
  swarm::UniqueFd fd(::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK));
  if (!fd) {
    const int saved = errno;
    throw swarm::Error(swarm::Errc::bad_input, shown + ": cannot open it (" + std::strerror(saved) + ")");
  }
  struct stat st {};
  if (::fstat(fd.get(), &st) != 0 || !S_ISREG(st.st_mode))
    throw swarm::Error(swarm::Errc::bad_input, shown + ": not a regular file");
  ::fcntl(fd.get(), F_SETFL, ::fcntl(fd.get(), F_GETFL) & ~O_NONBLOCK);
  *size = static_cast<std::uint64_t>(st.st_size);
  return fd;
}

}  // namespace cli
