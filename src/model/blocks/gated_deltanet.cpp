#include "model/blocks/gated_deltanet.h"

#include <algorithm>
#include <cmath>
#include <cstring>

#include "core/check.h"
#include "core/profiler.h"

namespace slimkv {
namespace {

float silu(float x) { return x / (1.0f + std::exp(-x)); }
float softplus(float x) { return x > 20.0f ? x : std::log(1.0f + std::exp(x)); }  // ggml's threshold

// x /= sqrt(sum x^2 + eps) (ggml: rms_norm with eps / n, then 1 / sqrt(n))
void l2_normalize(float* x, int32_t n, float eps) {
  double sum = 0;
  for (int32_t i = 0; i < n; ++i) sum += static_cast<double>(x[i]) * x[i];
  const float scale = 1.0f / std::sqrt(static_cast<float>(sum / n) + eps / n) / std::sqrt(static_cast<float>(n));
  for (int32_t i = 0; i < n; ++i) x[i] *= scale;
}

}  // namespace

GatedDeltaNet::GatedDeltaNet(const Model& m) {
  for (int32_t l = 0; l < m.config.num_layers; ++l) stream_.push_back(first_kv_stream(m.config, l));
}

std::vector<KvLayerSpec> GatedDeltaNet::layer_streams(const ModelConfig& c, int32_t /*layer*/) {
  KvLayerSpec s;
  s.num_kv_heads = 1;
  s.state_floats = c.delta_net.state_floats();
  s.kind = KvRecordKind::State;
  return {s};
}

void GatedDeltaNet::bind(LayerBinder& b, int32_t l) {
  using R = TensorRole;
  const ModelConfig& c = b.config();
  const DeltaNetConfig& d = c.delta_net;
  LayerWeights& w = b.model().layers[l];
  const int64_t dim = c.dim;
  w.ssm_qkv = b.matrix(R::AttnQkv, l, d.conv_dim(), dim);
  w.ssm_z = b.matrix(R::AttnGate, l, d.value_dim(), dim);
  w.ssm_ba = b.matrix(R::SsmBetaAlpha, l, 2 * d.num_v_heads, dim);
  w.ssm_conv = b.dense_f32(R::SsmConv1d, l, d.conv_dim(), d.conv_kernel);
  w.ssm_dt_bias = b.vector(R::SsmDtBias, l, d.num_v_heads);
  w.ssm_a = b.vector(R::SsmA, l, d.num_v_heads);
  w.ssm_norm = b.vector(R::SsmNorm, l, d.head_v_dim);
  w.ssm_out = b.matrix(R::SsmOut, l, dim, d.value_dim());
}

void GatedDeltaNet::run(DecoderForward& f, int32_t l, const float* in, float* out) {
  const ModelConfig& c = f.model().config;
  const DeltaNetConfig& d = c.delta_net;
  const LayerWeights& w = f.weights(l);
  const int32_t T = f.num_tokens();
  const size_t t = T;
  qkv_.resize(t * d.conv_dim());
  z_.resize(t * d.value_dim());
  ba_.resize(t * 2 * d.num_v_heads);
  gate_.resize(t * d.num_v_heads);
  beta_.resize(t * d.num_v_heads);
  core_.resize(t * d.value_dim());
  {
    ProfScope ps(ProfKind::Matmul);
    f.ops().matmul(w.ssm_qkv, in, T, qkv_.data());
    f.ops().matmul(w.ssm_z, in, T, z_.data());
    f.ops().matmul(w.ssm_ba, in, T, ba_.data());
  }
  KvStorage& kv = f.kv();
  const int32_t stream = stream_[l];
  const int32_t g = kv.layout().layers[stream].group;
  const int64_t bs = kv.layout().block_size_tokens;
  SLIMKV_CHECK(static_cast<size_t>(g) < f.batch().states.size(), "forward: layer {} has no recurrent-state slots", l);
  auto state_of = [&](int32_t block) {
    return block < 0 ? nullptr : reinterpret_cast<float*>(kv.k_head(stream, block * bs, 0));
  };
  {
    ProfScope ps(ProfKind::Attention);  // the recurrence is this layer's attention
    for (const StateSlots& s : f.batch().states[g]) {
      float* state = state_of(s.out_block);
      if (s.in_block < 0) {
        std::fill(state, state + d.state_floats(), 0.0f);  // a sequence's first token starts from zeros
      } else if (s.in_block != s.out_block) {
        std::memcpy(state, state_of(s.in_block), sizeof(float) * d.state_floats());  // a prefix hit's snapshot
      }
      drafts_.clear();
      for (int32_t j = 0; j < s.num_draft_states; ++j) {
        drafts_.push_back(state_of(f.batch().draft_state_blocks[s.draft_first + j]));
      }
      run_sequence(f, l, s, state, s.snapshot_token >= 0 ? state_of(s.snapshot_block) : nullptr);
    }
  }
  // core = rmsnorm(o) * norm * silu(z), per value head
  f.ops().rmsnorm_rows(core_.data(), core_.data(), w.ssm_norm, static_cast<int64_t>(T) * d.num_v_heads, d.head_v_dim,
                       c.rms_eps);
  for (size_t i = 0; i < t * d.value_dim(); ++i) core_[i] *= silu(z_[i]);
  {
    ProfScope ps(ProfKind::Matmul);
    f.ops().matmul(w.ssm_out, core_.data(), T, out);
  }
  f.ops().all_reduce_sum(out, static_cast<int64_t>(T) * c.dim);  // a row-split out projection sums over ranks
}

void GatedDeltaNet::run_sequence(DecoderForward& f, int32_t l, const StateSlots& s, float* state, float* snapshot) {
  const ModelConfig& c = f.model().config;
  const DeltaNetConfig& d = c.delta_net;
  const LayerWeights& w = f.weights(l);
  const int64_t conv_floats = static_cast<int64_t>(d.conv_kernel - 1) * d.conv_dim();
  convolve(d, w.ssm_conv, s, state, snapshot);
  const int32_t r = d.num_v_heads / d.num_k_heads;
  for (int32_t j = 0; j < s.num_tokens; ++j) {
    const size_t t = static_cast<size_t>(s.first_token) + j;
    float* row = qkv_.data() + t * d.conv_dim();
    for (int32_t h = 0; h < 2 * d.num_k_heads; ++h) l2_normalize(row + h * d.head_k_dim, d.head_k_dim, c.rms_eps);
    const float* ba = ba_.data() + t * 2 * d.num_v_heads;
    for (int32_t h = 0; h < d.num_v_heads; ++h) {
      const int32_t kh = h / r, i = h % r;  // β and α are grouped per key head: [b (r) | a (r)]
      beta_[t * d.num_v_heads + h] = 1.0f / (1.0f + std::exp(-ba[kh * 2 * r + i]));
      gate_[t * d.num_v_heads + h] = softplus(ba[kh * 2 * r + r + i] + w.ssm_dt_bias[h]) * w.ssm_a[h];
    }
  }
  recur(f, s, state + conv_floats, snapshot ? snapshot + conv_floats : nullptr);
}

// qkv_ rows of the sequence <- silu(causal conv) of [its conv state rows, its rows]; the state keeps the last K - 1.
void GatedDeltaNet::convolve(const DeltaNetConfig& d, const float* kernel, const StateSlots& s, float* conv_state,
                             float* snapshot_conv) {
  const int64_t K = d.conv_kernel, C = d.conv_dim(), n = s.num_tokens;
  window_.resize(static_cast<size_t>((K - 1 + n) * C));
  float* win = window_.data();
  std::copy(conv_state, conv_state + (K - 1) * C, win);
  float* rows = qkv_.data() + static_cast<size_t>(s.first_token) * C;
  std::copy(rows, rows + n * C, win + (K - 1) * C);
  for (int64_t j = 0; j < n; ++j) {
    for (int64_t ch = 0; ch < C; ++ch) {
      float acc = 0.0f;
      for (int64_t k = 0; k < K; ++k) acc += win[(j + k) * C + ch] * kernel[ch * K + k];
      rows[j * C + ch] = silu(acc);
    }
  }
  if (snapshot_conv) {  // the K - 1 inputs up to and including token snapshot_token
    std::copy(win + (s.snapshot_token + 1) * C, win + (s.snapshot_token + K) * C, snapshot_conv);
  }
  for (size_t j = 0; j < drafts_.size(); ++j) {  // the K - 1 inputs up to and including token j
    std::copy(win + (j + 1) * C, win + (j + K) * C, drafts_[j]);
  }
  std::copy(win + n * C, win + (n + K - 1) * C, conv_state);
}

// Per value head, token by token: the gated delta rule on the head's state, o into core_.
void GatedDeltaNet::recur(DecoderForward& f, const StateSlots& s, float* ssm_state, float* snapshot_ssm) {
  const DeltaNetConfig& d = f.model().config.delta_net;
  const int32_t hk = d.head_k_dim, hv = d.head_v_dim, Hv = d.num_v_heads, r = Hv / d.num_k_heads;
  const int64_t C = d.conv_dim(), key_dim = d.key_dim(), head_floats = static_cast<int64_t>(hv) * hk;
  const int64_t conv_floats = static_cast<int64_t>(d.conv_kernel - 1) * C;  // a draft state's ssm part starts here
  const float scale = 1.0f / std::sqrt(static_cast<float>(hk));
  auto heads = [&](int64_t h0, int64_t h1, int32_t) {
    for (int64_t h = h0; h < h1; ++h) {
      float* S = ssm_state + h * head_floats;  // [hv, hk]: row i = value dim i
      const int64_t kh = h / r;
      for (int32_t j = 0; j < s.num_tokens; ++j) {
        const size_t t = static_cast<size_t>(s.first_token) + j;
        const float* row = qkv_.data() + t * C;
        const float *q = row + kh * hk, *k = row + key_dim + kh * hk, *v = row + 2 * key_dim + h * hv;
        const float decay = std::exp(gate_[t * Hv + h]), beta = beta_[t * Hv + h];
        float* o = core_.data() + t * d.value_dim() + h * hv;
        for (int32_t i = 0; i < hv; ++i) {
          float* Si = S + static_cast<int64_t>(i) * hk;
          float sk = 0.0f;
          for (int32_t x = 0; x < hk; ++x) {
            Si[x] *= decay;
            sk += Si[x] * k[x];
          }
          const float delta = (v[i] - sk) * beta;
          float sq = 0.0f;
          for (int32_t x = 0; x < hk; ++x) {
            Si[x] += delta * k[x];
            sq += Si[x] * q[x];
          }
          o[i] = sq * scale;
        }
        if (snapshot_ssm && j == s.snapshot_token) std::copy(S, S + head_floats, snapshot_ssm + h * head_floats);
        if (j < s.num_draft_states) std::copy(S, S + head_floats, drafts_[j] + conv_floats + h * head_floats);
      }
    }
  };
  if (f.pool() && Hv > 1) {
    f.pool()->parallel_for(Hv, 1, heads);
  } else {
    heads(0, Hv, 0);
  }
}

}  // namespace slimkv
