// swarm blob put and get: the bus's object store by hand. A blob is named
// by its SHA-256, stored once, and checked against its name when it is read.
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <iostream>

#include "cli/command/context.h"
#include "cli/verbs/message_body.h"
#include "swarm/base/text.h"
#include "swarm/bus/blobs.h"

namespace cli {

namespace {

struct BlobFlags {
  std::string file, sha, out;
};

int run_put(Context& ctx, const BlobFlags& f) {
  const std::string shown = swarm::printable(f.file);
  std::uint64_t size = 0;
  const swarm::UniqueFd fd = open_regular_file(f.file, shown, &size);
  auto messages = ctx.messages();
  const std::uint64_t max = messages.config.blob_max();
  if (size > max)
    throw swarm::Error(swarm::Errc::bad_input, shown + " is " + std::to_string(size) +
                                                   " bytes, more than a blob may be (" + std::to_string(max) +
                                                   " bytes; `swarm up --blob-max-bytes SIZE` changes it); nothing was stored");
  auto ref = messages.blobs.put_file(fd.get(), std::filesystem::path(f.file).filename().string(), shown);
  swarm::Json doc = swarm::Json::object();
  doc.set("sha256", ref.sha256).set("size", ref.size).set("name", ref.name);
  ctx.out().result("blob", ref.sha256 + "\n", std::move(doc));
  return 0;
}

// A blob printed inline in --json (swarm.blob.v1 with its `text`, what an
// MCP call of blob_get gets): text of UTF-8 up to this many bytes; a
// larger or binary one is exit 2 saying to write it to a file (-o FILE).
constexpr std::size_t kInlineBlobMax = 1 << 20;

int print_blob_json(Context& ctx, const swarm::Blobs& blobs, const std::string& sha) {
  std::string text;
  auto ref = blobs.get(sha, [&](const char* data, std::size_t size) {
    if (text.size() + size > kInlineBlobMax)
      throw swarm::Error(swarm::Errc::bad_input, "blob " + sha + " is more than --json prints (" +
                                                     std::to_string(kInlineBlobMax) + " bytes): write it to a file "
                                                     "with -o FILE");
    text.append(data, size);
  });
  if (!swarm::is_valid_utf8(text) || text.find('\0') != std::string::npos)
    throw swarm::Error(swarm::Errc::bad_input, "blob " + sha + " is not UTF-8 text, which --json cannot print: "
                                                   "write it to a file with -o FILE");
  swarm::Json doc = swarm::Json::object();
  doc.set("sha256", ref.sha256).set("size", ref.size).set("text", text);
  ctx.out().result("blob", text, std::move(doc));
  return 0;
}

// Writes the blob to -o FILE through an unnamed file in FILE's folder,
// given its name only once it is whole and verified (a get that fails or
// is killed leaves nothing and FILE as it was), or to stdout (bytes go out
// as they come: a corrupt blob is said after them).
int run_get(Context& ctx, const BlobFlags& f) {
  namespace fs = std::filesystem;
  std::error_code ec;
  if (!f.out.empty() && f.out != "-" && fs::is_directory(f.out, ec))
    throw swarm::Error(swarm::Errc::bad_input, "-o " + swarm::printable(f.out) + " is a folder: name the file to write");
  auto messages = ctx.messages();
  if ((f.out.empty() || f.out == "-") && ctx.out().json()) return print_blob_json(ctx, messages.blobs, f.sha);
  if (f.out.empty() || f.out == "-") {
    messages.blobs.get(f.sha, [](const char* data, std::size_t size) { std::cout.write(data, static_cast<std::streamsize>(size)); });
    std::cout.flush();
    if (!std::cout) throw swarm::Error(swarm::Errc::filesystem, "standard output refused the blob (a closed pipe?)");
    return 0;
  }
  const fs::path target(f.out);
  const fs::path dir = target.has_parent_path() ? target.parent_path() : fs::path(".");
  const swarm::UniqueFd file(::open(dir.c_str(), O_TMPFILE | O_WRONLY | O_CLOEXEC, 0666));
  const int fd = file.get();
  if (!file) {
    const int saved = errno;
    throw swarm::Error(swarm::Errc::filesystem, "cannot write in " + swarm::printable(dir.string()) + ": " + std::strerror(saved));
  }
  auto ref = messages.blobs.get(f.sha, [&](const char* data, std::size_t size) {
    std::size_t done = 0;
    while (done < size) {
      const ssize_t n = ::write(fd, data + done, size - done);
      if (n < 0 && errno == EINTR) continue;
      if (n < 0) {
        const int saved = errno;
        throw swarm::Error(swarm::Errc::filesystem, "cannot write " + swarm::printable(f.out) + ": " + std::strerror(saved));
      }
      done += static_cast<std::size_t>(n);
    }
  });
  if (::fsync(fd) != 0) {
    const int saved = errno;
    throw swarm::Error(swarm::Errc::filesystem, "cannot write " + swarm::printable(f.out) + ": " + std::strerror(saved));
  }
  // Named beside FILE first (linkat does not replace), then renamed over it.
  const fs::path temp = dir / ("." + target.filename().string() + ".swarm-blob-" + std::to_string(::getpid()));
  const std::string proc = "/proc/self/fd/" + std::to_string(fd);
  ::unlink(temp.c_str());
  if (::linkat(AT_FDCWD, proc.c_str(), AT_FDCWD, temp.c_str(), AT_SYMLINK_FOLLOW) != 0 ||
      ::rename(temp.c_str(), target.c_str()) != 0) {
    const int saved = errno;
    ::unlink(temp.c_str());
    throw swarm::Error(swarm::Errc::filesystem, "cannot write " + swarm::printable(f.out) + ": " + std::strerror(saved));
  }
  swarm::Json doc = swarm::Json::object();
  doc.set("sha256", ref.sha256).set("size", ref.size).set("file", target.string());
  ctx.out().result("blob", swarm::printable(target.string()) + "\n", std::move(doc));
  return 0;
}

}  // namespace

Verb add_blob(CLI::App& app) {
  auto f = std::make_shared<BlobFlags>();
  CLI::App* cmd = app.add_subcommand("blob", "Large payloads by their SHA-256: put a file, get it back verified");
  cmd->require_subcommand(1);
  CLI::App* put = cmd->add_subcommand("put", "Store a file; prints its SHA-256 (a blob stored before is not sent again)");
  put->add_option("file", f->file, "The file")->required();
  CLI::App* get = cmd->add_subcommand("get", "Write a blob, checked against its SHA-256 (exit 4 blob_missing when it is not stored)");
  get->add_option("sha256", f->sha, "Its SHA-256 (64 hex digits)")->required()->check(validator_of([](const std::string& v) { swarm::require_sha256(v); }, "SHA"));
  get->add_option("-o,--output", f->out, "Write it to FILE (replaced only once it is whole and verified; default: "
                                          "stdout, and with --json its text, at most 1 MiB of UTF-8, in swarm.blob.v1)")
      ->option_text("FILE");
  cmd->footer(
      "Examples:\n"
      "  sha=$(swarm blob put build.log)\n"
      "  swarm blob get \"$sha\" -o build.log\n"
      "`swarm send --file F` stores F as a blob and sends a message that names it.");
  return {cmd, [f, put, get](Context& ctx) {
            if (put->parsed()) return run_put(ctx, *f);
            if (get->parsed()) return run_get(ctx, *f);
            return 2;
          }};
}

}  // namespace cli
