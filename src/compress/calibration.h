// Offline calibration on real text, one versioned file bound to a model fingerprint: low-rank K/V bases (per layer
// and KV head, the eigenvectors of the second-moment matrix of post-RoPE keys and of values, largest first, with
// their eigenvalues: the explained-variance curve) and the per-layer attention profile (attention_profile.h).
// Must not know: how the model runs (the calibrate tool feeds it rows).
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "compress/attention_profile.h"
#include "kv/kv_layout.h"

namespace slimkv {

struct LayerProjection {       // low-rank bases of one layer; empty = full rank
  std::vector<float> k, v;     // [num_kv_heads, rank, head_dim]: latent = P x
  // A select index (kv_sparse_mode select): k projects keys into the sketch; q, when set, projects queries (the
  // query-aware sketch: score = (A q)·(B k)); empty: queries through k too (a plain PCA sketch).
  std::vector<float> q;
};

class KvCovariance {           // accumulates sum x xᵀ per (layer, head) for K and V
 public:
  KvCovariance(int32_t num_layers, int32_t num_kv_heads, int32_t head_dim);
  // k, v: [num_tokens, num_kv_heads * head_dim] rows of one layer
  void add(int32_t layer, const float* k, const float* v, int32_t num_tokens);
  // q: [num_tokens, num_heads * head_dim] the layer's post-RoPE queries; each head's rows join its KV head's sum.
  void add_queries(int32_t layer, const float* q, int32_t num_tokens, int32_t num_heads);
  int64_t num_tokens() const { return tokens_; }

 private:
  friend struct Calibration;
  int32_t L_, H_, D_;
  int64_t tokens_ = 0;
  std::vector<double> k_, v_;  // [L, H, D, D]
  std::vector<double> q_;      // [L, H, D, D] the queries of each KV head's group
  bool have_q_ = false;
};

struct Calibration {
  // 2 adds the attention profile, 3 the queries' second moments (older files still load, without them)
  static constexpr uint32_t kVersion = 3;
  std::string model_fingerprint;
  int32_t num_layers = 0, num_kv_heads = 0, head_dim = 0;
  int64_t num_tokens = 0;
  std::vector<float> k_eig, v_eig;      // [L, H, D] eigenvalues, largest first
  std::vector<float> k_basis, v_basis;  // [L, H, D, D] row r = r-th eigenvector
  AttentionProfile attention;           // per-layer attention concentration (diagnostic)
  std::vector<float> q_moment;          // [L, H, D, D] sum q qᵀ of each KV head's queries, or empty
  // Per-layer retention sensitivity (the `auto` schedule): the mean KL(full || compressed) over the calibration
  // text when only layer l keeps sensitivity_tokens tokens (sinks + window + selected; the others keep all).
  std::vector<float> layer_sensitivity;  // [L], empty when not measured
  int32_t sensitivity_tokens = 0;

  static Calibration from_covariance(const KvCovariance& cov, const std::string& fingerprint);  // Eigen
  void save(const std::string& path) const;
  static Calibration load(const std::string& path);  // bounds-checked; throws Error
  // Share of the variance the first `rank` directions keep, averaged over heads, for K (or V) of one layer.
  double explained(int32_t layer, int32_t rank, bool keys) const;
  // Bases truncated to each layer's k_dim / v_dim in `layout` (its model streams; appended streams: empty).
  std::vector<LayerProjection> projections(const KvLayout& layout) const;
  // The first `rank` key eigenvectors of one layer, every KV head: [num_kv_heads, rank, head_dim].
  std::vector<float> key_basis(int32_t layer, int32_t rank) const;
  // The query-aware sketch of one layer (needs q_moment): A, B [num_kv_heads, rank, head_dim] with (A q)·(B k) the
  // best rank-`rank` approximation of q·k in mean square over the calibration's queries and keys:
  // AᵀB = Σq^-1/2 (Σq^1/2 Σk^1/2)_rank Σk^-1/2 (the truncated SVD; Σ regularised at 1e-6 of its largest eigenvalue).
  void query_aware_sketch(int32_t layer, int32_t rank, std::vector<float>& a, std::vector<float>& b) const;
};

}  // namespace slimkv
