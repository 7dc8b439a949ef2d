#include "server/connection_threads.h"

#include <thread>

namespace slimkv {

void ConnectionThreads::enqueue(std::function<void()> fn) {
  {
    std::unique_lock<std::mutex> lock(mu_);
    cv_.wait(lock, [&] { return active_ < max_; });
    ++active_;
  }
  std::thread([this, fn = std::move(fn)] {
    fn();  // the library's closure: serves the connection's requests, then closes its socket
    std::lock_guard<std::mutex> lock(mu_);
    --active_;
    cv_.notify_all();  // under the lock: shutdown() may destroy this object as soon as it sees 0
  }).detach();
}

void ConnectionThreads::shutdown() {
  std::unique_lock<std::mutex> lock(mu_);
  cv_.wait(lock, [&] { return active_ == 0; });
}

}  // namespace slimkv
