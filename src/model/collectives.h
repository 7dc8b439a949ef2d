// The collectives a tensor-parallel shard of a model needs, behind one interface: CpuOps calls it where a row-split
// projection's partial sums meet. One process has none (Model::collectives is null); src/dist implements it over
// MPI. Must not know: MPI, models or blocks.
#pragma once
#include <cstdint>
#include <vector>

namespace slimkv {

// What one rank's collectives moved and how long they took (profile / doctor read it).
struct CollectiveStats {
  int64_t all_reduce_calls = 0;
  int64_t all_reduce_bytes = 0;  // this rank's buffer bytes per call, summed
  double all_reduce_ms = 0;
  int64_t broadcast_calls = 0;
  int64_t broadcast_bytes = 0;
  int64_t all_gather_calls = 0;
  int64_t all_gather_bytes = 0;  // received: every rank's slice
  int64_t all_to_all_calls = 0;  // sum_rows: the sparse expert combine
  int64_t all_to_all_bytes = 0;  // rows and their indices this rank sent to the rows' owners
  double all_to_all_ms = 0;      // the exchange and the all-gather after it
};

// Rank k of `ranks` owns rows [owned_first_row(rows, ranks, k), owned_first_row(rows, ranks, k + 1)) in sum_rows.
inline int64_t owned_first_row(int64_t rows, int32_t ranks, int32_t k) { return rows * k / ranks; }

class Collectives {
 public:
  virtual ~Collectives() = default;
  virtual int32_t rank() const = 0;
  virtual int32_t size() const = 0;
  virtual void all_reduce_sum(float* x, int64_t n) = 0;  // x = the sum of every rank's x (n floats), on every rank
  virtual void all_reduce_sum(double* x, int64_t n) = 0;  // the same in double (attention importance)
  // Rank 0's bytes to every rank (the others' `bytes` are replaced). `idle`: a wait that may be long by design (a
  // follower waiting for the next step) — polled without spinning, and exempt from any collective timeout.
  virtual void broadcast(std::vector<uint8_t>& bytes, bool idle) = 0;
  // out [size(), n] = every rank's x [n], in rank order, on every rank.
  virtual void all_gather(const float* x, int64_t n, float* out) = 0;
  // x [rows, row_len] = the sum of every rank's x, on every rank, where a rank's rows with present[r] == 0 are zero
  // and not sent: each row has an owner rank (owned_first_row); every rank sends its present rows to
  // their owners (MPI_Alltoallv), owners add them in rank order, then every rank gathers the owned ranges
  // (MPI_Allgatherv). The expert combine where a token reaches few ranks' experts.
  virtual void sum_rows(float* x, int64_t rows, int64_t row_len, const uint8_t* present) = 0;
  virtual const CollectiveStats& stats() const = 0;
};

}  // namespace slimkv
