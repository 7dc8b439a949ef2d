#include "sampling/sampler.h"

#include <algorithm>
#include <cmath>

namespace slimkv {

Rng::Rng(uint64_t seed) {
  uint64_t z = seed + 0x9E3779B97F4A7C15ull;
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  state_ = (z ^ (z >> 31)) | 1;
}

uint64_t Rng::next_u64() {
  state_ ^= state_ >> 12;
  state_ ^= state_ << 25;
  state_ ^= state_ >> 27;
  return state_ * 0x2545F4914F6CDD1Dull;
}

float Rng::next_f32() { return static_cast<float>(next_u64() >> 40) / 16777216.0f; }

int32_t argmax(const float* x, int32_t n) {
  // The maximum in 8 independent lanes (no loop-carried compare-and-branch: the compiler vectorises it), then the
  // first index holding it. NaNs never win, as in a plain `x[i] > x[best]` scan.
  float lane[8];
  for (int k = 0; k < 8; ++k) lane[k] = x[0];
  int32_t i = 0;
  for (; i + 8 <= n; i += 8) {
    for (int k = 0; k < 8; ++k) lane[k] = x[i + k] > lane[k] ? x[i + k] : lane[k];
  }
  float m = x[0];
  for (int k = 0; k < 8; ++k) m = lane[k] > m ? lane[k] : m;
  for (; i < n; ++i) m = x[i] > m ? x[i] : m;
  for (i = 0; i < n; ++i) {
    if (x[i] == m) return i;
  }
  return 0;
}

Sampler::Sampler(const SamplingParams& params) : params_(params), rng_(params.seed) { params_.validate(); }

int32_t Sampler::sample(const float* logits, int32_t vocab_size) {
  if (params_.temperature == 0.0f) return argmax(logits, vocab_size);
  cand_.resize(vocab_size);
  for (int32_t i = 0; i < vocab_size; ++i) cand_[i] = {logits[i] / params_.temperature, i};
  auto by_logit = [](const auto& a, const auto& b) { return a.first > b.first || (a.first == b.first && a.second < b.second); };
  size_t n = cand_.size();
  if (params_.top_k > 0 && static_cast<size_t>(params_.top_k) < n) {
    std::partial_sort(cand_.begin(), cand_.begin() + params_.top_k, cand_.end(), by_logit);
    n = params_.top_k;
  } else {
    std::sort(cand_.begin(), cand_.end(), by_logit);
  }
  // softmax over the n candidates (sorted, so cand_[0] is the max)
  float mx = cand_[0].first, sum = 0;
  for (size_t i = 0; i < n; ++i) {
    cand_[i].first = std::exp(cand_[i].first - mx);
    sum += cand_[i].first;
  }
  // nucleus: keep the smallest prefix whose mass reaches top_p
  float cum = 0;
  size_t keep = n;
  for (size_t i = 0; i < n; ++i) {
    cum += cand_[i].first / sum;
    if (cum >= params_.top_p) {
      keep = i + 1;
      break;
    }
  }
  // min-p (after top-k and top-p, as vLLM applies it): candidates are sorted, so a prefix stays
  const float floor = params_.min_p * cand_[0].first;
  while (keep > 1 && cand_[keep - 1].first < floor) --keep;
  float mass = 0;
  for (size_t i = 0; i < keep; ++i) mass += cand_[i].first;
  float r = rng_.next_f32() * mass, acc = 0;
  for (size_t i = 0; i < keep; ++i) {
    acc += cand_[i].first;
    if (r < acc) return cand_[i].second;
  }
  return cand_[keep - 1].second;
}

}  // namespace slimkv
