// DecoderForward's multi-head latent attention (DeepSeek-V2/V3), absorbed as llama.cpp does it: the cache holds one
// record per token, [c_kv | k_pe] (kv_lora + rope values, one "KV head"), whose latent part is also the value.
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
  if (mla_decompress_this_step(l)) {
    mla_decompressed(l);
    ProfScope ps(ProfKind::Matmul);
    matmul(w.wo, mla_o_.data(), T, out, pool_);
    return;
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

MlaAttention parse_mla_attention(const std::string& s) {
  if (s == "absorbed") return MlaAttention::Absorbed;
  if (s == "decompressed") return MlaAttention::Decompressed;
  if (s == "auto") return MlaAttention::Auto;
  fail("--mla-attention must be absorbed, decompressed or auto (got '{}')", s);
}

bool DecoderForward::mla_decompress_this_step(int32_t l) const {
  if (mla_mode_ == MlaAttention::Absorbed) return false;
  const KvLayerGeometry& g = kv_->layout().layers[l];
  if (g.spec.dynamic() || g.spec.window_tokens > 0) return false;  // page tables of live blocks: absorbed only
  if (mla_mode_ == MlaAttention::Decompressed) return true;
  // Cost in multiply-adds per head: absorbed = tokens x ctx x (2 kv_lora + rope); decompressed = per sequence
  // ctx x (nope + v) x kv_lora, then tokens x ctx x (nope + rope + v).
  const MlaConfig& a = model_.config.mla;
  const PagedBatchMeta& m = batch_->attn[g.group];
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

void DecoderForward::mla_decompressed(int32_t l) {
  const ModelConfig& c = model_.config;
  const MlaConfig& a = c.mla;
  const LayerConfig& lc = c.layers[l];
  const LayerWeights& w = model_.layers[l];
  KvStorage& kv = *kv_;
  const KvLayerGeometry& g = kv.layout().layers[l];
  const PagedBatchMeta& m = batch_->attn[g.group];
  const int32_t H = lc.num_heads, L = a.kv_lora_rank, R = a.rope_dim, N = a.nope_dim, V = a.v_head_dim;
  const int32_t qh = N + R, rec = L + R, bs = m.block_size;
  if (mla_kbt_.size() < static_cast<size_t>(c.num_layers)) mla_kbt_.resize(c.num_layers);
  if (mla_kbt_[l].empty()) {  // k_b[h] transposed once: [nope, kv_lora], so decompression is one matmul
    std::vector<float> row(N);
    for (int32_t h = 0; h < H; ++h) {
      auto t = std::make_unique<std::vector<float>>(static_cast<size_t>(N) * L);
      for (int32_t r = 0; r < L; ++r) {
        dequantize_row(w.k_b[h], r, row.data());
        for (int32_t j = 0; j < N; ++j) (*t)[static_cast<size_t>(j) * L + r] = row[j];
      }
      mla_kbt_[l].push_back(WeightView{DType::F32, N, L, t->data()});
      mla_kbt_store_.push_back(std::move(t));
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
    const int32_t nt = pool_ ? pool_->num_threads() : 1;
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
        matmul(mla_kbt_[l][h], dc_c_.data(), ctx, dc_k_.data(), pool_);  // K_nope = C · k_b[h]
        matmul(w.v_b[h], dc_c_.data(), ctx, dc_v_.data(), pool_);       // V = C · v_b[h]^T
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
          dot.attend(mla_q_.data() + (t * H + h) * qh, pk, m.token_pos[t] + 1, c.attn_scale, scores,
                     mla_o_.data() + (t * H + h) * V);
        }
      };
      if (pool_ && toks.size() > 1) {
        pool_->parallel_for(static_cast<int64_t>(toks.size()), 1, attend_tokens);
      } else {
        attend_tokens(0, static_cast<int64_t>(toks.size()), 0);
      }
    }
  }
}
}  // namespace slimkv
