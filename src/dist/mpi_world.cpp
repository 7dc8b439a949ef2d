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
    check_mpi(MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN), "MPI_Comm_set_errhandler");
    check_mpi(MPI_Comm_rank(MPI_COMM_WORLD, &rank_), "MPI_Comm_rank");
    check_mpi(MPI_Comm_size(MPI_COMM_WORLD, &size_), "MPI_Comm_size");
    watchdog_ = std::make_unique<CollectiveWatchdog>(rank_);
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
      stats_.all_reduce_ms += std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
      ++stats_.all_reduce_calls;
      stats_.all_reduce_bytes += n * static_cast<int64_t>(sizeof(float));
      return;
    }
    watchdog_->enter("MPI_Allreduce");
    const int rc = MPI_Allreduce(MPI_IN_PLACE, x, static_cast<int>(n), MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD);
    watchdog_->leave();
    check_mpi(rc, "MPI_Allreduce");
    stats_.all_reduce_ms += std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
    ++stats_.all_reduce_calls;
    stats_.all_reduce_bytes += n * static_cast<int64_t>(sizeof(float));
  }
  void all_gather(const float* x, int64_t n, float* out) override {
    SLIMKV_CHECK(n >= 0 && n <= INT_MAX, "MPI: an all-gather of {} floats", n);
    watchdog_->enter("MPI_Allgather");
    const int rc = MPI_Allgather(x, static_cast<int>(n), MPI_FLOAT, out, static_cast<int>(n), MPI_FLOAT, MPI_COMM_WORLD);
    watchdog_->leave();
    check_mpi(rc, "MPI_Allgather");
    ++stats_.all_gather_calls;
    stats_.all_gather_bytes += n * size_ * static_cast<int64_t>(sizeof(float));
  }
  void broadcast(std::vector<uint8_t>& bytes, bool idle) override {
    int64_t n = static_cast<int64_t>(bytes.size());
    // The length first, nonblocking on every rank (a nonblocking collective matches only nonblocking ones): an
    // idle follower polls it without spinning — it may wait minutes between requests — the others wait on it.
    MPI_Request req;
    check_mpi(MPI_Ibcast(&n, 1, MPI_INT64_T, 0, MPI_COMM_WORLD, &req), "MPI_Ibcast");
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
    const int rc = MPI_Bcast(bytes.data(), static_cast<int>(n), MPI_BYTE, 0, MPI_COMM_WORLD);
    watchdog_->leave();
    check_mpi(rc, "MPI_Bcast");
    ++stats_.broadcast_calls;
    stats_.broadcast_bytes += n;
  }
  const CollectiveStats& stats() const override { return stats_; }

 private:
  int rank_ = 0, size_ = 1;
  CollectiveStats stats_;
  std::unique_ptr<CollectiveWatchdog> watchdog_;
  std::unique_ptr<ShmAllReduce> shm_;  // null: not every rank on this host, or SLIMKV_ALL_REDUCE=mpi
  int64_t shm_min_floats_ = kShmMinFloats;
};

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
