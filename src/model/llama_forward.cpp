#include "model/llama_forward.h"

#include <cstring>

#include "core/check.h"
#include "core/profiler.h"
#include "kernels/kv_codec.h"

namespace slimkv {

LlamaForward::LlamaForward(const Model& model, ThreadPool* pool) : model_(model), pool_(pool) {
  const ModelConfig& c = model.config;
  rope_.init(c.max_seq_len, c.head_dim, c.rotary_dim, c.rope_theta, c.rope_layout);
  reserve(1, 1);
}

KvLayout LlamaForward::kv_layout(int32_t block_size_tokens, const CompressionConfig& cc) const {
  const ModelConfig& c = model_.config;
  return cc.layout(c.num_layers, c.num_kv_heads, c.head_dim, block_size_tokens);
}

void LlamaForward::write_kv(KvStorage& kv, int32_t l, int64_t slot, const float* k_row, const float* v_row) {
  const KvLayerGeometry& g = kv.layout().layers[l];
  if (g.is_plain_f32()) {  // the uncompressed cache: plain copies (bit-identical to no compression at all)
    for (int32_t h = 0; h < g.num_kv_heads; ++h) {
      std::memcpy(kv.k_head(l, slot, h), k_row + static_cast<size_t>(h) * g.head_dim, sizeof(float) * g.head_dim);
      std::memcpy(kv.v_head(l, slot, h), v_row + static_cast<size_t>(h) * g.head_dim, sizeof(float) * g.head_dim);
    }
    return;
  }
  const int32_t hd = g.head_dim;
  head_.resize(hd);
  const LayerProjection* lp = kv_proj_.empty() ? nullptr : &kv_proj_[l];
  for (int32_t h = 0; h < g.num_kv_heads; ++h) {
    for (int which = 0; which < 2; ++which) {
      const float* src = (which == 0 ? k_row : v_row) + static_cast<size_t>(h) * hd;
      const int32_t dim = which == 0 ? g.k_dim : g.v_dim;
      const std::vector<float>* basis = lp ? (which == 0 ? &lp->k : &lp->v) : nullptr;
      if (basis && !basis->empty()) {  // latent = P x, P: [dim, head_dim] for this head
        const float* p = basis->data() + static_cast<size_t>(h) * dim * hd;
        for (int32_t r = 0; r < dim; ++r) {
          float acc = 0;
          for (int32_t j = 0; j < hd; ++j) acc += p[static_cast<size_t>(r) * hd + j] * src[j];
          head_[r] = acc;
        }
      } else {
        std::copy(src, src + hd, head_.begin());
      }
      if (g.rotate) hadamard_rotate(head_.data(), dim);
      uint8_t* dst = which == 0 ? kv.k_head(l, slot, h) : kv.v_head(l, slot, h);
      encode_kv_head(head_.data(), dim, g.dtype, dst);
    }
  }
}

void LlamaForward::reserve(int32_t T, int32_t rows) {
  const ModelConfig& c = model_.config;
  if (T > capacity_) {
    capacity_ = T;
    const size_t t = T;
    x_.resize(t * c.dim);
    xb_.resize(t * c.dim);
    q_.resize(t * c.q_dim());
    k_.resize(t * c.kv_dim());
    v_.resize(t * c.kv_dim());
    att_.resize(t * c.q_dim());
    proj_.resize(t * c.dim);
    hb_.resize(t * c.hidden_dim);
    hb2_.resize(t * c.hidden_dim);
  }
  if (rows > logits_capacity_) {
    logits_capacity_ = rows;
    final_.resize(static_cast<size_t>(rows) * c.dim);
  }
}

void LlamaForward::forward(const ForwardBatch& b, KvStorage& kv, float* logits_out) {
  const ModelConfig& c = model_.config;
  const int32_t T = b.num_tokens();
  SLIMKV_CHECK(T > 0, "forward: empty batch");
  SLIMKV_CHECK(b.positions.size() == static_cast<size_t>(T) && b.slots.size() == static_cast<size_t>(T),
               "forward: batch arrays differ in length");
  for (int32_t t = 0; t < T; ++t) {
    SLIMKV_CHECK(b.token_ids[t] >= 0 && b.token_ids[t] < c.vocab_size,
                 "token id {} is outside the vocabulary (0..{})", b.token_ids[t], c.vocab_size - 1);
    SLIMKV_CHECK(b.positions[t] >= 0 && b.positions[t] < c.max_seq_len,
                 "position {} exceeds the model context ({} tokens)", b.positions[t], c.max_seq_len);
    SLIMKV_CHECK(b.slots[t] >= 0 && b.slots[t] < static_cast<int64_t>(kv.num_blocks()) * kv.layout().block_size_tokens,
                 "forward: KV slot {} out of range", b.slots[t]);
  }
  reserve(T, static_cast<int32_t>(b.logits_rows.size()));
  const int32_t dim = c.dim, kv_dim = c.kv_dim(), hid = c.hidden_dim, qd = c.q_dim();
  attention_.plan(b.attn, {c.num_heads, c.num_kv_heads, c.head_dim}, pool_ ? pool_->num_threads() : 1);
  for (int32_t t = 0; t < T; ++t) dequantize_row(model_.tok_embd, b.token_ids[t], x_.data() + static_cast<size_t>(t) * dim);

  for (int32_t l = 0; l < c.num_layers; ++l) {
    const LayerWeights& w = model_.layers[l];
    for (int32_t t = 0; t < T; ++t) rmsnorm(xb_.data() + t * dim, x_.data() + t * dim, w.attn_norm, dim, c.rms_eps);
    {
      ProfScope ps(ProfKind::Matmul);
      matmul(w.wq, xb_.data(), T, q_.data(), pool_);
      matmul(w.wk, xb_.data(), T, k_.data(), pool_);
      matmul(w.wv, xb_.data(), T, v_.data(), pool_);
    }
    for (int32_t t = 0; t < T; ++t) {
      ProfScope ps(ProfKind::KvWrite);
      rope_.apply(q_.data() + static_cast<size_t>(t) * qd, c.num_heads, b.positions[t]);
      rope_.apply(k_.data() + static_cast<size_t>(t) * kv_dim, c.num_kv_heads, b.positions[t]);
      write_kv(kv, l, b.slots[t], k_.data() + static_cast<size_t>(t) * kv_dim,
               v_.data() + static_cast<size_t>(t) * kv_dim);
    }
    if (observer_) observer_(l, k_.data(), v_.data(), T);
    const KvLayerGeometry& g = kv.layout().layers[l];
    PagedAttention::LayerKv lk{kv.k_base(l), kv.v_base(l), g.k_dim, g.v_dim, g.k_head_bytes(), g.v_head_bytes(),
                               kv.k_head_stride_bytes(l), kv.v_head_stride_bytes(l), g.dtype, g.rotate};
    lk.sink_tokens = sink_tokens_;
    lk.window_tokens = window_tokens_;
    if (!kv_proj_.empty()) {
      if (!kv_proj_[l].k.empty()) lk.k_proj = kv_proj_[l].k.data();
      if (!kv_proj_[l].v.empty()) lk.v_proj = kv_proj_[l].v.data();
    }
    {
      ProfScope ps(ProfKind::Attention);
      attention_.run(q_.data(), lk, att_.data(), pool_);
    }
    {
      ProfScope ps(ProfKind::Matmul);
      matmul(w.wo, att_.data(), T, proj_.data(), pool_);
    }
    for (size_t i = 0; i < static_cast<size_t>(T) * dim; ++i) x_[i] += proj_[i];

    for (int32_t t = 0; t < T; ++t) rmsnorm(xb_.data() + t * dim, x_.data() + t * dim, w.ffn_norm, dim, c.rms_eps);
    {
      ProfScope ps(ProfKind::Matmul);
      matmul(w.w1, xb_.data(), T, hb_.data(), pool_);
      matmul(w.w3, xb_.data(), T, hb2_.data(), pool_);
    }
    swiglu(hb_.data(), hb2_.data(), static_cast<int64_t>(T) * hid);
    {
      ProfScope ps(ProfKind::Matmul);
      matmul(w.w2, hb_.data(), T, proj_.data(), pool_);
    }
    for (size_t i = 0; i < static_cast<size_t>(T) * dim; ++i) x_[i] += proj_[i];
  }
  const int32_t rows = static_cast<int32_t>(b.logits_rows.size());
  if (rows == 0) return;
  for (int32_t r = 0; r < rows; ++r) {
    const int32_t t = b.logits_rows[r];
    SLIMKV_CHECK(t >= 0 && t < T, "forward: logits row {} outside the batch", t);
    rmsnorm(final_.data() + static_cast<size_t>(r) * dim, x_.data() + static_cast<size_t>(t) * dim, model_.final_norm,
            dim, c.rms_eps);
  }
  ProfScope ps(ProfKind::Matmul);
  matmul(model_.output, final_.data(), rows, logits_out, pool_);
}

}  // namespace slimkv
