// How concentrated each layer's attention is, measured on calibration text: mass[l][k] = the mean, over queries and
// query heads, of the attention probability the k most-attended blocks of block_tokens keys receive (k = 0..).
// A layer whose curve rises fast needs few tokens; the `auto` retention schedule (allocate_budgets) gives each
// layer the tokens that buy the most mass for the same total. Must not know: how the model runs (the calibrate run
// feeds it rows).
#pragma once
#include <cstdint>
#include <vector>

namespace slimkv {

struct AttentionProfile {
  int32_t block_tokens = 8;
  int64_t num_queries = 0;                  // (query, head) pairs averaged, per layer
  std::vector<std::vector<float>> mass;     // [layers][max_blocks + 1]: non-decreasing, mass[l][0] = 0
  bool empty() const { return mass.empty(); }
  // Mass kept by the best `tokens` tokens of layer l (linear between blocks, 1 past the curve's end).
  double mass_at(int32_t layer, double tokens) const;
};

class AttentionProfiler {
 public:
  // Queries at positions below min_query_pos are not counted (their whole context fits any budget).
  AttentionProfiler(int32_t num_layers, int32_t block_tokens, int32_t max_blocks, int32_t min_query_pos);
  void begin_sequence();  // the next rows start at position 0
  // Rows of one layer at the next positions of the current sequence: q [T, num_heads * head_dim] and
  // k [T, num_kv_heads * head_dim], post-RoPE (query head h reads KV head h / (num_heads / num_kv_heads)).
  void add(int32_t layer, const float* q, const float* k, int32_t num_tokens, int32_t num_heads, int32_t num_kv_heads,
           int32_t head_dim, float scale);
  AttentionProfile result() const;

 private:
  int32_t block_tokens_, max_blocks_, min_pos_;
  std::vector<std::vector<float>> keys_;   // [layers][positions * kv_dim] this sequence's keys so far
  std::vector<std::vector<double>> sum_;   // [layers][max_blocks + 1]
  std::vector<int64_t> count_;             // [layers]
};

// Per-layer budgets in tokens: multiples of unit_tokens, each >= min_tokens, summing to total_tokens (within one
// unit), chosen greedily to maximise the summed profile mass (optimal for the concave curves a profile has).
std::vector<int32_t> allocate_budgets(const AttentionProfile& p, int64_t total_tokens, int32_t min_tokens,
                                      int32_t unit_tokens);
// Per-layer selectable tokens (beyond sinks and window) from measured sensitivities s_l (the output KL when only
// layer l keeps a small budget): if a layer's error falls like s_l / tokens, the split minimising the summed error
// for a fixed total is tokens_l proportional to sqrt(s_l). Multiples of unit_tokens, each >= min_tokens, summing to
// total_tokens (largest remainders first).
std::vector<int32_t> allocate_by_sensitivity(const std::vector<float>& sensitivity, int64_t total_tokens,
                                             int32_t min_tokens, int32_t unit_tokens);

}  // namespace slimkv
