// The MPICH build check of src/dist/mpi_world.cpp (scripts/check-mpich; not a CTest): every rank contributes
// rank + 1, and every rank must see the sum.
#include <cstdio>
#include "dist/mpi_world.h"
int main() {
  auto w = slimkv::mpi_world();
  float x[3] = {float(w->rank() + 1), 1.0f, 0.5f};
  w->all_reduce_sum(x, 3);
  const int n = w->size();
  const bool ok = x[0] == n * (n + 1) / 2.0f && x[1] == n && x[2] == 0.5f * n;
  std::printf("rank %d of %d: %s (%g %g %g; %lld bytes counted)\n", w->rank(), n, ok ? "ok" : "WRONG", x[0], x[1], x[2],
              (long long)w->stats().all_reduce_bytes);
  return ok ? 0 : 1;
}
