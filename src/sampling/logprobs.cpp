#include "sampling/logprobs.h"

#include <algorithm>
#include <cmath>

#include "core/check.h"

namespace slimkv {

TokenLogprobs compute_logprobs(const float* logits, int32_t n, int32_t token, int32_t k) {
  SLIMKV_CHECK(n > 0 && token >= 0 && token < n, "compute_logprobs: token {} outside 0..{}", token, n - 1);
  SLIMKV_CHECK(k >= 0 && k <= n, "compute_logprobs: k {} outside 0..{}", k, n);
  float mx = -INFINITY;
  for (int32_t i = 0; i < n; ++i) mx = std::max(mx, logits[i]);
  double sum = 0.0;
  for (int32_t i = 0; i < n; ++i) sum += std::exp(static_cast<double>(logits[i]) - mx);
  const float lse = mx + static_cast<float>(std::log(sum));
  TokenLogprobs out;
  out.logprob = logits[token] - lse;
  if (k == 0) return out;
  std::vector<int32_t> idx(n);
  for (int32_t i = 0; i < n; ++i) idx[i] = i;
  auto better = [&](int32_t a, int32_t b) { return logits[a] > logits[b] || (logits[a] == logits[b] && a < b); };
  std::partial_sort(idx.begin(), idx.begin() + k, idx.end(), better);
  out.top.reserve(k);
  for (int32_t i = 0; i < k; ++i) out.top.emplace_back(idx[i], logits[idx[i]] - lse);
  return out;
}

}  // namespace slimkv
