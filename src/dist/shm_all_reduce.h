// The same-host fast path for all-reduce (issue S): ranks that share a machine sum through one MPI-3 shared-memory
// window (MPI_Win_allocate_shared) — each rank copies its buffer into its slot, one barrier on a counter in the
// window, then every rank sums the slots in rank order (the same result on every rank). Two slot sets alternate, so
// one barrier per call suffices. Built only with MPI. Must not know: models (it sums floats).
#pragma once
#include <cstdint>
#include <functional>

#ifdef SLIMKV_HAVE_MPI
#include <mpi.h>

namespace slimkv {

class ShmAllReduce {
 public:
  // Collective over `comm` (every rank on one host). Slots hold up to capacity_floats each. `wait_hook(true)` is
  // called before a barrier wait, `wait_hook(false)` after (the collective watchdog).
  ShmAllReduce(MPI_Comm comm, int64_t capacity_floats, std::function<void(bool)> wait_hook);
  ~ShmAllReduce();
  ShmAllReduce(const ShmAllReduce&) = delete;
  ShmAllReduce& operator=(const ShmAllReduce&) = delete;

  bool fits(int64_t n) const { return n <= capacity_floats_; }
  void all_reduce_sum(float* x, int64_t n);  // x = the sum of every rank's x, on every rank

 private:
  struct Header;
  float* slot(int64_t set, int32_t rank) const;
  void barrier();

  MPI_Win win_ = MPI_WIN_NULL;
  Header* header_ = nullptr;
  float* slots_ = nullptr;  // [2][ranks][capacity_floats]
  int32_t rank_ = 0, ranks_ = 1;
  int64_t capacity_floats_ = 0, calls_ = 0;
  std::function<void(bool)> wait_hook_;
};

}  // namespace slimkv
#endif
