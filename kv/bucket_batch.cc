// Several writes to one bucket as one commit: nats-server 2.12's atomic
// batch publish (adr/0055). Every message of the batch carries its id and
// its place in it; the last one commits, and only it is answered. The server
// checks every message's condition at the commit and then stores them all,
// or none; a batch lost on the way (a leader change) stores nothing either.
#include <cJSON.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <memory>
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
constexpr int kTooManyBatchesErr = 10210;  // the stream's batches in flight: for a while
// The stream does not take batches (its config changed): none was stored.
constexpr int kAtomicDisabledErr = 10174;

// What the commit's answer says of the batch: its id and how many it stored.
struct BatchAck {
  std::string id;
  std::size_t count = 0;
};

BatchAck batch_ack_of(natsMsg* answer) {
  BatchAck out;
  const char* data = natsMsg_GetData(answer);
  std::unique_ptr<cJSON, CFree<cJSON_Delete>> doc(
      cJSON_ParseWithLength(data ? data : "", static_cast<std::size_t>(natsMsg_GetDataLength(answer))));
  const cJSON* batch = cJSON_GetObjectItemCaseSensitive(doc.get(), "batch");
  const cJSON* count = cJSON_GetObjectItemCaseSensitive(doc.get(), "count");
  if (cJSON_IsString(batch)) out.id = batch->valuestring;
  if (cJSON_IsNumber(count) && count->valuedouble > 0) out.count = static_cast<std::size_t>(count->valuedouble);
  return out;
}

// Unique among this machine's batches (the server keeps them apart by id).
std::string new_batch_id() {
  static std::atomic<std::uint64_t> made{0};
  const auto now = std::chrono::steady_clock::now().time_since_epoch().count();
  return "swarm-" + std::to_string(::getpid()) + "-" + std::to_string(now) + "-" + std::to_string(++made);
}

// Before anything is sent: writes one commit can take.
void require_committable(const std::string& bucket, const std::vector<Bucket::Commit>& writes, const std::string& what) {
  if (writes.size() > kMostInBatch)
    throw Error(Errc::bad_request, what + ": at most " + std::to_string(kMostInBatch) + " go in one commit");
  std::set<std::string_view> keys;
  for (const auto& w : writes) {
    require_valid_key(bucket, w.key);
    if (!keys.insert(w.key).second) throw Error(Errc::bad_request, what + ": key " + w.key + " comes twice");
    if (w.revision && *w.revision == 0)
      throw Error(Errc::bad_request, what + ": revision 0 is not a revision (key " + w.key + ")");
  }
}

// Sends the batch `id`: every write in `order` on its subject under
// `prefix`, the last one as the commit, whose answer lands in `answer`
// (waited for as long as `attempts` has left once the rest are sent).
natsStatus send_batch(natsConnection* nc, const std::string& prefix, const std::vector<Bucket::Commit>& writes,
                      const std::vector<std::size_t>& order, const std::string& id, detail::Attempts& attempts,
                      natsMsg** answer) {
  natsStatus status = NATS_OK;
  for (std::size_t j = 0; j < order.size() && status == NATS_OK; ++j) {
    const Bucket::Commit& w = writes[order[j]];
    const std::string subject = prefix + w.key;
    natsMsg* raw = nullptr;
    status = natsMsg_Create(&raw, subject.c_str(), nullptr, w.value.data(), static_cast<int>(w.value.size()));
    if (status != NATS_OK) break;
    detail::MsgPtr msg(raw);
    const std::string sequence = std::to_string(j + 1);
    status = natsMsgHeader_Set(raw, kBatchId, id.c_str());
    if (status == NATS_OK) status = natsMsgHeader_Set(raw, kBatchSequence, sequence.c_str());
    if (status == NATS_OK && w.erase) status = natsMsgHeader_Set(raw, detail::kOperationHeader, "DEL");
    if (status == NATS_OK && w.revision)
      status = natsMsgHeader_Set(raw, kExpectedRevision, std::to_string(*w.revision).c_str());
    if (status != NATS_OK) break;
    if (j + 1 < order.size()) {
      status = natsConnection_PublishMsg(nc, raw);
    } else {
      status = natsMsgHeader_Set(raw, kBatchCommit, "1");
      if (status == NATS_OK) status = natsConnection_RequestMsg(answer, nc, raw, attempts.wait().count());
    }
  }
  return status;
}

// The order the writes are sent in. The first conditioned write (`anchor`)
// goes last, as the commit: its answer is its own CAS's, and after a lost
// answer it alone tells whether all landed.
std::vector<std::size_t> commit_order(const std::vector<Bucket::Commit>& writes, std::optional<std::size_t>& anchor) {
  std::vector<std::size_t> order;
  for (std::size_t i = 0; i < writes.size(); ++i)
    if (!anchor && writes[i].revision) anchor = i;
    else order.push_back(i);
  if (anchor) order.push_back(*anchor);
  return order;
}

// Each write's revision (by its place in the request) from the commit's:
// they were stored one after another, in `order`.
std::vector<std::uint64_t> revisions_in_order(const std::vector<std::size_t>& order, std::uint64_t last) {
  std::vector<std::uint64_t> out(order.size());
  for (std::size_t j = 0; j < order.size(); ++j) out[order[j]] = last - (order.size() - 1 - j);
  return out;
}

// A conflict that says a new stream leader has not caught up with what it
// acknowledged: said of the commit's own write only when it is the one condition.
bool leader_behind(const std::vector<Bucket::Commit>& writes, std::size_t last, const Error& e) {
  const auto conditions =
      std::count_if(writes.begin(), writes.end(), [](const Bucket::Commit& w) { return w.revision.has_value(); });
  return conditions == 1 && writes[last].revision && e.current_revision() != 0 &&
         e.current_revision() < *writes[last].revision;
}

}  // namespace

// No condition: every key holding what this wrote says it landed.
std::optional<std::vector<std::uint64_t>> Bucket::all_landed(const std::vector<Commit>& writes) const {
  std::vector<std::uint64_t> revisions;
  for (const auto& w : writes) {
    bool deleted = false;
    auto revision = landed(latest(w.key, &deleted), deleted, w.value, w.erase);
    if (!revision) return std::nullopt;
    revisions.push_back(*revision);
  }
  return revisions;
}

// size: one send-and-retry loop, whose state (attempts, a send that may have landed) each branch shares.
std::optional<std::vector<std::uint64_t>> Bucket::commit_together(const std::vector<Commit>& writes) const {
  std::string what = "commit " + std::to_string(writes.size()) + " writes to " + where(name_);
  if (writes.empty()) return std::vector<std::uint64_t>{};
  require_committable(name_, writes, what);
  if (!commits_atomically()) return std::nullopt;
  std::optional<std::size_t> anchor;
  const std::vector<std::size_t> order = commit_order(writes, anchor);
  if (anchor) {
    what += " (key " + writes[*anchor].key + " at revision " + std::to_string(*writes[*anchor].revision) + ")";
  }
  auto revisions_from = [&](std::uint64_t last) { return revisions_in_order(order, last); };
  // After an answer lost: the revision at which the batch landed, if it did.
  auto landed_at = [&](const Bucket& rest) -> std::optional<std::uint64_t> {
    const std::size_t last = order.back();
    bool deleted = false;
    auto revision = landed(rest.latest(writes[last].key, &deleted), deleted, writes[last].value, writes[last].erase);
    if (!revision || (writes[last].revision && *revision <= *writes[last].revision)) return std::nullopt;
    return revision;
  };
  natsConnection* nc = state_->connection->connection.get();
  detail::Attempts attempts(*state_->connection, budget_);
  bool maybe_landed = false;  // an earlier send got no answer
  while (true) {
    const std::string id = new_batch_id();
    natsMsg* answer = nullptr;
    const natsStatus status = send_batch(nc, state_->prefix, writes, order, id, attempts, &answer);
    detail::MsgPtr owned(answer);
    if (status == NATS_OK) {
      int code = 0;
      Bucket::WriteResult r = detail::read_pub_ack(answer, what, &code);
      if (!r.error) {
        const BatchAck ack = batch_ack_of(answer);
        if (ack.id == id && ack.count == order.size()) return revisions_from(r.revision);
        // Not a batch (a stream leader before 2.12): each write was stored
        // as it came; the last, the conditioned one, is the answer's.
        state_->atomic = 0;
        std::vector<std::uint64_t> alone(writes.size(), 0);
        alone[order.back()] = r.revision;
        return alone;
      }
      if (code == kAtomicDisabledErr) {
        state_->atomic = 0;  // the stream's config changed: nothing was stored
        return std::nullopt;
      }
      if (r.error->kind() == Errc::conflict) {
        if (maybe_landed)
          if (auto at = landed_at(with_budget(attempts.left()))) return revisions_from(*at);
        if (leader_behind(writes, order.back(), *r.error)) {
          Error behind(Errc::unavailable, what + ": refused by a stream leader still catching up; try again");
          if (!attempts.again_after(behind)) throw behind;
          continue;
        }
        throw *r.error;
      }
      if (code == kIncompleteErr || code == kSubjectBusyErr || code == kTooManyBatchesErr) {
        Error again(Errc::unavailable, what + ": " + std::string(r.error->what()) + "; try again");
        if (!attempts.again_after(again)) throw again;
        continue;
      }
      if (!attempts.again_after(*r.error)) throw *r.error;
      continue;
    }
    // No answer: it committed or not, whole either way.
    maybe_landed = true;
    try {
      const Bucket rest = with_budget(attempts.left());
      if (anchor) {
        if (auto at = landed_at(rest)) return revisions_from(*at);
      } else if (auto revisions = rest.all_landed(writes)) {
        return revisions;
      }
    } catch (const Error&) {
      // Not read: sent again below (a condition keeps it from landing twice).
    }
    Error lost(Errc::unavailable, what + ": " + natsStatus_GetText(status));
    if (!attempts.again_after(lost)) throw lost;
  }
}

}  // namespace kv
