#include "dist/mpi_world.h"

#include <unistd.h>

#include <atomic>
#include <chrono>
#include <climits>
#include <cstdio>
#include <cstdlib>
#include <thread>

#include "core/check.h"

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
  }
  ~MpiCollectives() override {
    watchdog_.reset();
    int finalized = 0;
    MPI_Finalized(&finalized);
    if (!finalized) MPI_Finalize();
  }
  int32_t rank() const override { return rank_; }
  int32_t size() const override { return size_; }
  void all_reduce_sum(float* x, int64_t n) override {
    SLIMKV_CHECK(n >= 0 && n <= INT_MAX, "MPI: an all-reduce of {} floats", n);
    const auto t0 = std::chrono::steady_clock::now();
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
};

}  // namespace

bool mpi_built() { return true; }

std::shared_ptr<Collectives> mpi_world(bool serialized) {
  static std::shared_ptr<Collectives> world = std::make_shared<MpiCollectives>(serialized);
  return world;
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

#endif

}  // namespace slimkv
