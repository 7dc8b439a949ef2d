// Multi-head latent attention (blocks/mla_attention.h), absorbed as llama.cpp does it:
//   q = wq_b · rmsnorm(wq_a · x) (or wq · x), per head [q_nope | q_pe];  [c_kv | k_pe] = wkv_a · x,
//   c_kv = rmsnorm(c_kv) * kv_a_norm;  RoPE (the model's) on q_pe and k_pe;
//   Q_h = [k_b[h] · q_nope_h | q_pe_h];  o_h = softmax(scale · Q_h · K^T) · V (V = the latents, MQA over one head);
//   out = wo · concat_h(v_b[h] · o_h).
#include <cmath>
#include <cstring>
#include <memory>

#include "core/check.h"
#include "core/profiler.h"
#include "kernels/dot.h"
#include "kernels/kv_codec.h"
#include "kernels/ops.h"
#include "model/blocks/mla_attention.h"
#include "model/weight_binder.h"

namespace slimkv {
namespace {

void grow(std::vector<float>& v, size_t n) {
  if (v.size() < n) v.resize(n);
}

}  // namespace

void MlaAttentionBlock::run(DecoderForward& f, int32_t l, const float* in, float* out) {
  const ModelConfig& c = f.model().config;
  const MlaConfig& a = c.mla;
  const LayerConfig& lc = c.layers[l];
  const LayerWeights& w = f.model().layers[l];
  const ForwardBatch& b = f.batch();
  KvStorage& kv = f.kv();
  const int32_t T = f.num_tokens(), H = lc.num_heads, L = a.kv_lora_rank, R = a.rope_dim, N = a.nope_dim, V = a.v_head_dim;
  const int32_t qh = N + R, rec = L + R;
  const size_t t_ = static_cast<size_t>(T);
  grow(q_, t_ * H * qh);
  grow(kv_, t_ * rec);
  grow(in_, t_ * std::max(N, L));
  grow(out_, t_ * std::max(L, V));
  grow(o_, t_ * H * V);
  grow(qabs_, t_ * H * rec);
  grow(att_, t_ * H * L);
  {
    ProfScope ps(ProfKind::Matmul);
    if (w.wq_a.data) {
      grow(qa_, t_ * a.q_lora_rank);
      f.ops().matmul(w.wq_a, in, T, qa_.data());
      f.ops().rmsnorm_rows(qa_.data(), qa_.data(), w.q_a_norm, T, a.q_lora_rank, c.rms_eps);
      f.ops().matmul(w.wq_b, qa_.data(), T, q_.data());
    } else {
      f.ops().matmul(w.wq, in, T, q_.data());
    }
    f.ops().matmul(w.wkv_a, in, T, kv_.data());
  }
  const KvLayerGeometry& g = kv.layout().layers[l];
  const std::vector<int64_t>& slots = b.slots[g.group];
  const RopeTable& rope = f.rope(l);
  for (int32_t t = 0; t < T; ++t) {
    ProfScope ps(ProfKind::KvWrite);
    float* rec_t = kv_.data() + static_cast<size_t>(t) * rec;
    rmsnorm(rec_t, rec_t, w.kv_a_norm, L, c.rms_eps);
    rope.apply(rec_t + L, 1, b.positions[t], rec);
    rope.apply(q_.data() + static_cast<size_t>(t) * H * qh + N, H, b.positions[t], qh);
    f.write_kv(kv, l, slots[t], rec_t, nullptr);
  }
  // Absorb: Q_h = [k_b[h] · q_nope_h | q_pe_h] into q_ ([T, H * rec]).
  for (int32_t h = 0; h < H; ++h) {
    for (int32_t t = 0; t < T; ++t) {
      const float* src = q_.data() + (static_cast<size_t>(t) * H + h) * qh;
      std::memcpy(in_.data() + static_cast<size_t>(t) * N, src, sizeof(float) * N);
    }
    {
      ProfScope ps(ProfKind::Matmul);
      f.ops().matmul(w.k_b[h], in_.data(), T, out_.data());
    }
    for (int32_t t = 0; t < T; ++t) {
      float* dst = qabs_.data() + (static_cast<size_t>(t) * H + h) * rec;
      std::memcpy(dst, out_.data() + static_cast<size_t>(t) * L, sizeof(float) * L);
      std::memcpy(dst + L, q_.data() + (static_cast<size_t>(t) * H + h) * qh + N, sizeof(float) * R);
    }
  }
  if (decompress_this_step(f, l)) {
    decompressed(f, l);
    {
      ProfScope ps(ProfKind::Matmul);
      f.ops().matmul(w.wo, o_.data(), T, out);
    }
    f.ops().all_reduce_sum(out, static_cast<int64_t>(T) * c.dim);
    return;
  }
  {
    ProfScope ps(ProfKind::Attention);
    f.ops().attention(f.attention_plan(g.group), qabs_.data(), f.layer_kv(l), {H, 1, rec, L, c.attn_scale},
                      att_.data());
  }
  // Out of the latent space: o_h = v_b[h] · latent output of head h.
  for (int32_t h = 0; h < H; ++h) {
    for (int32_t t = 0; t < T; ++t) {
      std::memcpy(in_.data() + static_cast<size_t>(t) * L, att_.data() + (static_cast<size_t>(t) * H + h) * L,
                  sizeof(float) * L);
    }
    {
      ProfScope ps(ProfKind::Matmul);
      f.ops().matmul(w.v_b[h], in_.data(), T, out_.data());
    }
    for (int32_t t = 0; t < T; ++t) {
      std::memcpy(o_.data() + (static_cast<size_t>(t) * H + h) * V, out_.data() + static_cast<size_t>(t) * V,
                  sizeof(float) * V);
    }
  }
  {
    ProfScope ps(ProfKind::Matmul);
    f.ops().matmul(w.wo, o_.data(), T, out);
  }
  f.ops().all_reduce_sum(out, static_cast<int64_t>(T) * c.dim);  // heads split over ranks sum here
}

bool MlaAttentionBlock::decompress_this_step(const DecoderForward& f, int32_t l) const {
  if (f.block_options().mla_attention == MlaAttention::Absorbed) return false;
  const KvLayerGeometry& g = f.kv().layout().layers[l];
  if (g.spec.dynamic() || g.spec.windowed()) return false;  // page tables of live blocks: absorbed only
  if (f.block_options().mla_attention == MlaAttention::Decompressed) return true;
  // Cost in multiply-adds per head: absorbed = tokens x ctx x (2 kv_lora + rope); decompressed = per sequence
  // ctx x (nope + v) x kv_lora, then tokens x ctx x (nope + rope + v).
  const MlaConfig& a = f.model().config.mla;
  const PagedBatchMeta& m = f.batch().attn[g.group];
  std::vector<int64_t> ctx(m.kv_indptr.size(), 0), n(m.kv_indptr.size(), 0);
  for (size_t t = 0; t < m.token_pos.size(); ++t) {
    ctx[m.token_seq[t]] = std::max<int64_t>(ctx[m.token_seq[t]], m.token_pos[t] + 1);
    ++n[m.token_seq[t]];
  }
  double absorbed = 0, decompressed = 0;
  for (size_t s = 0; s < ctx.size(); ++s) {
    absorbed += static_cast<double>(n[s]) * ctx[s] * (2.0 * a.kv_lora_rank + a.rope_dim);
    decompressed += static_cast<double>(ctx[s]) * (a.nope_dim + a.v_head_dim) * a.kv_lora_rank +
                    static_cast<double>(n[s]) * ctx[s] * (a.nope_dim + a.rope_dim + a.v_head_dim);
  }
  return decompressed < absorbed;
}

void MlaAttentionBlock::decompressed(DecoderForward& f, int32_t l) {
  const ModelConfig& c = f.model().config;
  const MlaConfig& a = c.mla;
  const LayerConfig& lc = c.layers[l];
  const LayerWeights& w = f.model().layers[l];
  KvStorage& kv = f.kv();
  const KvLayerGeometry& g = kv.layout().layers[l];
  const PagedBatchMeta& m = f.batch().attn[g.group];
  const int32_t H = lc.num_heads, L = a.kv_lora_rank, R = a.rope_dim, N = a.nope_dim, V = a.v_head_dim;
  const int32_t qh = N + R, rec = L + R, bs = m.block_size;
  if (kbt_.size() < static_cast<size_t>(c.num_layers)) kbt_.resize(c.num_layers);
  if (kbt_[l].empty()) {  // k_b[h] transposed once: [nope, kv_lora], so decompression is one matmul
    std::vector<float> row(N);
    for (int32_t h = 0; h < H; ++h) {
      auto t = std::make_unique<std::vector<float>>(static_cast<size_t>(N) * L);
      for (int32_t r = 0; r < L; ++r) {
        dequantize_row(w.k_b[h], r, row.data());
        for (int32_t j = 0; j < N; ++j) (*t)[static_cast<size_t>(j) * L + r] = row[j];
      }
      kbt_[l].push_back(WeightView{DType::F32, N, L, t->data()});
      kbt_store_.push_back(std::move(t));
    }
  }
  const DotKernels& dot = dot_kernels();
  std::vector<float> rec_row(rec);
  for (size_t s = 0; s + 1 < m.kv_indptr.size(); ++s) {
    int32_t ctx = 0;
    for (size_t t = 0; t < m.token_pos.size(); ++t) {
      if (m.token_seq[t] == static_cast<int32_t>(s)) ctx = std::max(ctx, m.token_pos[t] + 1);
    }
    if (ctx == 0) continue;
    grow(dc_c_, static_cast<size_t>(ctx) * L);
    grow(dc_pe_, static_cast<size_t>(ctx) * R);
    grow(dc_k_, static_cast<size_t>(ctx) * N);
    grow(dc_v_, static_cast<size_t>(ctx) * V);
    for (int32_t p = 0; p < ctx; ++p) {  // the sequence's records, decoded
      const int64_t slot = static_cast<int64_t>(m.kv_indices[m.kv_indptr[s] + p / bs]) * bs + p % bs;
      decode_kv_record(kv.k_head(l, slot, 0), rec, g.k_split(), g.dtype, rec_row.data());
      if (g.rotate) hadamard_unrotate_record(rec_row.data(), rec, g.k_split());
      std::memcpy(dc_c_.data() + static_cast<size_t>(p) * L, rec_row.data(), sizeof(float) * L);
      std::memcpy(dc_pe_.data() + static_cast<size_t>(p) * R, rec_row.data() + L, sizeof(float) * R);
    }
    // Per head: K = [C · k_b[h] | k_pe] ([ctx, nope + rope]) and V = C · v_b[h]^T ([ctx, v]) as one contiguous
    // "page", then each of the sequence's query tokens attends it through the ISA's attention kernel, tokens
    // spread over the threads.
    const int32_t kd = N + R;
    grow(dc_kf_, static_cast<size_t>(ctx) * kd);
    const int32_t nt = f.pool() ? f.pool()->num_threads() : 1;
    grow(dc_s_, static_cast<size_t>(nt) * ctx);
    std::vector<int32_t> toks;
    for (size_t t = 0; t < m.token_pos.size(); ++t) {
      if (m.token_seq[t] == static_cast<int32_t>(s)) toks.push_back(static_cast<int32_t>(t));
    }
    const int32_t block0 = 0;
    PagedKv pk;
    pk.k_base = reinterpret_cast<const uint8_t*>(dc_kf_.data());
    pk.v_base = reinterpret_cast<const uint8_t*>(dc_v_.data());
    pk.block_ids = &block0;
    pk.block_size = ctx;
    pk.k_row_bytes = static_cast<int64_t>(kd) * 4;
    pk.v_row_bytes = static_cast<int64_t>(V) * 4;
    pk.k_dim = kd;
    pk.v_dim = V;
    for (int32_t h = 0; h < H; ++h) {
      {
        ProfScope ps(ProfKind::Matmul);
        f.ops().matmul(kbt_[l][h], dc_c_.data(), ctx, dc_k_.data());  // K_nope = C · k_b[h]
        f.ops().matmul(w.v_b[h], dc_c_.data(), ctx, dc_v_.data());       // V = C · v_b[h]^T
      }
      ProfScope ps(ProfKind::Attention);
      for (int32_t p = 0; p < ctx; ++p) {
        float* kr = dc_kf_.data() + static_cast<size_t>(p) * kd;
        std::memcpy(kr, dc_k_.data() + static_cast<size_t>(p) * N, sizeof(float) * N);
        std::memcpy(kr + N, dc_pe_.data() + static_cast<size_t>(p) * R, sizeof(float) * R);
      }
      auto attend_tokens = [&](int64_t i0, int64_t i1, int32_t thread) {
        float* scores = dc_s_.data() + static_cast<size_t>(thread) * ctx;
        for (int64_t i = i0; i < i1; ++i) {
          const size_t t = static_cast<size_t>(toks[i]);
          dot.attend(q_.data() + (t * H + h) * qh, pk, m.token_pos[t] + 1, c.attn_scale, scores,
                     o_.data() + (t * H + h) * V);
        }
      };
      if (f.pool() && toks.size() > 1) {
        f.pool()->parallel_for(static_cast<int64_t>(toks.size()), 1, attend_tokens);
      } else {
        attend_tokens(0, static_cast<int64_t>(toks.size()), 0);
      }
    }
  }
}

void MlaAttentionBlock::bind(LayerBinder& b, int32_t l) {
  const ModelConfig& c = b.config();
  Model& m = b.model();
  const LayerConfig& lc = c.layers[l];
  const MlaConfig& a = c.mla;
  LayerWeights& w = m.layers[l];
  const int64_t dim = c.dim, H = lc.num_heads, qh = a.q_head_dim();
  if (a.q_lora_rank > 0) {
    w.wq_a = b.matrix(TensorRole::AttnQA, l, a.q_lora_rank, dim);
    w.q_a_norm = b.vector(TensorRole::AttnQANorm, l, a.q_lora_rank);
    w.wq_b = b.matrix(TensorRole::AttnQB, l, H * qh, a.q_lora_rank);
  } else {
    w.wq = b.matrix(TensorRole::AttnQ, l, H * qh, dim);
  }
  w.wkv_a = b.matrix(TensorRole::AttnKvAMqa, l, a.kv_lora_rank + a.rope_dim, dim);
  w.kv_a_norm = b.vector(TensorRole::AttnKvANorm, l, a.kv_lora_rank);
  if (b.names(TensorRole::AttnKB) && b.find(TensorRole::AttnKB, l, 0, false)) {
    w.k_b = b.experts(TensorRole::AttnKB, l, a.kv_lora_rank, a.nope_dim, static_cast<int32_t>(H));
    w.v_b = b.experts(TensorRole::AttnVB, l, a.v_head_dim, a.kv_lora_rank, static_cast<int32_t>(H));
  } else {
    bind_fused_kv_b(b, l);
  }
  w.wo = b.matrix(TensorRole::AttnOut, l, dim, H * a.v_head_dim);
}

// kv_b [H * (nope + v), kv_lora]: head h's first nope rows are its key up-projection (k_b[h] is their transpose,
// [kv_lora, nope], so it absorbs q), the next v rows its value up-projection v_b[h].
void MlaAttentionBlock::bind_fused_kv_b(LayerBinder& b, int32_t l) {
  const ModelConfig& c = b.config();
  Model& m = b.model();
  const MlaConfig& a = c.mla;
  LayerWeights& w = m.layers[l];
  const int64_t H = c.layers[l].num_heads;
  const TensorRef* t = b.find(TensorRole::AttnKvB, l);
  SLIMKV_CHECK(t != nullptr, "{}: layer {} has neither attn_k_b/attn_v_b nor a kv_b projection", b.source(), l);
  const int64_t per = a.nope_dim + a.v_head_dim;
  const WeightView kv_b = b.matrix(*t, H * per, a.kv_lora_rank);
  std::vector<float> row(a.kv_lora_rank);
  for (int64_t h = 0; h < H; ++h) {
    std::vector<float> kb(static_cast<size_t>(a.kv_lora_rank) * a.nope_dim);
    for (int64_t n = 0; n < a.nope_dim; ++n) {
      dequantize_row(kv_b, h * per + n, row.data());
      for (int64_t r = 0; r < a.kv_lora_rank; ++r) kb[static_cast<size_t>(r) * a.nope_dim + n] = row[r];
    }
    w.k_b.push_back(WeightView{DType::F32, a.kv_lora_rank, a.nope_dim, m.own_f32(std::move(kb))});
    w.v_b.push_back(LayerBinder::slice_rows(kv_b, h * per + a.nope_dim, a.v_head_dim));
  }
}

}  // namespace slimkv
