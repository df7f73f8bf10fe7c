// Several writes to one bucket as one commit: nats-server 2.12's atomic
// batch publish (adr/0055). Every message of the batch carries its id and
// its place in it; the last one commits, and only it is answered. The server
// checks every message's condition at the commit and then stores them all,
// or none; a batch lost on the way (a leader change) stores nothing either.
#include <cJSON.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <set>
#include <string>

#include "kv/bucket.h"
#include "kv/bucket_state.h"
#include "kv/c_handle.h"
#include "kv/retry.h"

namespace kv {

namespace {

constexpr const char* kBatchId = "Nats-Batch-Id";
constexpr const char* kBatchSequence = "Nats-Batch-Sequence";
constexpr const char* kBatchCommit = "Nats-Batch-Commit";
constexpr const char* kExpectedRevision = "Nats-Expected-Last-Subject-Sequence";
// The server's most messages in one batch.
constexpr std::size_t kMostInBatch = 1000;
// JetStream's answers that store nothing and may pass when sent again: a
// batch that arrived incomplete (a leader change on the way), or a subject
// another proposal in flight holds.
constexpr int kIncompleteErr = 10176;
constexpr int kSubjectBusyErr = 10164;

// Unique among this machine's batches (the server keeps them apart by id).
std::string new_batch_id() {
  static std::atomic<std::uint64_t> made{0};
  const auto now = std::chrono::steady_clock::now().time_since_epoch().count();
  return "swarm-" + std::to_string(::getpid()) + "-" + std::to_string(now) + "-" + std::to_string(++made);
}

}  // namespace

std::optional<std::vector<std::uint64_t>> Bucket::commit_together(const std::vector<Commit>& writes) const {
  const std::string what = "commit " + std::to_string(writes.size()) + " writes to " + where(name_);
  if (writes.empty()) return std::vector<std::uint64_t>{};
  if (writes.size() > kMostInBatch)
    throw Error(Errc::bad_request, what + ": at most " + std::to_string(kMostInBatch) + " go in one commit");
  std::set<std::string_view> keys;
  for (const auto& w : writes) {
    require_valid_key(name_, w.key);
    if (!keys.insert(w.key).second) throw Error(Errc::bad_request, what + ": key " + w.key + " comes twice");
    if (w.revision && *w.revision == 0)
      throw Error(Errc::bad_request, what + ": revision 0 is not a revision (key " + w.key + ")");
  }
  if (!commits_atomically()) return std::nullopt;
  natsConnection* nc = state_->connection->connection.get();
  detail::Attempts attempts(*state_->connection, budget_);
  while (true) {
    const std::string id = new_batch_id();
    natsMsg* answer = nullptr;
    natsStatus status = NATS_OK;
    for (std::size_t i = 0; i < writes.size() && status == NATS_OK; ++i) {
      const Commit& w = writes[i];
      const std::string subject = state_->prefix + w.key;
      natsMsg* raw = nullptr;
      status = natsMsg_Create(&raw, subject.c_str(), nullptr, w.value.data(), static_cast<int>(w.value.size()));
      if (status != NATS_OK) break;
      detail::MsgPtr msg(raw);
      const std::string sequence = std::to_string(i + 1);
      status = natsMsgHeader_Set(raw, kBatchId, id.c_str());
      if (status == NATS_OK) status = natsMsgHeader_Set(raw, kBatchSequence, sequence.c_str());
      if (status == NATS_OK && w.erase) status = natsMsgHeader_Set(raw, detail::kOperationHeader, "DEL");
      if (status == NATS_OK && w.revision)
        status = natsMsgHeader_Set(raw, kExpectedRevision, std::to_string(*w.revision).c_str());
      if (status != NATS_OK) break;
      if (i + 1 < writes.size()) {
        status = natsConnection_PublishMsg(nc, raw);
      } else {
        status = natsMsgHeader_Set(raw, kBatchCommit, "1");
        if (status == NATS_OK) status = natsConnection_RequestMsg(&answer, nc, raw, attempts.wait().count());
      }
    }
    detail::MsgPtr owned(answer);
    if (status == NATS_OK) {
      int code = 0;
      Bucket::WriteResult r = detail::read_pub_ack(answer, what, &code);
      // Stored one after another: the last is the answer's sequence.
      if (!r.error) {
        std::vector<std::uint64_t> revisions(writes.size());
        for (std::size_t i = 0; i < writes.size(); ++i) revisions[i] = r.revision - (writes.size() - 1 - i);
        return revisions;
      }
      if (code == kIncompleteErr || code == kSubjectBusyErr) {
        Error again(Errc::unavailable, what + ": the batch did not arrive whole; try again");
        if (!attempts.again_after(again)) throw again;
        continue;
      }
      if (!attempts.again_after(*r.error)) throw *r.error;
      continue;
    }
    // No answer: it committed or not, whole either way. Every key holding
    // what this wrote says it did (a key another writer moved since makes
    // it look lost, and then a retry's condition refuses it).
    std::vector<std::uint64_t> revisions;
    const Bucket rest = with_budget(attempts.left());
    try {
      for (const auto& w : writes) {
        bool deleted = false;
        auto last = rest.latest(w.key, &deleted);
        auto revision = landed(last, deleted, w.value, w.erase);
        if (!revision || (w.revision && *revision <= *w.revision)) break;
        revisions.push_back(*revision);
      }
    } catch (const Error&) {
      revisions.clear();  // not read: sent again below (its conditions keep it from landing twice)
    }
    if (revisions.size() == writes.size()) return revisions;
    Error lost(Errc::unavailable, what + ": " + natsStatus_GetText(status));
    if (!attempts.again_after(lost)) throw lost;
  }
}

}  // namespace kv
