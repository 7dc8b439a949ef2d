#include "dist/shm_all_reduce.h"

#ifdef SLIMKV_HAVE_MPI
#include <immintrin.h>
#include <sched.h>

#include <atomic>
#include <cstring>

#include "core/check.h"

namespace slimkv {

struct ShmAllReduce::Header {  // in rank 0's part of the window, 64-byte aligned
  alignas(64) std::atomic<int64_t> arrived{0};
  alignas(64) std::atomic<int64_t> generation{0};
};

ShmAllReduce::ShmAllReduce(MPI_Comm comm, int64_t capacity_floats, std::function<void(bool)> wait_hook)
    : capacity_floats_(capacity_floats), wait_hook_(std::move(wait_hook)) {
  MPI_Comm_rank(comm, &rank_);
  MPI_Comm_size(comm, &ranks_);
  const MPI_Aint bytes = rank_ == 0 ? static_cast<MPI_Aint>(sizeof(Header) + 2 * static_cast<size_t>(ranks_) *
                                                            static_cast<size_t>(capacity_floats) * sizeof(float))
                                    : 0;
  void* base = nullptr;
  SLIMKV_CHECK(MPI_Win_allocate_shared(bytes, 64, MPI_INFO_NULL, comm, &base, &win_) == MPI_SUCCESS,
               "MPI: MPI_Win_allocate_shared of {} bytes failed", static_cast<int64_t>(bytes));
  MPI_Aint size = 0;
  int disp = 0;
  MPI_Win_shared_query(win_, 0, &size, &disp, &base);
  header_ = static_cast<Header*>(base);
  slots_ = reinterpret_cast<float*>(static_cast<char*>(base) + sizeof(Header));
  if (rank_ == 0) new (header_) Header();
  MPI_Barrier(comm);  // the header is set before anyone uses it
}

ShmAllReduce::~ShmAllReduce() {
  if (win_ != MPI_WIN_NULL) MPI_Win_free(&win_);
}

float* ShmAllReduce::slot(int64_t set, int32_t rank) const {
  return slots_ + (set * ranks_ + rank) * capacity_floats_;
}

// A central barrier: the last to arrive resets the count and opens the next generation.
void ShmAllReduce::barrier() {
  const int64_t gen = calls_;
  if (header_->arrived.fetch_add(1) == ranks_ - 1) {
    header_->arrived.store(0);
    header_->generation.store(gen + 1);
    return;
  }
  wait_hook_(true);
  for (int spins = 0; header_->generation.load() <= gen; ++spins) {
    if (spins < 2000) {
      _mm_pause();
    } else {
      sched_yield();  // more ranks than cores: let the others run
    }
  }
  wait_hook_(false);
}

void ShmAllReduce::all_reduce_sum(float* x, int64_t n) {
  SLIMKV_CHECK(fits(n), "shared-memory all-reduce: {} floats above the slots' {}", n, capacity_floats_);
  const int64_t set = calls_ % 2;
  std::memcpy(slot(set, rank_), x, static_cast<size_t>(n) * sizeof(float));
  barrier();
  ++calls_;
  const float* first = slot(set, 0);
  std::memcpy(x, first, static_cast<size_t>(n) * sizeof(float));
  for (int32_t r = 1; r < ranks_; ++r) {  // rank order: every rank adds alike
    const float* s = slot(set, r);
    for (int64_t i = 0; i < n; ++i) x[i] += s[i];
  }
}

}  // namespace slimkv
#endif
