// A small spinning thread pool for the forward pass: parallel_for over [0, n) split into contiguous chunks.
// Workers spin briefly then sleep, so a decode step on a tiny model pays no futex round-trip per matmul.
// Owns: the worker threads. Must not know: what the work is.
#pragma once
#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <mutex>
#include <thread>
#include <vector>

namespace slimkv {

class ThreadPool {
 public:
  explicit ThreadPool(int32_t num_threads);  // num_threads >= 1 (the caller counts as one)
  ~ThreadPool();
  ThreadPool(const ThreadPool&) = delete;
  ThreadPool& operator=(const ThreadPool&) = delete;

  int32_t num_threads() const { return num_threads_; }
  // Calls fn(begin, end, thread_index) on disjoint chunks covering [0, n); returns when all are done.
  // Chunks are multiples of `grain` (except the last). Runs inline when n is small or there is one thread.
  void parallel_for(int64_t n, int64_t grain, const std::function<void(int64_t, int64_t, int32_t)>& fn);

 private:
  void worker_loop(int32_t index);
  void run_chunks(int32_t index);  // takes chunks of the current job until none is left
  static constexpr int64_t kChunksPerThread = 4;

  int32_t num_threads_;
  std::vector<std::thread> workers_;
  const std::function<void(int64_t, int64_t, int32_t)>* job_ = nullptr;
  int64_t job_n_ = 0, job_chunk_ = 0, job_chunks_ = 0;
  std::atomic<int64_t> job_next_{0};  // next chunk to take (threads take chunks until none is left)
  std::atomic<uint64_t> generation_{0};
  std::atomic<int32_t> pending_{0};
  std::atomic<bool> stop_{false};
  std::mutex mu_;
  std::condition_variable cv_;
  std::atomic<int32_t> sleepers_{0};
};

int32_t default_num_threads();  // number of online cores

}  // namespace slimkv
