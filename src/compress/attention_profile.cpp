#include "compress/attention_profile.h"

#include <algorithm>
#include <cmath>

#include "core/check.h"

namespace slimkv {

double AttentionProfile::mass_at(int32_t layer, double tokens) const {
  const std::vector<float>& m = mass[layer];
  const double b = tokens / block_tokens;
  if (b >= static_cast<double>(m.size() - 1)) return 1.0;
  const size_t i = static_cast<size_t>(b);
  const double f = b - static_cast<double>(i);
  return m[i] * (1 - f) + m[i + 1] * f;
}

double AttentionProfile::head_mass_at(int32_t layer, int32_t h, double fraction) const {
  const float* m = head_read_mass[layer].data() + static_cast<size_t>(h) * read_steps;
  const double x = fraction * read_steps;
  if (x >= read_steps) return m[read_steps - 1];
  const int32_t i = static_cast<int32_t>(x);
  const double lo = i == 0 ? 0.0 : m[i - 1], f = x - i;
  return lo * (1 - f) + m[i] * f;
}

AttentionProfiler::AttentionProfiler(int32_t L, int32_t block_tokens, int32_t max_blocks, int32_t min_query_pos)
    : block_tokens_(block_tokens), max_blocks_(max_blocks), min_pos_(min_query_pos), keys_(L),
      sum_(L, std::vector<double>(max_blocks + 1, 0.0)), count_(L, 0), head_sum_(L), head_count_(L) {
  SLIMKV_CHECK(block_tokens >= 1 && max_blocks >= 1, "attention profile: bad block geometry");
}

void AttentionProfiler::begin_sequence() {
  for (auto& k : keys_) k.clear();
}

void AttentionProfiler::add_read_curve(const double* e, int32_t n, double z, double* curve, std::vector<double>& rows) {
  // What a budget of ceil(s / steps x n) rows buys as select reads them: the sinks and the recent window always
  // (kProfileSinks, kProfileWindow), then the most attended of the rows between. e: exp(score - max), z: their sum.
  const int32_t sinks = std::min(kProfileSinks, n), wbegin = std::max(sinks, n - kProfileWindow);
  const int32_t fixed_rows = sinks + (n - wbegin);
  double cum = 0;
  rows.clear();
  for (int32_t j = 0; j < n; ++j) {
    if (j < sinks || j >= wbegin) {
      cum += e[j] / z;
    } else {
      rows.push_back(e[j] / z);
    }
  }
  std::sort(rows.begin(), rows.end(), std::greater<double>());
  int32_t taken = fixed_rows;
  for (int32_t st = 1; st <= kReadSteps; ++st) {
    const int32_t want = static_cast<int32_t>((static_cast<int64_t>(st) * n + kReadSteps - 1) / kReadSteps);
    for (; taken < want; ++taken) cum += rows[taken - fixed_rows];
    curve[st - 1] += std::min(1.0, cum);
  }
}

void AttentionProfiler::add(int32_t l, const float* q, const float* k, int32_t T, int32_t H, int32_t KVH, int32_t D,
                            float scale) {
  std::vector<float>& keys = keys_[l];
  const size_t kv_dim = static_cast<size_t>(KVH) * D;
  const int32_t start = static_cast<int32_t>(keys.size() / kv_dim);
  keys.insert(keys.end(), k, k + static_cast<size_t>(T) * kv_dim);
  std::vector<double> p, blocks, sorted;
  if (head_sum_[l].empty()) {
    head_sum_[l].assign(static_cast<size_t>(KVH) * kReadSteps, 0.0);
    head_count_[l].assign(KVH, 0);
  }
  for (int32_t t = 0; t < T; ++t) {
    const int32_t pos = start + t;
    if (pos < min_pos_) continue;
    const int32_t n = pos + 1, nb = (n + block_tokens_ - 1) / block_tokens_;
    for (int32_t h = 0; h < H; ++h) {
      const float* qh = q + (static_cast<size_t>(t) * H + h) * D;
      const int32_t kvh = h / (H / KVH);
      p.resize(n);
      double mx = -1e300;
      for (int32_t j = 0; j < n; ++j) {
        const float* kj = keys.data() + static_cast<size_t>(j) * kv_dim + static_cast<size_t>(kvh) * D;
        double s = 0;
        for (int32_t d = 0; d < D; ++d) s += static_cast<double>(qh[d]) * kj[d];
        p[j] = s * scale;
        mx = std::max(mx, p[j]);
      }
      double z = 0;
      for (int32_t j = 0; j < n; ++j) z += (p[j] = std::exp(p[j] - mx));
      blocks.assign(nb, 0.0);
      for (int32_t j = 0; j < n; ++j) blocks[j / block_tokens_] += p[j] / z;
      std::sort(blocks.begin(), blocks.end(), std::greater<double>());
      double acc = 0;
      for (int32_t b = 1; b <= max_blocks_; ++b) {
        if (b <= nb) acc += blocks[b - 1];
        sum_[l][b] += std::min(1.0, acc);
      }
      ++count_[l];
      add_read_curve(p.data(), n, z, head_sum_[l].data() + static_cast<size_t>(kvh) * kReadSteps, sorted);
      ++head_count_[l][kvh];
    }
  }
}

AttentionProfile AttentionProfiler::result() const {
  AttentionProfile r;
  r.block_tokens = block_tokens_;
  r.num_queries = count_.empty() ? 0 : *std::min_element(count_.begin(), count_.end());
  for (size_t l = 0; l < sum_.size(); ++l) {
    std::vector<float> m(sum_[l].size(), 0.0f);
    for (size_t b = 0; b < m.size(); ++b) m[b] = count_[l] ? static_cast<float>(sum_[l][b] / count_[l]) : 1.0f;
    m[0] = 0.0f;
    for (size_t b = 1; b < m.size(); ++b) m[b] = std::max(m[b], m[b - 1]);
    r.mass.push_back(std::move(m));
  }
  bool heads = !head_sum_.empty();
  for (const auto& c : head_count_) heads = heads && !c.empty();
  if (!heads) return r;
  r.read_steps = kReadSteps;
  for (size_t l = 0; l < head_sum_.size(); ++l) {
    std::vector<float> m(head_sum_[l].size(), 1.0f);
    for (size_t h = 0; h < head_count_[l].size(); ++h) {
      float* row = m.data() + h * kReadSteps;
      for (int32_t s = 0; s < kReadSteps; ++s) {
        if (head_count_[l][h]) row[s] = static_cast<float>(head_sum_[l][h * kReadSteps + s] / head_count_[l][h]);
        if (s > 0) row[s] = std::max(row[s], row[s - 1]);
      }
    }
    r.head_read_mass.push_back(std::move(m));
  }
  return r;
}

std::vector<std::vector<float>> allocate_read_fractions(const AttentionProfile& p, const std::vector<int32_t>& layers,
                                                        double mean_fraction, double min_fraction) {
  SLIMKV_CHECK(p.read_steps > 0 && !p.head_read_mass.empty(), "per-head budgets: the calibration file has no per-head "
               "read profile (made by an older `slimkv calibrate`): recalibrate");
  SLIMKV_CHECK(mean_fraction > 0 && mean_fraction <= 1, "per-head budgets: a mean share of {} of the context",
               mean_fraction);
  const int32_t S = p.read_steps, L = static_cast<int32_t>(layers.size());
  const int32_t H = static_cast<int32_t>(p.head_read_mass[0].size()) / S;
  for (int32_t l : layers) {
    SLIMKV_CHECK(l >= 0 && l < static_cast<int32_t>(p.head_read_mass.size()), "per-head budgets: layer {} is not in "
                 "the calibration's read profile", l);
  }
  const int32_t N = L * H, floor_steps = std::clamp(static_cast<int32_t>(std::ceil(min_fraction * S - 1e-9)), 1, S);
  std::vector<int32_t> steps(N, floor_steps);
  for (int64_t left = std::llround(mean_fraction * S * N) - static_cast<int64_t>(floor_steps) * N; left > 0; --left) {
    int32_t best = -1;  // one step to the head it buys the most mass for; ties: the first
    double best_gain = -1;
    for (int32_t i = 0; i < N; ++i) {
      if (steps[i] >= S) continue;
      const int32_t l = layers[i / H], h = i % H;
      const double gain = p.head_mass_at(l, h, static_cast<double>(steps[i] + 1) / S) -
                          p.head_mass_at(l, h, static_cast<double>(steps[i]) / S);
      if (gain > best_gain + 1e-12) best_gain = gain, best = i;
    }
    if (best < 0) break;  // every head reads its whole context
    ++steps[best];
  }
  std::vector<double> f(N);
  for (int32_t i = 0; i < N; ++i) f[i] = std::sqrt(static_cast<double>(steps[i]) / S / mean_fraction);
  for (int iter = 0; iter < 8; ++iter) {  // renormalise to the mean within [min_fraction, 1]
    double sum = 0;
    for (double x : f) sum += x;
    const double k = mean_fraction * N / sum;
    for (double& x : f) x = std::clamp(x * k, std::min(min_fraction, 1.0), 1.0);
  }
  std::vector<std::vector<float>> out(L, std::vector<float>(H));
  for (int32_t i = 0; i < N; ++i) out[i / H][i % H] = static_cast<float>(f[i]);
  return out;
}

std::vector<int32_t> allocate_budgets(const AttentionProfile& p, int64_t total, int32_t min_tokens, int32_t unit) {
  const int32_t L = static_cast<int32_t>(p.mass.size());
  SLIMKV_CHECK(L > 0 && unit >= 1, "auto budgets: empty attention profile");
  SLIMKV_CHECK(total >= static_cast<int64_t>(min_tokens) * L, "auto budgets: {} tokens cannot give {} layers {} each",
               total, L, min_tokens);
  std::vector<int32_t> k(L, min_tokens);
  int64_t left = total - static_cast<int64_t>(min_tokens) * L;
  while (left >= unit) {
    int32_t best = 0;
    double best_gain = -1;
    for (int32_t l = 0; l < L; ++l) {  // ties: the lower layer
      const double gain = p.mass_at(l, k[l] + unit) - p.mass_at(l, k[l]);
      if (gain > best_gain + 1e-12) best_gain = gain, best = l;
    }
    k[best] += unit;
    left -= unit;
  }
  return k;
}

std::vector<int32_t> allocate_by_sensitivity(const std::vector<float>& sens, int64_t total, int32_t min_tokens,
                                             int32_t unit) {
  const size_t L = sens.size();
  SLIMKV_CHECK(L > 0 && unit >= 1 && min_tokens >= 0, "sensitivity budgets: no layers");
  const int64_t min_units = (min_tokens + unit - 1) / unit, total_units = total / unit;
  SLIMKV_CHECK(total_units >= min_units * static_cast<int64_t>(L), "sensitivity budgets: {} tokens cannot give {} "
               "layers {} each", total, L, min_tokens);
  std::vector<double> w(L);
  double sum = 0;
  for (size_t l = 0; l < L; ++l) sum += (w[l] = std::sqrt(std::max(1e-9, static_cast<double>(sens[l]))));
  // Units above the minimum, split by weight; largest remainders get the leftovers.
  const int64_t spare = total_units - min_units * static_cast<int64_t>(L);
  std::vector<int64_t> units(L, min_units);
  std::vector<std::pair<double, size_t>> rem;
  int64_t given = 0;
  for (size_t l = 0; l < L; ++l) {
    const double share = static_cast<double>(spare) * w[l] / sum;
    units[l] += static_cast<int64_t>(share);
    given += static_cast<int64_t>(share);
    rem.push_back({share - std::floor(share), l});
  }
  std::stable_sort(rem.begin(), rem.end(), [](const auto& a, const auto& b) { return a.first > b.first; });
  for (size_t i = 0; given < spare; ++i, ++given) ++units[rem[i % L].second];
  std::vector<int32_t> out(L);
  for (size_t l = 0; l < L; ++l) out[l] = static_cast<int32_t>(units[l] * unit);
  return out;
}

}  // namespace slimkv
