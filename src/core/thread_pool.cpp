#include "core/thread_pool.h"

#include <immintrin.h>
#include <unistd.h>

#include "core/check.h"

namespace slimkv {

int32_t default_num_threads() {
  long n = ::sysconf(_SC_NPROCESSORS_ONLN);
  return n > 0 ? static_cast<int32_t>(n) : 1;
}

ThreadPool::ThreadPool(int32_t num_threads) : num_threads_(num_threads) {
  SLIMKV_CHECK(num_threads >= 1 && num_threads <= 1024, "--threads must be in 1..1024 (got {})", num_threads);
  for (int32_t i = 1; i < num_threads; ++i) workers_.emplace_back([this, i] { worker_loop(i); });
}

ThreadPool::~ThreadPool() {
  stop_.store(true);
  {
    std::lock_guard<std::mutex> lock(mu_);
    generation_.fetch_add(1);
  }
  cv_.notify_all();
  for (auto& t : workers_) t.join();
}

void ThreadPool::worker_loop(int32_t index) {
  uint64_t seen = 0;
  for (;;) {
    // Spin for a while (decode steps come back-to-back), then sleep on the condition variable.
    int spins = 0;
    while (generation_.load(std::memory_order_acquire) == seen) {
      if (++spins < 20000) {
        _mm_pause();
      } else {
        std::unique_lock<std::mutex> lock(mu_);
        sleepers_.fetch_add(1);
        cv_.wait(lock, [&] { return generation_.load() != seen; });
        sleepers_.fetch_sub(1);
      }
    }
    seen = generation_.load(std::memory_order_acquire);
    if (stop_.load()) return;
    run_chunks(index);
    pending_.fetch_sub(1, std::memory_order_acq_rel);
  }
}

void ThreadPool::run_chunks(int32_t index) {
  for (int64_t c = job_next_.fetch_add(1, std::memory_order_relaxed); c < job_chunks_;
       c = job_next_.fetch_add(1, std::memory_order_relaxed)) {
    const int64_t begin = c * job_chunk_, end = std::min(job_n_, begin + job_chunk_);
    if (begin < end) (*job_)(begin, end, index);
  }
}

void ThreadPool::parallel_for(int64_t n, int64_t grain, const std::function<void(int64_t, int64_t, int32_t)>& fn) {
  if (n <= 0) return;
  grain = std::max<int64_t>(grain, 1);
  int64_t max_chunks = (n + grain - 1) / grain;
  if (num_threads_ == 1 || max_chunks <= 1) {
    fn(0, n, 0);
    return;
  }
  // A few chunks per thread, taken first come first served: a thread slowed down (a shared VM's other tenants)
  // leaves its remaining chunks to the others instead of holding everyone at the barrier.
  const int64_t chunks = std::min<int64_t>(static_cast<int64_t>(num_threads_) * kChunksPerThread, max_chunks);
  const int64_t chunk = (max_chunks + chunks - 1) / chunks * grain;
  job_ = &fn;
  job_n_ = n;
  job_chunk_ = chunk;
  job_chunks_ = (n + chunk - 1) / chunk;
  job_next_.store(0, std::memory_order_relaxed);
  pending_.store(num_threads_ - 1, std::memory_order_release);
  {
    std::lock_guard<std::mutex> lock(mu_);
    generation_.fetch_add(1, std::memory_order_acq_rel);
  }
  if (sleepers_.load() > 0) cv_.notify_all();
  run_chunks(0);
  while (pending_.load(std::memory_order_acquire) > 0) _mm_pause();
}

}  // namespace slimkv
