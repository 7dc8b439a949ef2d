// DecoderForward's hyper-connections (DeepSeek-V4's mHC, as llama.cpp's deepseek4.cpp computes them): the residual
// is hc streams per token. Around a sub-block, mixes = fn · rmsnorm(flatten(streams)) give pre (the sub-block's
// input: sum_h pre[h] * stream[h]), post and comb (Sinkhorn-normalised); afterwards stream[dst] = post[dst] * y +
// sum_src comb[dst, src] * stream[src]. The head mixes the streams into the classifier's input.
#include <algorithm>
#include <cmath>

#include "core/check.h"
#include "core/profiler.h"
#include "kernels/ops.h"
#include "model/decoder_forward.h"
#include "model/dsv4_scratch.h"

namespace slimkv {
namespace {

float sigmoid(float x) { return 1.0f / (1.0f + std::exp(-x)); }

// comb [hc * hc], element (dst, src) at dst + hc * src: softmax over dst per src, + eps, then column (over src)
// normalisation, then (iters - 1) x (row over dst, column over src) normalisations — llama.cpp's order.
void sinkhorn(float* comb, int32_t hc, int32_t iters, float eps) {
  for (int32_t src = 0; src < hc; ++src) {
    float* c = comb + src * hc;
    float mx = c[0];
    for (int32_t d = 1; d < hc; ++d) mx = std::max(mx, c[d]);
    float sum = 0;
    for (int32_t d = 0; d < hc; ++d) sum += c[d] = std::exp(c[d] - mx);
    for (int32_t d = 0; d < hc; ++d) c[d] = c[d] / sum + eps;
  }
  auto norm_cols = [&] {  // for each dst: divide by the sum over src
    for (int32_t d = 0; d < hc; ++d) {
      float sum = 0;
      for (int32_t s = 0; s < hc; ++s) sum += comb[d + hc * s];
      sum += eps;
      for (int32_t s = 0; s < hc; ++s) comb[d + hc * s] /= sum;
    }
  };
  auto norm_rows = [&] {  // for each src: divide by the sum over dst
    for (int32_t s = 0; s < hc; ++s) {
      float sum = 0;
      for (int32_t d = 0; d < hc; ++d) sum += comb[d + hc * s];
      sum += eps;
      for (int32_t d = 0; d < hc; ++d) comb[d + hc * s] /= sum;
    }
  };
  norm_cols();
  for (int32_t i = 1; i < iters; ++i) {
    norm_rows();
    norm_cols();
  }
}

// out[t] = sum_h w[t, h] * streams[t, h] (in stream order)
void weighted_streams(const float* streams, const float* w, int32_t T, int32_t hc, int32_t dim, float* out) {
  for (int32_t t = 0; t < T; ++t) {
    const float* st = streams + static_cast<size_t>(t) * hc * dim;
    float* o = out + static_cast<size_t>(t) * dim;
    for (int32_t i = 0; i < dim; ++i) o[i] = st[i] * w[t * hc];
    for (int32_t h = 1; h < hc; ++h) {
      for (int32_t i = 0; i < dim; ++i) o[i] += st[static_cast<size_t>(h) * dim + i] * w[t * hc + h];
    }
  }
}

}  // namespace

Dsv4Scratch& DecoderForward::dsv4() {
  if (!dsv4_) dsv4_ = std::make_shared<Dsv4Scratch>();
  return *dsv4_;
}

void DecoderForward::hc_begin() {
  const int32_t hc = model_.config.dsv4.hc_mult, dim = model_.config.dim;
  Dsv4Scratch& s = dsv4();
  s.streams.resize(static_cast<size_t>(T_) * hc * dim);
  for (int32_t t = 0; t < T_; ++t) {
    for (int32_t h = 0; h < hc; ++h) {
      std::copy(x_.begin() + static_cast<size_t>(t) * dim, x_.begin() + static_cast<size_t>(t + 1) * dim,
                s.streams.begin() + (static_cast<size_t>(t) * hc + h) * dim);
    }
  }
}

void DecoderForward::hc_pre(int32_t l, HcSite site, float* out) {
  const ModelConfig& c = model_.config;
  const Dsv4Config& d = c.dsv4;
  const LayerWeights& w = model_.layers[l];
  const int32_t hc = d.hc_mult, dim = c.dim, nmix = (2 + hc) * hc;
  const WeightView& fn = site == HcSite::Attn ? w.hc_attn_fn : w.hc_ffn_fn;
  const float* base = site == HcSite::Attn ? w.hc_attn_base : w.hc_ffn_base;
  const float* scale = site == HcSite::Attn ? w.hc_attn_scale : w.hc_ffn_scale;
  Dsv4Scratch& s = dsv4();
  const size_t flat_n = static_cast<size_t>(hc) * dim;
  s.flat.resize(T_ * flat_n);
  s.mix.resize(static_cast<size_t>(T_) * nmix);
  s.post.resize(static_cast<size_t>(T_) * hc);
  s.comb.resize(static_cast<size_t>(T_) * hc * hc);
  for (int32_t t = 0; t < T_; ++t) {  // RMS norm of the flattened streams, no weight
    rmsnorm_unweighted(s.flat.data() + t * flat_n, s.streams.data() + t * flat_n, flat_n, c.rms_eps);
  }
  {
    ProfScope ps(ProfKind::Matmul);
    matmul(fn, s.flat.data(), T_, s.mix.data(), pool_);
  }
  std::vector<float> pre(static_cast<size_t>(T_) * hc);
  for (int32_t t = 0; t < T_; ++t) {
    const float* m = s.mix.data() + static_cast<size_t>(t) * nmix;
    for (int32_t h = 0; h < hc; ++h) {
      pre[t * hc + h] = sigmoid(m[h] * scale[0] + base[h]) + d.hc_eps;
      s.post[t * hc + h] = 2.0f * sigmoid(m[hc + h] * scale[1] + base[hc + h]);
    }
    float* cb = s.comb.data() + static_cast<size_t>(t) * hc * hc;
    for (int32_t j = 0; j < hc * hc; ++j) cb[j] = m[2 * hc + j] * scale[2] + base[2 * hc + j];
    sinkhorn(cb, hc, d.hc_sinkhorn_iters, d.hc_eps);
  }
  weighted_streams(s.streams.data(), pre.data(), T_, hc, dim, out);
}

void DecoderForward::hc_post(HcSite, const float* y) {
  const int32_t hc = model_.config.dsv4.hc_mult, dim = model_.config.dim;
  Dsv4Scratch& s = dsv4();
  s.tmp.resize(s.streams.size());
  for (int32_t t = 0; t < T_; ++t) {
    const float* st = s.streams.data() + static_cast<size_t>(t) * hc * dim;
    const float* yt = y + static_cast<size_t>(t) * dim;
    const float* cb = s.comb.data() + static_cast<size_t>(t) * hc * hc;
    for (int32_t dst = 0; dst < hc; ++dst) {
      float* o = s.tmp.data() + (static_cast<size_t>(t) * hc + dst) * dim;
      const float p = s.post[t * hc + dst];
      for (int32_t i = 0; i < dim; ++i) o[i] = yt[i] * p;
      for (int32_t src = 0; src < hc; ++src) {
        const float k = cb[dst + hc * src];
        const float* x = st + static_cast<size_t>(src) * dim;
        for (int32_t i = 0; i < dim; ++i) o[i] += x[i] * k;
      }
    }
  }
  s.streams.swap(s.tmp);
}

void DecoderForward::hc_head() {
  const ModelConfig& c = model_.config;
  const int32_t hc = c.dsv4.hc_mult, dim = c.dim;
  Dsv4Scratch& s = dsv4();
  const size_t flat_n = static_cast<size_t>(hc) * dim;
  s.flat.resize(T_ * flat_n);
  for (int32_t t = 0; t < T_; ++t) {
    rmsnorm_unweighted(s.flat.data() + t * flat_n, s.streams.data() + t * flat_n, flat_n, c.rms_eps);
  }
  std::vector<float> pre(static_cast<size_t>(T_) * hc);
  {
    ProfScope ps(ProfKind::Matmul);
    matmul(model_.hc_head_fn, s.flat.data(), T_, pre.data(), pool_);
  }
  for (int32_t t = 0; t < T_; ++t) {
    for (int32_t h = 0; h < hc; ++h) {
      float& p = pre[t * hc + h];
      p = sigmoid(p * model_.hc_head_scale[0] + model_.hc_head_base[h]) + c.dsv4.hc_eps;
    }
  }
  weighted_streams(s.streams.data(), pre.data(), T_, hc, dim, x_.data());
}

}  // namespace slimkv
