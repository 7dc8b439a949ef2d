// The MPICH build check of src/dist/mpi_world.cpp (scripts/check-mpich; not a CTest): every rank contributes
// rank + 1 to an all-reduce, and rows of a sum_rows (the all-to-all expert combine: rank r writes row r and the
// last row) — every rank must see the sums.
#include <cstdio>
#include <vector>
#include "dist/mpi_world.h"
int main() {
  auto w = slimkv::mpi_world();
  float x[3] = {float(w->rank() + 1), 1.0f, 0.5f};
  w->all_reduce_sum(x, 3);
  const int n = w->size();
  bool ok = x[0] == n * (n + 1) / 2.0f && x[1] == n && x[2] == 0.5f * n;
  const int rows = n + 1, len = 2;  // [rows, 2]: rank r writes row r (r + 1, 1) and the last row (1, r)
  std::vector<float> y(rows * len, 0.0f);
  std::vector<uint8_t> present(rows, 0);
  y[w->rank() * len] = float(w->rank() + 1);
  y[w->rank() * len + 1] = 1.0f;
  y[n * len] = 1.0f;
  y[n * len + 1] = float(w->rank());
  present[w->rank()] = present[n] = 1;
  w->sum_rows(y.data(), rows, len, present.data());
  for (int r = 0; r < n; ++r) ok = ok && y[r * len] == float(r + 1) && y[r * len + 1] == 1.0f;
  ok = ok && y[n * len] == float(n) && y[n * len + 1] == n * (n - 1) / 2.0f;
  std::printf("rank %d of %d: %s (%g %g %g; %lld bytes counted; rows summed, %lld bytes sent)\n", w->rank(), n,
              ok ? "ok" : "WRONG", x[0], x[1], x[2], (long long)w->stats().all_reduce_bytes,
              (long long)w->stats().all_to_all_bytes);
  return ok ? 0 : 1;
}
