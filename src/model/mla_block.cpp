// DecoderForward's multi-head latent attention (DeepSeek-V2/V3), absorbed as llama.cpp does it: the cache holds one
// record per token, [c_kv | k_pe] (kv_lora + rope values, one "KV head"), whose latent part is also the value.
//   q = wq_b · rmsnorm(wq_a · x) (or wq · x), per head [q_nope | q_pe];  [c_kv | k_pe] = wkv_a · x,
//   c_kv = rmsnorm(c_kv) * kv_a_norm;  RoPE (the model's) on q_pe and k_pe;
//   Q_h = [k_b[h] · q_nope_h | q_pe_h];  o_h = softmax(scale · Q_h · K^T) · V (V = the latents, MQA over one head);
//   out = wo · concat_h(v_b[h] · o_h).
#include <cstring>

#include "core/check.h"
#include "core/profiler.h"
#include "kernels/ops.h"
#include "model/decoder_forward.h"

namespace slimkv {
namespace {

void grow(std::vector<float>& v, size_t n) {
  if (v.size() < n) v.resize(n);
}

}  // namespace

void DecoderForward::mla_attention(int32_t l, const float* in, float* out) {
  const ModelConfig& c = model_.config;
  const MlaConfig& a = c.mla;
  const LayerConfig& lc = c.layers[l];
  const LayerWeights& w = model_.layers[l];
  const ForwardBatch& b = *batch_;
  KvStorage& kv = *kv_;
  const int32_t T = T_, H = lc.num_heads, L = a.kv_lora_rank, R = a.rope_dim, N = a.nope_dim, V = a.v_head_dim;
  const int32_t qh = N + R, rec = L + R;
  const size_t t_ = static_cast<size_t>(T);
  grow(mla_q_, t_ * H * qh);
  grow(mla_kv_, t_ * rec);
  grow(mla_in_, t_ * std::max(N, L));
  grow(mla_out_, t_ * std::max(L, V));
  grow(mla_o_, t_ * H * V);
  {
    ProfScope ps(ProfKind::Matmul);
    if (w.wq_a.data) {
      grow(mla_qa_, t_ * a.q_lora_rank);
      matmul(w.wq_a, in, T, mla_qa_.data(), pool_);
      rmsnorm_rows(mla_qa_.data(), mla_qa_.data(), w.q_a_norm, T, a.q_lora_rank, c.rms_eps);
      matmul(w.wq_b, mla_qa_.data(), T, mla_q_.data(), pool_);
    } else {
      matmul(w.wq, in, T, mla_q_.data(), pool_);
    }
    matmul(w.wkv_a, in, T, mla_kv_.data(), pool_);
  }
  const KvLayerGeometry& g = kv.layout().layers[l];
  const std::vector<int64_t>& slots = b.slots[g.group];
  const RopeTable& rope = ropes_[layer_rope_[l]];
  for (int32_t t = 0; t < T; ++t) {
    ProfScope ps(ProfKind::KvWrite);
    float* rec_t = mla_kv_.data() + static_cast<size_t>(t) * rec;
    rmsnorm(rec_t, rec_t, w.kv_a_norm, L, c.rms_eps);
    rope.apply(rec_t + L, 1, b.positions[t], rec);
    rope.apply(mla_q_.data() + static_cast<size_t>(t) * H * qh + N, H, b.positions[t], qh);
    write_kv(kv, l, slots[t], rec_t, nullptr);
  }
  // Absorb: Q_h = [k_b[h] · q_nope_h | q_pe_h] into q_ ([T, H * rec]).
  for (int32_t h = 0; h < H; ++h) {
    for (int32_t t = 0; t < T; ++t) {
      const float* src = mla_q_.data() + (static_cast<size_t>(t) * H + h) * qh;
      std::memcpy(mla_in_.data() + static_cast<size_t>(t) * N, src, sizeof(float) * N);
    }
    {
      ProfScope ps(ProfKind::Matmul);
      matmul(w.k_b[h], mla_in_.data(), T, mla_out_.data(), pool_);
    }
    for (int32_t t = 0; t < T; ++t) {
      float* dst = q_.data() + (static_cast<size_t>(t) * H + h) * rec;
      std::memcpy(dst, mla_out_.data() + static_cast<size_t>(t) * L, sizeof(float) * L);
      std::memcpy(dst + L, mla_q_.data() + (static_cast<size_t>(t) * H + h) * qh + N, sizeof(float) * R);
    }
  }
  {
    ProfScope ps(ProfKind::Attention);
    attention_[g.group].run(q_.data(), layer_kv(l), {H, 1, rec, L, c.attn_scale}, att_.data(), pool_);
  }
  // Out of the latent space: o_h = v_b[h] · latent output of head h.
  for (int32_t h = 0; h < H; ++h) {
    for (int32_t t = 0; t < T; ++t) {
      std::memcpy(mla_in_.data() + static_cast<size_t>(t) * L, att_.data() + (static_cast<size_t>(t) * H + h) * L,
                  sizeof(float) * L);
    }
    {
      ProfScope ps(ProfKind::Matmul);
      matmul(w.v_b[h], mla_in_.data(), T, mla_out_.data(), pool_);
    }
    for (int32_t t = 0; t < T; ++t) {
      std::memcpy(mla_o_.data() + (static_cast<size_t>(t) * H + h) * V, mla_out_.data() + static_cast<size_t>(t) * V,
                  sizeof(float) * V);
    }
  }
  ProfScope ps(ProfKind::Matmul);
  matmul(w.wo, mla_o_.data(), T, out, pool_);
}

}  // namespace slimkv
