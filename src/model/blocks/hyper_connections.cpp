// Hyper-connections (blocks/hyper_connections.h), as llama.cpp's deepseek4.cpp computes them: the residual is hc
// streams per token. Around a sub-block, mixes = fn · rmsnorm(flatten(streams)) give pre (the sub-block's
// input: sum_h pre[h] * stream[h]), post and comb (Sinkhorn-normalised); afterwards stream[dst] = post[dst] * y +
// sum_src comb[dst, src] * stream[src]. The head mixes the streams into the classifier's input.
#include <algorithm>
#include <cmath>

#include "core/check.h"
#include "core/profiler.h"
#include "kernels/ops.h"
#include "model/blocks/hyper_connections.h"
#include "model/weight_binder.h"

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
  // Divides each of hc lines (element j of line o at o * line_stride + j * elem_stride) by its sum + eps.
  auto normalise = [&](int32_t line_stride, int32_t elem_stride) {
    for (int32_t o = 0; o < hc; ++o) {
      float* line = comb + o * line_stride;
      float sum = 0;
      for (int32_t j = 0; j < hc; ++j) sum += line[j * elem_stride];
      sum += eps;
      for (int32_t j = 0; j < hc; ++j) line[j * elem_stride] /= sum;
    }
  };
  auto norm_cols = [&] { normalise(1, hc); };  // for each dst: divide by the sum over src
  auto norm_rows = [&] { normalise(hc, 1); };  // for each src: divide by the sum over dst
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

void HyperConnections::begin(DecoderForward& f) {
  const int32_t hc = f.model().config.dsv4.hc_mult, dim = f.model().config.dim;
  const int32_t T = f.num_tokens();
  streams_.resize(static_cast<size_t>(T) * hc * dim);
  for (int32_t t = 0; t < T; ++t) {
    for (int32_t h = 0; h < hc; ++h) {
      std::copy(f.residual() + static_cast<size_t>(t) * dim, f.residual() + static_cast<size_t>(t + 1) * dim,
                streams_.begin() + (static_cast<size_t>(t) * hc + h) * dim);
    }
  }
}

void HyperConnections::pre(DecoderForward& f, int32_t l, HcSite site, float* out) {
  const ModelConfig& c = f.model().config;
  const Dsv4Config& d = c.dsv4;
  const LayerWeights& w = f.model().layers[l];
  const int32_t hc = d.hc_mult, dim = c.dim, nmix = (2 + hc) * hc;
  const WeightView& fn = site == HcSite::Attn ? w.hc_attn_fn : w.hc_ffn_fn;
  const float* base = site == HcSite::Attn ? w.hc_attn_base : w.hc_ffn_base;
  const float* scale = site == HcSite::Attn ? w.hc_attn_scale : w.hc_ffn_scale;
  const int32_t T = f.num_tokens();
  const size_t flat_n = static_cast<size_t>(hc) * dim;
  flat_.resize(T * flat_n);
  mix_.resize(static_cast<size_t>(T) * nmix);
  post_.resize(static_cast<size_t>(T) * hc);
  comb_.resize(static_cast<size_t>(T) * hc * hc);
  for (int32_t t = 0; t < T; ++t) {  // RMS norm of the flattened streams, no weight
    rmsnorm_unweighted(flat_.data() + t * flat_n, streams_.data() + t * flat_n, flat_n, c.rms_eps);
  }
  {
    ProfScope ps(ProfKind::Matmul);
    f.ops().matmul(fn, flat_.data(), T, mix_.data());
  }
  pre_.resize(static_cast<size_t>(T) * hc);
  for (int32_t t = 0; t < T; ++t) {
    const float* m = mix_.data() + static_cast<size_t>(t) * nmix;
    for (int32_t h = 0; h < hc; ++h) {
      pre_[t * hc + h] = sigmoid(m[h] * scale[0] + base[h]) + d.hc_eps;
      post_[t * hc + h] = 2.0f * sigmoid(m[hc + h] * scale[1] + base[hc + h]);
    }
    float* cb = comb_.data() + static_cast<size_t>(t) * hc * hc;
    for (int32_t j = 0; j < hc * hc; ++j) cb[j] = m[2 * hc + j] * scale[2] + base[2 * hc + j];
    sinkhorn(cb, hc, d.hc_sinkhorn_iters, d.hc_eps);
  }
  weighted_streams(streams_.data(), pre_.data(), T, hc, dim, out);
}

void HyperConnections::post(DecoderForward& f, const float* y) {
  const int32_t hc = f.model().config.dsv4.hc_mult, dim = f.model().config.dim;
  const int32_t T = f.num_tokens();
  tmp_.resize(streams_.size());
  for (int32_t t = 0; t < T; ++t) {
    const float* st = streams_.data() + static_cast<size_t>(t) * hc * dim;
    const float* yt = y + static_cast<size_t>(t) * dim;
    const float* cb = comb_.data() + static_cast<size_t>(t) * hc * hc;
    for (int32_t dst = 0; dst < hc; ++dst) {
      float* o = tmp_.data() + (static_cast<size_t>(t) * hc + dst) * dim;
      const float p = post_[t * hc + dst];
      for (int32_t i = 0; i < dim; ++i) o[i] = yt[i] * p;
      for (int32_t src = 0; src < hc; ++src) {
        const float k = cb[dst + hc * src];
        const float* x = st + static_cast<size_t>(src) * dim;
        for (int32_t i = 0; i < dim; ++i) o[i] += x[i] * k;
      }
    }
  }
  streams_.swap(tmp_);
}

void HyperConnections::head(DecoderForward& f) {
  const ModelConfig& c = f.model().config;
  const int32_t hc = c.dsv4.hc_mult, dim = c.dim;
  const int32_t T = f.num_tokens();
  const size_t flat_n = static_cast<size_t>(hc) * dim;
  flat_.resize(T * flat_n);
  for (int32_t t = 0; t < T; ++t) {
    rmsnorm_unweighted(flat_.data() + t * flat_n, streams_.data() + t * flat_n, flat_n, c.rms_eps);
  }
  pre_.resize(static_cast<size_t>(T) * hc);
  {
    ProfScope ps(ProfKind::Matmul);
    f.ops().matmul(f.model().hc_head_fn, flat_.data(), T, pre_.data());
  }
  for (int32_t t = 0; t < T; ++t) {
    for (int32_t h = 0; h < hc; ++h) {
      float& p = pre_[t * hc + h];
      p = sigmoid(p * f.model().hc_head_scale[0] + f.model().hc_head_base[h]) + c.dsv4.hc_eps;
    }
  }
  weighted_streams(streams_.data(), pre_.data(), T, hc, dim, f.residual());
}


void HyperConnections::bind_layer(LayerBinder& b, int32_t l) {
  const ModelConfig& c = b.config();
  LayerWeights& w = b.model().layers[l];
  const int64_t dim = c.dim, hc = c.dsv4.hc_mult, mix = (2 + hc) * hc;
  w.hc_attn_fn = b.matrix(TensorRole::HcAttnFn, l, mix, hc * dim);
  w.hc_attn_base = b.vector(TensorRole::HcAttnBase, l, mix);
  w.hc_attn_scale = b.vector(TensorRole::HcAttnScale, l, 3);
  w.hc_ffn_fn = b.matrix(TensorRole::HcFfnFn, l, mix, hc * dim);
  w.hc_ffn_base = b.vector(TensorRole::HcFfnBase, l, mix);
  w.hc_ffn_scale = b.vector(TensorRole::HcFfnScale, l, 3);
}

void HyperConnections::bind_head(LayerBinder& b) {
  const ModelConfig& c = b.config();
  Model& m = b.model();
  const int64_t hc = c.dsv4.hc_mult;
  m.hc_head_fn = b.matrix(TensorRole::HcHeadFn, 0, hc, hc * c.dim);
  m.hc_head_base = b.vector(TensorRole::HcHeadBase, 0, hc);
  m.hc_head_scale = b.vector(TensorRole::HcHeadScale, 0, 1);
}

}  // namespace slimkv
