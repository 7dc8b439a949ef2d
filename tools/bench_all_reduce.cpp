// `slimkv bench all-reduce` (under mpirun): microseconds per all-reduce of N floats through Open MPI's
// MPI_Allreduce and through the same-host shared-memory path (dist/shm_all_reduce.h), alternating in one run,
// medians of --repeats blocks of --iters calls. Rank 0 prints. A benchmark, not a test (docs/scale-out.md).
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <vector>

#include "dist/mpi_world.h"
#include "tools/commands.h"

namespace slimkv {
namespace {

double block_us(Collectives& c, std::vector<float>& x, int32_t iters) {  // mean µs per call over one block
  const auto t0 = std::chrono::steady_clock::now();
  for (int32_t i = 0; i < iters; ++i) c.all_reduce_sum(x.data(), static_cast<int64_t>(x.size()));
  return std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - t0).count() / iters;
}

}  // namespace

void add_bench_all_reduce_command(CLI::App& bench, std::vector<Command>& out) {
  struct Flags {
    std::vector<int64_t> floats = {768, 6144, 32768, 262144};
    int32_t iters = 200, repeats = 7;
  };
  auto f = std::make_shared<Flags>();
  auto* sub = bench.add_subcommand("all-reduce", "Under mpirun: all-reduce µs, MPI_Allreduce vs the shared-memory path");
  sub->add_option("--floats", f->floats, "Buffer sizes in floats (dim x tokens per step)")->check(CLI::Range(1, 1 << 20));
  sub->add_option("--iters", f->iters, "Calls per timed block")->check(CLI::Range(1, 100000));
  sub->add_option("-r,--repeats", f->repeats, "Blocks per path (median reported)")->check(CLI::Range(1, 100));
  out.push_back({sub, [f] {
                   auto world = mpi_world();
                   const bool rank0 = world->rank() == 0;
                   if (rank0) {
                     std::printf("%d ranks | floats | MPI_Allreduce us | shared memory us | MPI / shm |\n|---|---|---|---|\n",
                                 world->size());
                   }
                   for (int64_t n : f->floats) {
                     std::vector<float> x(static_cast<size_t>(n), 1.0f);
                     std::vector<double> mpi, shm;
                     for (int32_t r = 0; r < f->repeats; ++r) {  // alternating blocks
                       mpi_use_shared_memory_all_reduce(false);
                       mpi.push_back(block_us(*world, x, f->iters));
                       mpi_use_shared_memory_all_reduce(true);
                       shm.push_back(block_us(*world, x, f->iters));
                       std::fill(x.begin(), x.end(), 1.0f);  // sums grow: keep them finite
                     }
                     std::sort(mpi.begin(), mpi.end());
                     std::sort(shm.begin(), shm.end());
                     const double m = mpi[mpi.size() / 2], s = shm[shm.size() / 2];
                     if (rank0) std::printf("| %lld | %.1f | %.1f | %.2fx |\n", static_cast<long long>(n), m, s, m / s);
                   }
                   return 0;
                 }});
}

}  // namespace slimkv
