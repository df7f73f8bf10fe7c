// A message's body as send and ask take it: TEXT..., '-' (standard input)
// or --file, checked against the blob limit before anything is sent, and
// stored as a blob when it is too long (or not text) for the message.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "swarm/base/safe_dir.h"
#include "swarm/bus/blobs.h"
#include "swarm/bus/message.h"

namespace cli {

// Where a body comes from: the words given, standard input (`text` is
// {"-"}: read from `input`), or a file.
struct BodySource {
  std::vector<std::string> text;
  std::string file;
  int input = 0;  // the caller's standard input
};

struct Body {
  std::string text;
  bool blob_from_fd = false;
  bool blob_from_text = false;
  swarm::UniqueFd fd;  // the file it is in (--file, or standard input kept)
  std::string name;    // the blob's name
  std::string shown;   // how errors name where it came from
};

// Whether the body is standard input: TEXT is the one word "-".
bool reads_standard_input(const std::vector<std::string>& text);

// The body, checked against `max` (the blob limit) before anything is
// sent; standard input too long for a message is kept in an unnamed file
// while it is read (never all in memory).
void read_body(const BodySource& from, std::uint64_t max, Body& body);
// Stores the body's blob, if it has one, before the message names it.
void store_blob(const swarm::Blobs& blobs, Body& body, swarm::Message& m);

// A regular file opened for reading (`shown` names it in errors, exit 2):
// without waiting (a FIFO would block the open until a writer came), and
// nothing but a regular file is taken. `size` gets its size.
swarm::UniqueFd open_regular_file(const std::string& path, const std::string& shown, std::uint64_t* size);

}  // namespace cli
