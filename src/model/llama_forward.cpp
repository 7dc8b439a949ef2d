#include "model/llama_forward.h"

#include <cmath>
#include <cstring>

#include "core/check.h"

namespace slimkv {

LlamaForward::LlamaForward(const Model& model, ThreadPool* pool, int32_t max_chunk_tokens)
    : model_(model), pool_(pool), max_chunk_(max_chunk_tokens) {
  const ModelConfig& c = model.config;
  rope_.init(c.max_seq_len, c.head_dim, c.rotary_dim, c.rope_theta, c.rope_layout);
  const size_t T = max_chunk_;
  x_.resize(T * c.dim);
  xb_.resize(T * c.dim);
  q_.resize(T * c.q_dim());
  k_.resize(T * c.kv_dim());
  v_.resize(T * c.kv_dim());
  att_.resize(T * c.q_dim());
  proj_.resize(T * c.dim);
  hb_.resize(T * c.hidden_dim);
  hb2_.resize(T * c.hidden_dim);
  int32_t threads = pool ? pool->num_threads() : 1;
  scores_.resize(static_cast<size_t>(threads) * c.max_seq_len);
}

void LlamaForward::forward(std::span<const int32_t> tokens, int32_t start_pos, ContiguousKvCache& cache,
                           bool all_logits, float* logits_out) {
  const ModelConfig& c = model_.config;
  SLIMKV_CHECK(!tokens.empty(), "forward: no tokens");
  int64_t end = static_cast<int64_t>(start_pos) + static_cast<int64_t>(tokens.size());
  SLIMKV_CHECK(start_pos >= 0 && end <= c.max_seq_len && end <= cache.capacity_tokens(),
               "forward: positions [{}, {}) exceed the context ({} tokens)", start_pos, end,
               std::min(c.max_seq_len, cache.capacity_tokens()));
  for (int32_t tok : tokens) {
    SLIMKV_CHECK(tok >= 0 && tok < c.vocab_size, "token id {} is outside the vocabulary (0..{})", tok,
                 c.vocab_size - 1);
  }
  const int32_t n = static_cast<int32_t>(tokens.size());
  for (int32_t i = 0; i < n; i += max_chunk_) {
    int32_t len = std::min(max_chunk_, n - i);
    bool last = i + len == n;
    float* out = all_logits ? logits_out + static_cast<size_t>(i) * c.vocab_size : (last ? logits_out : nullptr);
    forward_chunk(tokens.data() + i, len, start_pos + i, cache, all_logits, out);
  }
}

void LlamaForward::forward_chunk(const int32_t* tokens, int32_t T, int32_t start_pos, ContiguousKvCache& cache,
                                 bool all_logits, float* logits_out) {
  const ModelConfig& c = model_.config;
  const int32_t dim = c.dim, kv_dim = c.kv_dim(), hid = c.hidden_dim;
  for (int32_t t = 0; t < T; ++t) dequantize_row(model_.tok_embd, tokens[t], x_.data() + t * dim);

  for (int32_t l = 0; l < c.num_layers; ++l) {
    const LayerWeights& w = model_.layers[l];
    for (int32_t t = 0; t < T; ++t) rmsnorm(xb_.data() + t * dim, x_.data() + t * dim, w.attn_norm, dim, c.rms_eps);
    matmul(w.wq, xb_.data(), T, q_.data(), pool_);
    matmul(w.wk, xb_.data(), T, k_.data(), pool_);
    matmul(w.wv, xb_.data(), T, v_.data(), pool_);
    for (int32_t t = 0; t < T; ++t) {
      rope_.apply(q_.data() + static_cast<size_t>(t) * c.q_dim(), c.num_heads, start_pos + t);
      rope_.apply(k_.data() + static_cast<size_t>(t) * kv_dim, c.num_kv_heads, start_pos + t);
      std::memcpy(cache.k_row(l, start_pos + t), k_.data() + static_cast<size_t>(t) * kv_dim, sizeof(float) * kv_dim);
      std::memcpy(cache.v_row(l, start_pos + t), v_.data() + static_cast<size_t>(t) * kv_dim, sizeof(float) * kv_dim);
    }
    attention(l, T, start_pos, cache);
    matmul(w.wo, att_.data(), T, proj_.data(), pool_);
    for (size_t i = 0; i < static_cast<size_t>(T) * dim; ++i) x_[i] += proj_[i];

    for (int32_t t = 0; t < T; ++t) rmsnorm(xb_.data() + t * dim, x_.data() + t * dim, w.ffn_norm, dim, c.rms_eps);
    matmul(w.w1, xb_.data(), T, hb_.data(), pool_);
    matmul(w.w3, xb_.data(), T, hb2_.data(), pool_);
    swiglu(hb_.data(), hb2_.data(), static_cast<int64_t>(T) * hid);
    matmul(w.w2, hb_.data(), T, proj_.data(), pool_);
    for (size_t i = 0; i < static_cast<size_t>(T) * dim; ++i) x_[i] += proj_[i];
  }
  if (logits_out == nullptr) return;
  int32_t first = all_logits ? 0 : T - 1;
  int32_t rows = T - first;
  for (int32_t t = first; t < T; ++t) {
    rmsnorm(xb_.data() + (t - first) * dim, x_.data() + t * dim, model_.final_norm, dim, c.rms_eps);
  }
  matmul(model_.output, xb_.data(), rows, logits_out, pool_);
}

void LlamaForward::attention(int32_t layer, int32_t T, int32_t start_pos, ContiguousKvCache& cache) {
  const ModelConfig& c = model_.config;
  const int32_t hd = c.head_dim, group = c.num_heads / c.num_kv_heads;
  const float scale = 1.0f / std::sqrt(static_cast<float>(hd));
  const float* k_base = cache.k_row(layer, 0);
  const float* v_base = cache.v_row(layer, 0);
  const int64_t work = static_cast<int64_t>(T) * c.num_heads * (start_pos + T) * hd;
  auto body = [&](int64_t i0, int64_t i1, int32_t thread) {
    float* scores = scores_.data() + static_cast<size_t>(thread) * c.max_seq_len;
    for (int64_t i = i0; i < i1; ++i) {
      int32_t t = static_cast<int32_t>(i / c.num_heads), h = static_cast<int32_t>(i % c.num_heads);
      int32_t kvh = h / group;
      attend_head(q_.data() + (static_cast<size_t>(t) * c.num_heads + h) * hd, k_base + kvh * hd, v_base + kvh * hd,
                  cache.kv_dim(), start_pos + t + 1, hd, scale, scores,
                  att_.data() + (static_cast<size_t>(t) * c.num_heads + h) * hd);
    }
  };
  if (pool_ == nullptr || work < (1 << 15)) {
    body(0, static_cast<int64_t>(T) * c.num_heads, 0);
  } else {
    pool_->parallel_for(static_cast<int64_t>(T) * c.num_heads, 1, body);
  }
}

}  // namespace slimkv
