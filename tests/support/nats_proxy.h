// A TCP proxy on 127.0.0.1 between NATS clients and one server that can hold
// what a client sends, or what it is answered, from a chosen message on, for
// a while: the shape of a read slower than a lease's TTL (a stalled route, a
// busy server, a leader change), or of a write whose acknowledgement was
// lost, for one client only, while the server and every other client go on.
// Then everything held goes through in order, as TCP would have delivered it.
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

namespace testing {

class NatsProxy {
 public:
  explicit NatsProxy(int server_port);
  ~NatsProxy();
  NatsProxy(const NatsProxy&) = delete;
  NatsProxy& operator=(const NatsProxy&) = delete;

  int port() const { return port_; }
  std::string url() const { return "nats://127.0.0.1:" + std::to_string(port_); }

  // Which way a hold stops traffic: what the client sends (its request and
  // everything after it reach the server late), or what the server answers
  // (the request is served at once, but its answer and everything after it
  // reach the client late: a write that landed and whose acknowledgement was
  // lost, as far as the client can tell).
  enum class Hold { requests, answers };
  // Arms one hold: from the next message a client sends (PUB or HPUB) whose
  // subject or payload contains any of `needles`, traffic of that client's
  // connection in direction `what` is held for `hold`, then sent on in order.
  void hold_next(std::vector<std::string> needles, std::chrono::milliseconds hold, Hold what = Hold::requests);
  // How many holds have begun, and ended (everything held was sent on).
  int holds_begun() const { return begun_; }
  int holds_ended() const { return ended_; }
  // Waits up to `limit` for the armed hold to begin; false if it did not.
  bool wait_hold_begun(std::chrono::milliseconds limit);
  // The client messages the proxy has passed or held, each "VERB subject"
  // (for a test that looks for what to hold).
  std::vector<std::string> seen() const;

 private:
  struct Link;
  void accept_loop();
  void serve(std::shared_ptr<Link> link);

  int server_port_;
  int listen_fd_ = -1;
  int port_ = 0;
  std::atomic<bool> stopping_{false};
  std::thread acceptor_;
  mutable std::mutex mu_;
  std::condition_variable changed_;
  std::vector<std::string> needles_;  // armed hold (empty: none)
  std::chrono::milliseconds hold_{0};
  Hold what_ = Hold::requests;
  std::atomic<int> begun_{0};
  std::atomic<int> ended_{0};
  std::vector<std::string> seen_;
  std::vector<std::shared_ptr<Link>> links_;
  std::vector<std::thread> workers_;
};

}  // namespace testing
