// The HTTP front's handler threads: each complete request runs on a thread of its own, up to max_threads at once;
// more wait in arrival order. Threads are made when needed and end after idling, so a quiet server holds none.
// Must not know: HTTP (it runs closures).
#pragma once
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <functional>
#include <mutex>

namespace slimkv {

class HandlerThreads {
 public:
  explicit HandlerThreads(int32_t max_threads) : max_(max_threads) {}
  ~HandlerThreads() { shutdown(); }
  HandlerThreads(const HandlerThreads&) = delete;
  HandlerThreads& operator=(const HandlerThreads&) = delete;

  void submit(std::function<void()> fn);
  // Runs what is queued, then waits until every thread has returned; later submits run on the caller's thread.
  void shutdown();
  int32_t busy() const;

 private:
  void loop();

  const int32_t max_;
  mutable std::mutex mu_;
  std::condition_variable cv_, done_cv_;
  std::deque<std::function<void()>> queue_;
  int32_t threads_ = 0, idle_ = 0, busy_ = 0;
  bool stopping_ = false;
};

}  // namespace slimkv
