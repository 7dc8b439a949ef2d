#include "dist/mpi_world.h"

#include <unistd.h>

#include <atomic>
#include <chrono>
#include <climits>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <thread>

#include "core/check.h"
#include "dist/shm_all_reduce.h"

#ifdef SLIMKV_HAVE_MPI
#include <mpi.h>
#endif

namespace slimkv {

#ifdef SLIMKV_HAVE_MPI
namespace {

void check_mpi(int rc, const char* call) {
  if (rc == MPI_SUCCESS) return;
  char text[MPI_MAX_ERROR_STRING];
  int len = 0;
  MPI_Error_string(rc, text, &len);
  fail("MPI: {} failed: {}", call, std::string(text, static_cast<size_t>(len)));
}

double steady_s() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

// A collective that waits longer than SLIMKV_COLLECTIVE_TIMEOUT_S (default 120 s) means another rank hung or
// died without the runtime noticing: this rank says so on stderr and exits (no MPI call from the watchdog thread:
// the world is FUNNELED), and mpirun then ends every rank. Ranks run the same step, so a healthy wait is short.
class CollectiveWatchdog {
 public:
  explicit CollectiveWatchdog(int rank) : rank_(rank) {
    const char* env = std::getenv("SLIMKV_COLLECTIVE_TIMEOUT_S");
    if (env && std::atof(env) > 0) timeout_s_ = std::atof(env);
    thread_ = std::thread([this] { watch(); });
  }
  ~CollectiveWatchdog() {
    stop_ = true;
    thread_.join();
  }
  void enter(const char* what) {
    what_ = what;
    since_s_ = steady_s();
  }
  void leave() { since_s_ = 0; }

 private:
  void watch() {
    while (!stop_) {
      std::this_thread::sleep_for(std::chrono::milliseconds(100));
      const double since = since_s_;
      if (since > 0 && steady_s() - since > timeout_s_) {
        std::fprintf(stderr, "error: rank %d: %s waited %.0f s for the other ranks (SLIMKV_COLLECTIVE_TIMEOUT_S): one "
                     "of them hung or died; ending this rank so mpirun ends the job\n", rank_, what_.load(),
                     steady_s() - since);
        std::fflush(stderr);
        ::_exit(3);
      }
    }
  }
  int rank_;
  double timeout_s_ = 120;
  std::atomic<double> since_s_{0};
  std::atomic<const char*> what_{""};
  std::atomic<bool> stop_{false};
  std::thread thread_;
};

class MpiCollectives : public Collectives {
 public:
  explicit MpiCollectives(bool serialized) {
    int provided = 0;
    const int level = serialized ? MPI_THREAD_SERIALIZED : MPI_THREAD_FUNNELED;
    check_mpi(MPI_Init_thread(nullptr, nullptr, level, &provided), "MPI_Init_thread");
    SLIMKV_CHECK(provided >= level, "MPI: the library gives thread level {}, below the {} asked for", provided, level);
    comm_ = MPI_COMM_WORLD;
    check_mpi(MPI_Comm_set_errhandler(comm_, MPI_ERRORS_RETURN), "MPI_Comm_set_errhandler");
    check_mpi(MPI_Comm_rank(comm_, &rank_), "MPI_Comm_rank");
    check_mpi(MPI_Comm_size(comm_, &size_), "MPI_Comm_size");
    stats_ = std::make_shared<CollectiveStats>();
    watchdog_ = std::make_shared<CollectiveWatchdog>(rank_);
    setup_shared_memory_path();
  }
  ~MpiCollectives() override {
    shm_.reset();  // its window before MPI_Finalize
    watchdog_.reset();
    int finalized = 0;
    MPI_Finalized(&finalized);
    if (!finalized) MPI_Finalize();
  }
  int32_t rank() const override { return rank_; }
  int32_t size() const override { return size_; }
  // The same-host path (dist/shm_all_reduce.h) when every rank shares this machine: measured (`bench all-reduce`,
  // docs/scale-out.md) slower than Open MPI's own shared-memory transport up to 32K floats and faster from 256K, so
  // by default it takes buffers of kShmMinFloats and more (prefill chunks); SLIMKV_ALL_REDUCE=mpi never, =shm
  // always. Its slots take 4 MiB per rank and set.
  static constexpr int64_t kShmMinFloats = 131072;
  void setup_shared_memory_path() {
    MPI_Comm node;
    check_mpi(MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, 0, MPI_INFO_NULL, &node), "MPI_Comm_split_type");
    int node_size = 0;
    MPI_Comm_size(node, &node_size);
    const char* env = std::getenv("SLIMKV_ALL_REDUCE");
    const std::string mode = env ? env : "auto";
    SLIMKV_CHECK(mode == "auto" || mode == "mpi" || mode == "shm", "SLIMKV_ALL_REDUCE={}: auto, mpi or shm", mode);
    const bool wanted = mode != "mpi";
    shm_min_floats_ = mode == "shm" ? 0 : kShmMinFloats;
    if (node_size == size_ && size_ > 1 && wanted) {  // every rank decides alike: same node size, same environment
      shm_ = std::make_unique<ShmAllReduce>(node, int64_t{1} << 20, [this](bool waiting) {
        if (waiting) {
          watchdog_->enter("the shared-memory all-reduce");
        } else {
          watchdog_->leave();
        }
      });
    }
    MPI_Comm_free(&node);
  }
  bool use_shm(bool on) {  // benchmarks: every call through one path, whatever its size
    const bool was = shm_min_floats_ == 0;
    shm_min_floats_ = on ? 0 : INT64_MAX;
    return was;
  }

  void all_reduce_sum(float* x, int64_t n) override {
    SLIMKV_CHECK(n >= 0 && n <= INT_MAX, "MPI: an all-reduce of {} floats", n);
    const auto t0 = std::chrono::steady_clock::now();
    if (shm_ && n >= shm_min_floats_ && shm_->fits(n)) {  // every rank has the same n: all take the same path
      shm_->all_reduce_sum(x, n);
    } else {
      watchdog_->enter("MPI_Allreduce");
      const int rc = MPI_Allreduce(MPI_IN_PLACE, x, static_cast<int>(n), MPI_FLOAT, MPI_SUM, comm_);
      watchdog_->leave();
      check_mpi(rc, "MPI_Allreduce");
    }
    stats_->all_reduce_ms += ms_since(t0);
    ++stats_->all_reduce_calls;
    stats_->all_reduce_bytes += n * static_cast<int64_t>(sizeof(float));
  }
  void all_reduce_sum(double* x, int64_t n) override {
    SLIMKV_CHECK(n >= 0 && n <= INT_MAX, "MPI: an all-reduce of {} doubles", n);
    const auto t0 = std::chrono::steady_clock::now();
    watchdog_->enter("MPI_Allreduce");
    const int rc = MPI_Allreduce(MPI_IN_PLACE, x, static_cast<int>(n), MPI_DOUBLE, MPI_SUM, comm_);
    watchdog_->leave();
    check_mpi(rc, "MPI_Allreduce");
    stats_->all_reduce_ms += ms_since(t0);
    ++stats_->all_reduce_calls;
    stats_->all_reduce_bytes += n * static_cast<int64_t>(sizeof(double));
  }
  void all_gather(const float* x, int64_t n, float* out) override {
    SLIMKV_CHECK(n >= 0 && n <= INT_MAX, "MPI: an all-gather of {} floats", n);
    watchdog_->enter("MPI_Allgather");
    const int rc = MPI_Allgather(x, static_cast<int>(n), MPI_FLOAT, out, static_cast<int>(n), MPI_FLOAT, comm_);
    watchdog_->leave();
    check_mpi(rc, "MPI_Allgather");
    ++stats_->all_gather_calls;
    stats_->all_gather_bytes += n * size_ * static_cast<int64_t>(sizeof(float));
  }
  void sum_rows(float* x, int64_t rows, int64_t row_len, const uint8_t* present) override;
  void broadcast(std::vector<uint8_t>& bytes, bool idle) override {
    int64_t n = static_cast<int64_t>(bytes.size());
    // The length first, nonblocking on every rank (a nonblocking collective matches only nonblocking ones): an
    // idle follower polls it without spinning — it may wait minutes between requests — the others wait on it.
    MPI_Request req;
    check_mpi(MPI_Ibcast(&n, 1, MPI_INT64_T, 0, comm_, &req), "MPI_Ibcast");
    if (idle) {
      for (int done = 0; !done;) {
        check_mpi(MPI_Test(&req, &done, MPI_STATUS_IGNORE), "MPI_Test");
        if (!done) std::this_thread::sleep_for(std::chrono::microseconds(200));
      }
    } else {
      watchdog_->enter("MPI_Ibcast");
      const int rc = MPI_Wait(&req, MPI_STATUS_IGNORE);
      watchdog_->leave();
      check_mpi(rc, "MPI_Wait");
    }
    SLIMKV_CHECK(n >= 0 && n <= INT_MAX, "MPI: a broadcast of {} bytes", n);
    bytes.resize(static_cast<size_t>(n));
    watchdog_->enter("MPI_Bcast");
    const int rc = MPI_Bcast(bytes.data(), static_cast<int>(n), MPI_BYTE, 0, comm_);
    watchdog_->leave();
    check_mpi(rc, "MPI_Bcast");
    ++stats_->broadcast_calls;
    stats_->broadcast_bytes += n;
  }
  const CollectiveStats& stats() const override { return *stats_; }

 private:
  static double ms_since(std::chrono::steady_clock::time_point t0) {
    return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
  }
  void checked(int rc, const char* call) {
    watchdog_->leave();
    check_mpi(rc, call);
  }
  MPI_Comm comm_ = MPI_COMM_NULL;
  int rank_ = 0, size_ = 1;
  std::shared_ptr<CollectiveStats> stats_;
  std::shared_ptr<CollectiveWatchdog> watchdog_;
  std::unique_ptr<ShmAllReduce> shm_;  // null: not every rank on this host, or SLIMKV_ALL_REDUCE=mpi
  int64_t shm_min_floats_ = kShmMinFloats;
  std::vector<float> send_rows_, recv_rows_;  // sum_rows scratch, reused
  std::vector<int32_t> send_ids_, recv_ids_;
};

void MpiCollectives::sum_rows(float* x, int64_t rows, int64_t row_len, const uint8_t* present) {
  SLIMKV_CHECK(rows >= 0 && row_len > 0 && rows * row_len <= INT_MAX, "MPI: sum_rows of {} x {}", rows, row_len);
  const auto t0 = std::chrono::steady_clock::now();
  std::vector<int> send_n(size_, 0), recv_n(size_, 0), send_off(size_ + 1, 0), recv_off(size_ + 1, 0);
  send_ids_.clear();
  send_rows_.clear();
  for (int32_t k = 0; k < size_; ++k) {  // present rows owned elsewhere, grouped by owner (rows are in order)
    if (k == rank_) continue;
    for (int64_t r = owned_first_row(rows, size_, k); r < owned_first_row(rows, size_, k + 1); ++r) {
      if (!present[r]) continue;
      send_ids_.push_back(static_cast<int32_t>(r));
      send_rows_.insert(send_rows_.end(), x + r * row_len, x + (r + 1) * row_len);
      ++send_n[k];
    }
  }
  watchdog_->enter("MPI_Alltoall");
  checked(MPI_Alltoall(send_n.data(), 1, MPI_INT, recv_n.data(), 1, MPI_INT, comm_), "MPI_Alltoall");
  for (int32_t k = 0; k < size_; ++k) {
    send_off[k + 1] = send_off[k] + send_n[k];
    recv_off[k + 1] = recv_off[k] + recv_n[k];
  }
  recv_ids_.resize(static_cast<size_t>(recv_off[size_]));
  recv_rows_.resize(static_cast<size_t>(recv_off[size_] * row_len));
  watchdog_->enter("MPI_Alltoallv");
  checked(MPI_Alltoallv(send_ids_.data(), send_n.data(), send_off.data(), MPI_INT, recv_ids_.data(), recv_n.data(),
                        recv_off.data(), MPI_INT, comm_), "MPI_Alltoallv");
  MPI_Datatype row_type;  // one row of floats: counts stay in rows
  check_mpi(MPI_Type_contiguous(static_cast<int>(row_len), MPI_FLOAT, &row_type), "MPI_Type_contiguous");
  check_mpi(MPI_Type_commit(&row_type), "MPI_Type_commit");
  watchdog_->enter("MPI_Alltoallv");
  const int rc = MPI_Alltoallv(send_rows_.data(), send_n.data(), send_off.data(), row_type, recv_rows_.data(),
                               recv_n.data(), recv_off.data(), row_type, comm_);
  watchdog_->leave();
  // My rows: mine (zero where absent) plus the others' in rank order.
  const int64_t mine_first = owned_first_row(rows, size_, rank_), mine_end = owned_first_row(rows, size_, rank_ + 1);
  for (int64_t r = mine_first; r < mine_end; ++r) {
    if (!present[r]) std::fill(x + r * row_len, x + (r + 1) * row_len, 0.0f);
  }
  for (int64_t i = 0; rc == MPI_SUCCESS && i < recv_off[size_]; ++i) {
    const int64_t r = recv_ids_[static_cast<size_t>(i)];
    SLIMKV_CHECK(r >= mine_first && r < mine_end, "MPI: sum_rows received row {} owned by another rank", r);
    const float* src = recv_rows_.data() + i * row_len;
    float* dst = x + r * row_len;
    for (int64_t d = 0; d < row_len; ++d) dst[d] += src[d];
  }
  std::vector<int> own_n(size_), own_off(size_);
  for (int32_t k = 0; k < size_; ++k) {
    own_off[k] = static_cast<int>(owned_first_row(rows, size_, k));
    own_n[k] = static_cast<int>(owned_first_row(rows, size_, k + 1)) - own_off[k];
  }
  if (rc == MPI_SUCCESS) {
    watchdog_->enter("MPI_Allgatherv");
    checked(MPI_Allgatherv(MPI_IN_PLACE, 0, MPI_DATATYPE_NULL, x, own_n.data(), own_off.data(), row_type, comm_),
            "MPI_Allgatherv");
  }
  MPI_Type_free(&row_type);
  check_mpi(rc, "MPI_Alltoallv");
  stats_->all_to_all_ms += ms_since(t0);
  ++stats_->all_to_all_calls;
  stats_->all_to_all_bytes += static_cast<int64_t>(send_ids_.size()) * static_cast<int64_t>(sizeof(int32_t) + row_len * sizeof(float));
}

}  // namespace

bool mpi_built() { return true; }

std::shared_ptr<Collectives> mpi_world(bool serialized) {
  static std::shared_ptr<Collectives> world = std::make_shared<MpiCollectives>(serialized);
  return world;
}

bool mpi_use_shared_memory_all_reduce(bool on) {
  return static_cast<MpiCollectives&>(*mpi_world()).use_shm(on);
}

void mpi_abort_if_running(int code) {
  int initialized = 0, finalized = 0;
  MPI_Initialized(&initialized);
  MPI_Finalized(&finalized);
  if (initialized && !finalized) MPI_Abort(MPI_COMM_WORLD, code);
}

#else

bool mpi_built() { return false; }

std::shared_ptr<Collectives> mpi_world(bool) {
  fail("this slimkv was built without MPI (Debian: apt-get install libopenmpi-dev openmpi-bin, then rebuild)");
}

void mpi_abort_if_running(int) {}

bool mpi_use_shared_memory_all_reduce(bool) { return false; }

#endif

}  // namespace slimkv
