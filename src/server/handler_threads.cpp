#include "server/handler_threads.h"

#include <chrono>
#include <cstdio>
#include <system_error>
#include <thread>

namespace slimkv {

void HandlerThreads::submit(std::function<void()> fn) {
  std::unique_lock<std::mutex> lock(mu_);
  if (stopping_) {
    lock.unlock();
    fn();
    return;
  }
  queue_.push_back(std::move(fn));
  // An idle thread is woken only for a task no other woken thread will take: a thread woken but not yet running
  // still counts as idle, so compare the queue with the idle threads (else a second task could wait behind a long
  // first one).
  if (static_cast<int32_t>(queue_.size()) <= idle_ || threads_ >= max_) {
    cv_.notify_one();
    return;
  }
  ++threads_;
  try {
    std::thread([this] { loop(); }).detach();
  } catch (const std::system_error&) {  // no thread to be had (the process's limit): a running one takes the task
    --threads_;
    if (threads_ > 0) return;
    queue_.pop_back();  // none runs: the caller answers for it
    throw;
  }
}

void HandlerThreads::loop() {
  std::unique_lock<std::mutex> lock(mu_);
  for (;;) {
    ++idle_;
    const bool woke = cv_.wait_for(lock, std::chrono::seconds(10), [this] { return !queue_.empty() || stopping_; });
    --idle_;
    if (queue_.empty() && (!woke || stopping_)) break;  // idle for 10 s, or stopping with nothing left
    if (queue_.empty()) continue;
    std::function<void()> fn = std::move(queue_.front());
    queue_.pop_front();
    ++busy_;
    lock.unlock();
    try {
      fn();
    } catch (const std::exception& e) {  // the front's tasks catch their own; this thread and the process stay
      std::fprintf(stderr, "slimkv serve: a request handler failed: %s\n", e.what());
    } catch (...) {
      std::fprintf(stderr, "slimkv serve: a request handler failed\n");
    }
    lock.lock();
    --busy_;
  }
  --threads_;
  done_cv_.notify_all();
}

void HandlerThreads::shutdown() {
  std::unique_lock<std::mutex> lock(mu_);
  stopping_ = true;
  cv_.notify_all();
  done_cv_.wait(lock, [this] { return threads_ == 0; });
}

int32_t HandlerThreads::busy() const {
  std::lock_guard<std::mutex> lock(mu_);
  return busy_;
}

}  // namespace slimkv
