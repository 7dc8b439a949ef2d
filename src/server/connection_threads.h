// The HTTP server's task queue: every accepted connection runs on a thread of its own, up to max_connections at
// once (then the accept loop waits for one to end). A fixed pool let a few hundred idle or slow (slowloris) clients
// hold every handler thread, so /health and /metrics stopped answering; now such clients hold only their own threads.
// Must not know: HTTP (it runs the library's per-connection closures).
#pragma once
#include <httplib.h>

#include <condition_variable>
#include <cstdint>
#include <functional>
#include <mutex>

namespace slimkv {

class ConnectionThreads : public httplib::TaskQueue {
 public:
  explicit ConnectionThreads(int32_t max_connections) : max_(max_connections) {}
  ~ConnectionThreads() override { shutdown(); }

  void enqueue(std::function<void()> fn) override;
  void shutdown() override;  // waits until every connection thread has returned

 private:
  const int32_t max_;
  std::mutex mu_;
  std::condition_variable cv_;
  int32_t active_ = 0;
};

}  // namespace slimkv
