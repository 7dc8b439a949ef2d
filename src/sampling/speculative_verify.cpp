#include "sampling/speculative_verify.h"

#include <algorithm>

#include "core/check.h"

namespace slimkv {
namespace {

int32_t argmax_row(const float* row, int32_t vocab) {
  return static_cast<int32_t>(std::max_element(row, row + vocab) - row);  // the first of equals, as greedy sampling
}

// A token drawn from the unnormalised weights w [vocab] (sum > 0); the last positive one if rounding runs past.
int32_t draw(const std::vector<double>& w, std::mt19937_64& rng) {
  double total = 0;
  for (double x : w) total += x;
  double u = std::uniform_real_distribution<double>(0.0, total)(rng);
  int32_t last = -1;
  for (size_t t = 0; t < w.size(); ++t) {
    if (w[t] <= 0) continue;
    last = static_cast<int32_t>(t);
    if ((u -= w[t]) < 0) return last;
  }
  return last;
}

void check_shapes(std::span<const int32_t> draft, size_t rows_bytes, int32_t vocab) {
  SLIMKV_CHECK(vocab > 0 && rows_bytes == (draft.size() + 1) * static_cast<size_t>(vocab),
               "speculative verify: {} values for {} drafts over a vocabulary of {}", rows_bytes, draft.size(), vocab);
  for (int32_t t : draft) SLIMKV_CHECK(t >= 0 && t < vocab, "speculative verify: draft token {} outside 0..{}", t, vocab - 1);
}

}  // namespace

SpecVerdict verify_greedy(std::span<const int32_t> draft, std::span<const float> logits, int32_t vocab) {
  check_shapes(draft, logits.size(), vocab);
  SpecVerdict v;
  for (size_t i = 0; i <= draft.size(); ++i) {
    const int32_t best = argmax_row(logits.data() + i * vocab, vocab);
    if (i == draft.size() || best != draft[i]) {
      v.next_token = best;
      return v;
    }
    ++v.num_accepted;
  }
  return v;
}

SpecVerdict verify_sampled(std::span<const int32_t> draft, std::span<const float> p, std::span<const float> q,
                           int32_t vocab, std::mt19937_64& rng) {
  check_shapes(draft, p.size(), vocab);
  SLIMKV_CHECK(q.empty() || q.size() == draft.size() * static_cast<size_t>(vocab),
               "speculative verify: {} draft probabilities for {} drafts", q.size(), draft.size());
  std::uniform_real_distribution<double> unit(0.0, 1.0);
  std::vector<double> w(vocab);
  SpecVerdict v;
  for (size_t i = 0; i < draft.size(); ++i) {
    const float* pi = p.data() + i * vocab;
    const int32_t x = draft[i];
    const double px = pi[x], qx = q.empty() ? 1.0 : q[i * vocab + x];
    if (qx > 0 && unit(rng) * qx < px) {  // kept with probability min(1, p(x) / q(x))
      ++v.num_accepted;
      continue;
    }
    for (int32_t t = 0; t < vocab; ++t) {  // the residual max(0, p - q), renormalised by draw()
      const double qt = q.empty() ? (t == x ? 1.0 : 0.0) : q[i * vocab + t];
      w[t] = std::max(0.0, static_cast<double>(pi[t]) - qt);
    }
    v.next_token = draw(w, rng);
    if (v.next_token < 0) v.next_token = x;  // p == q here: nothing left over (x was kept with probability 1)
    return v;
  }
  const float* pk = p.data() + draft.size() * vocab;  // every draft kept: a bonus token from the last row
  for (int32_t t = 0; t < vocab; ++t) w[t] = pk[t];
  v.next_token = draw(w, rng);
  return v;
}

}  // namespace slimkv
