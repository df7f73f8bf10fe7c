// Core NATS subscriptions used only as a doorbell: any message published on
// one of its subjects (a stream's included) rings it, and a reader then
// reads the stream itself. Nothing is read from the bell: a ring may come
// before the stream has stored the message, or be missed by a slow reader,
// so a reader treats it as "look again", never as the message.
#pragma once

#include <chrono>
#include <memory>
#include <string>
#include <vector>

#include "kv/connection.h"

namespace kv {

class Doorbell {
 public:
  // Subscribes to each subject and waits until the server has them all
  // (a flush), so a publish after this returns rings it.
  Doorbell(const Connection& connection, const std::vector<std::string>& subjects);
  Doorbell(Doorbell&&) noexcept;
  Doorbell& operator=(Doorbell&&) noexcept;
  ~Doorbell();

  // Whether it rang since the last call, waiting up to `timeout` for a ring.
  bool wait(std::chrono::milliseconds timeout);

  struct Impl;

 private:
  std::unique_ptr<Impl> impl_;
};

}  // namespace kv
