// How concentrated each layer's attention is, measured on calibration text: mass[l][k] = the mean, over queries and
// query heads, of the attention probability the k most-attended blocks of block_tokens keys receive (k = 0..).
// A layer whose curve rises fast needs few tokens; the `auto` retention schedule (allocate_budgets) gives each
// layer the tokens that buy the most mass for the same total. Per KV head, at token granularity, the same curve over
// the share of a query's context read (head_read_mass) sets select's per-head budgets (allocate_read_fractions).
// Must not know: how the model runs (the calibrate run feeds it rows).
#pragma once
#include <cstdint>
#include <vector>

namespace slimkv {

struct AttentionProfile {
  int32_t block_tokens = 8;
  int64_t num_queries = 0;                  // (query, head) pairs averaged, per layer
  std::vector<std::vector<float>> mass;     // [layers][max_blocks + 1]: non-decreasing, mass[l][0] = 0
  // [layers][kv_heads * read_steps]: the mean, over queries and the KV head's query heads, of the probability its
  // ceil(s / read_steps x context) most-attended tokens receive, s = 1..read_steps (empty: not measured).
  int32_t read_steps = 0;
  std::vector<std::vector<float>> head_read_mass;
  bool empty() const { return mass.empty(); }
  // Mass kept by the best `tokens` tokens of layer l (linear between blocks, 1 past the curve's end).
  double mass_at(int32_t layer, double tokens) const;
  // Mass kept by a share `fraction` of the context, KV head h of layer l (linear between steps; 0 at 0).
  double head_mass_at(int32_t layer, int32_t h, double fraction) const;
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
  // Adds one (query, head)'s read curve: e [n] its unnormalised probabilities, z their sum; rows: scratch.
  static void add_read_curve(const double* e, int32_t n, double z, double* curve, std::vector<double>& rows);
  int32_t block_tokens_, max_blocks_, min_pos_;
  std::vector<std::vector<float>> keys_;   // [layers][positions * kv_dim] this sequence's keys so far
  std::vector<std::vector<double>> sum_;   // [layers][max_blocks + 1]
  std::vector<int64_t> count_;             // [layers]
  std::vector<std::vector<double>> head_sum_;  // [layers][kv_heads * kReadSteps] (sized on a layer's first rows)
  std::vector<std::vector<int64_t>> head_count_;  // [layers][kv_heads]
};

// The read profile assumes select's shipped shape: 4 sinks and a 64-token recent window read whatever the budget.
inline constexpr int32_t kProfileSinks = 4, kProfileWindow = 64;
inline constexpr int32_t kReadSteps = 128;  // the per-head curve's resolution: shares of 1/128 of the context

// Select's per-head budgets (--kv-sparse-schedule auto): a share of the context for every KV head of the given
// layers, >= min_fraction and <= 1, whose mean is mean_fraction. First the shares, in steps of 1 / read_steps, that
// maximise the summed profile mass (greedy: optimal for concave curves); then each share's ratio to the mean is
// tempered by a square root and the whole renormalised. The greedy shares alone trust the calibration text's mass too
// far: they starve heads whose last 0.1% of mass still moves the output (docs/compression.md). [layers][kv_heads].
std::vector<std::vector<float>> allocate_read_fractions(const AttentionProfile& p, const std::vector<int32_t>& layers,
                                                        double mean_fraction, double min_fraction);

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
