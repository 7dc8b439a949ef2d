#include "kernels/paged_attention.h"

#include <algorithm>
#include <cmath>

#include "core/check.h"
#include "kernels/kv_codec.h"

namespace slimkv {

void PagedAttention::plan(const PagedBatchMeta& meta, const AttentionDims& dims, int32_t num_threads) {
  SLIMKV_CHECK(meta.token_seq.size() == meta.token_pos.size(), "paged attention: token arrays differ in length");
  SLIMKV_CHECK(dims.num_kv_heads > 0 && dims.num_heads % dims.num_kv_heads == 0, "paged attention: bad head counts");
  meta_ = &meta;
  dims_ = dims;
  max_ctx_ = 0;
  work_ = 0;
  for (size_t t = 0; t < meta.token_pos.size(); ++t) {
    const int32_t s = meta.token_seq[t], ctx = meta.token_ctx.empty() ? meta.token_pos[t] + 1 : meta.token_ctx[t];
    SLIMKV_CHECK(s >= 0 && s + 1 < static_cast<int32_t>(meta.kv_indptr.size()), "paged attention: bad sequence index");
    const int64_t pages = meta.kv_indptr[s + 1] - meta.kv_indptr[s];
    SLIMKV_CHECK(ctx <= pages * meta.block_size, "paged attention: position {} beyond the sequence's {} pages",
                 ctx - 1, pages);
    max_ctx_ = std::max(max_ctx_, ctx);
    work_ += static_cast<int64_t>(ctx) * dims.head_dim * dims.num_heads;
  }
  const size_t need = static_cast<size_t>(std::max(num_threads, 1)) * std::max(max_ctx_, 1);
  if (scores_.size() < need) scores_.resize(need);
  page_importance_.assign(meta.kv_indices.size(), 0.0f);
  if (!meta.token_track.empty()) {
    const size_t p = meta.token_pos.size() * dims.num_heads * static_cast<size_t>(std::max(max_ctx_, 1));
    if (probs_.size() < p) probs_.resize(p);
  }
}

void PagedAttention::run(const float* q, const LayerKv& layer, float* out, ThreadPool* pool, Isa isa) {
  const PagedBatchMeta& m = *meta_;
  const int32_t nh = dims_.num_heads, hd = dims_.head_dim, group = dims_.num_heads / dims_.num_kv_heads;
  const float scale = 1.0f / std::sqrt(static_cast<float>(hd));
  const DotKernels& k = dot_kernels(isa);
  const int64_t n = static_cast<int64_t>(m.token_pos.size()) * nh;
  const bool direct_out = !layer.rotate && layer.v_proj == nullptr;
  auto body = [&](int64_t i0, int64_t i1, int32_t thread) {
    float* scores = scores_.data() + static_cast<size_t>(thread) * max_ctx_;
    float qr[1024], lat[1024];  // query in the stored basis; output in the stored basis (dims <= 1024)
    for (int64_t i = i0; i < i1; ++i) {
      const int64_t t = i / nh;
      const int32_t h = static_cast<int32_t>(i % nh), kvh = h / group, s = m.token_seq[t];
      PagedKv kv;
      // One plane per KV head (kv/kv_storage.h): this head's rows, slot after slot.
      kv.k_base = layer.k + static_cast<int64_t>(kvh) * layer.k_head_stride_bytes;
      kv.v_base = layer.v + static_cast<int64_t>(kvh) * layer.v_head_stride_bytes;
      kv.block_ids = m.kv_indices.data() + m.kv_indptr[s];
      kv.block_size = m.block_size;
      kv.k_row_bytes = layer.k_head_bytes;
      kv.v_row_bytes = layer.v_head_bytes;
      kv.dtype = layer.dtype;
      kv.k_dim = layer.k_dim;
      kv.v_dim = layer.v_dim;
      int64_t num_ctx = m.token_ctx.empty() ? m.token_pos[t] + 1 : m.token_ctx[t];
      if (!m.seq_has_summary.empty() && m.seq_has_summary[s]) {
        kv.row_bias = m.seq_summary_bias.data() + static_cast<size_t>(s) * m.block_size;
        kv.num_bias_rows = m.block_size;
      }
      if (layer.window_tokens > 0 && num_ctx > layer.sink_tokens + layer.window_tokens) {
        kv.sink_tokens = layer.sink_tokens;
        kv.window_begin = num_ctx - layer.window_tokens;
        num_ctx = layer.sink_tokens + layer.window_tokens;
      }
      const float* qh = q + i * hd;
      if (layer.k_proj) {  // score in the latent space: (P q)·(P k) = q·(PᵀP k)
        const float* p = layer.k_proj + static_cast<int64_t>(kvh) * layer.k_dim * hd;
        for (int32_t r = 0; r < layer.k_dim; ++r) qr[r] = k.f32(p + static_cast<int64_t>(r) * hd, qh, hd);
        qh = qr;
      } else if (layer.rotate) {
        std::copy(qh, qh + hd, qr);
        qh = qr;
      }
      if (layer.rotate) hadamard_rotate(qr, layer.k_dim);  // (Hq)·(Hk) = q·k
      float* o = direct_out ? out + i * hd : lat;
      k.attend(qh, kv, num_ctx, scale, scores, o);
      if (!m.token_track.empty() && m.token_track[t]) {  // scores hold exp(s - max): normalise and keep
        double sum = 0;
        for (int64_t r = 0; r < num_ctx; ++r) sum += scores[r];
        float* pr = probs_.data() + static_cast<size_t>(i) * max_ctx_;
        for (int64_t r = 0; r < num_ctx; ++r) pr[r] = static_cast<float>(scores[r] / sum);
      }
      if (layer.rotate) hadamard_unrotate(o, layer.v_dim);  // sum_t p_t (H v_t) = H (sum_t p_t v_t)
      if (layer.v_proj) {  // back from the latent space once: out = Pᵀ (sum_t p_t P v_t)
        const float* p = layer.v_proj + static_cast<int64_t>(kvh) * layer.v_dim * hd;
        float* dst = out + i * hd;
        std::fill(dst, dst + hd, 0.0f);
        for (int32_t r = 0; r < layer.v_dim; ++r) k.axpy(o[r], p + static_cast<int64_t>(r) * hd, dst, hd);
      } else if (!direct_out) {
        std::copy(o, o + hd, out + i * hd);
      }
    }
  };
  if (pool == nullptr || work_ < (1 << 15)) body(0, n, 0);
  else pool->parallel_for(n, 1, body);
  if (m.token_track.empty()) return;
  for (int64_t i = 0; i < n; ++i) {  // fixed order: query token, then head
    const int64_t t = i / nh;
    if (!m.token_track[t]) continue;
    const int32_t s = m.token_seq[t];
    const float* pr = probs_.data() + static_cast<size_t>(i) * max_ctx_;
    for (int64_t r = 0; r < m.token_ctx[t]; ++r) page_importance_[m.kv_indptr[s] + r / m.block_size] += pr[r];
  }
}

}  // namespace slimkv
