// DecoderForward's FFN blocks: the gated MLP (SwiGLU or GeGLU, by the model's activation) and the mixture of
// experts: softmax or sigmoid router, an optional selection bias and group limit (DeepSeek-V3), top-k (ties to the
// lower expert id), optional renormalisation and scale, shared experts (optionally gated per token); tokens are grouped by expert so each
// expert's weights are read once per step, and each token sums its experts in expert-id order (the same whatever
// the batch).
#include <algorithm>
#include <cmath>

#include "core/check.h"
#include "core/profiler.h"
#include "kernels/ops.h"
#include "model/decoder_forward.h"

namespace slimkv {

void DecoderForward::dense_ffn(const WeightView& gate, const WeightView& up, const WeightView& down, const float* in,
                               int32_t num_tokens, float* out, float* h1, float* h2, float limit,
                               const MlpBiases& bias, float alpha) {
  {
    ProfScope ps(ProfKind::Matmul);
    const MatmulOut gate_up[] = {{&gate, h1}, {&up, h2}};
    ops_->matmul_same_input(gate_up, 2, in, num_tokens);
  }
  add_row_bias(h1, bias.gate, num_tokens, gate.rows);
  add_row_bias(h2, bias.up, num_tokens, up.rows);
  const int64_t n = static_cast<int64_t>(num_tokens) * gate.rows;
  if (limit > 0) {  // clamped: g = min(gate, L), u = clamp(up, -L, L); DeepSeek-V4's g·σ(g)·u (ggml's swiglu_clamp),
                    // or with alpha (gpt-oss, ggml's swiglu_oai) g·σ(alpha·g)·(u + 1)
    const bool oai = alpha > 0;
    const float a = oai ? alpha : 1.0f;
    for (int64_t i = 0; i < n; ++i) {
      const float g = std::min(h1[i], limit), u = std::clamp(h2[i], -limit, limit);
      h1[i] = g / (1.0f + std::exp(a * -g)) * (oai ? u + 1.0f : u);
    }
  } else if (model_.config.activation == FfnActivation::GeluTanh) {
    ops_->geglu(h1, h2, n);
  } else {
    ops_->swiglu(h1, h2, n);
  }
  {
    ProfScope ps(ProfKind::Matmul);
    ops_->matmul(down, h1, num_tokens, out);
  }
  add_row_bias(out, bias.down, num_tokens, down.rows);
}

void DecoderForward::ffn(int32_t l, const float* in, float* out) {
  if (model_.config.layers[l].moe) {
    moe_ffn(l, in, out);
    return;
  }
  const LayerWeights& w = model_.layers[l];
  dense_ffn(w.w1, w.w3, w.w2, in, T_, out, hb_.data(), hb2_.data());
  ops_->all_reduce_sum(out, static_cast<int64_t>(T_) * model_.config.dim);  // a row-split down sums over ranks
}

void DecoderForward::route_experts(int32_t l) {
  const MoeConfig& mc = model_.config.moe;
  const LayerWeights& w = model_.layers[l];
  const int32_t E = mc.num_experts, K = mc.num_experts_used, G = mc.num_groups, per_group = E / G;
  std::vector<int32_t> order(E), gorder(G);
  std::vector<float> sel(E), gscore(G), chosen(K);
  for (int32_t t = 0; t < T_; ++t) {
    float* p = router_.data() + static_cast<size_t>(t) * E;  // logits -> probabilities
    if (w.router_b) {
      for (int32_t e = 0; e < E; ++e) p[e] += w.router_b[e];
    }
    // SoftmaxWeight keeps the logits: the top-k are chosen on them and weighted by a softmax over the k below.
    if (mc.gating == MoeGating::Sigmoid) {
      for (int32_t e = 0; e < E; ++e) p[e] = 1.0f / (1.0f + std::exp(-p[e]));
    } else if (mc.gating == MoeGating::SqrtSoftplus) {  // ggml softplus: x above 20 stays x
      for (int32_t e = 0; e < E; ++e) p[e] = std::sqrt(p[e] > 20.0f ? p[e] : std::log1p(std::exp(p[e])));
    } else if (mc.gating == MoeGating::Softmax) {
      softmax(p, E);
    }
    for (int32_t e = 0; e < E; ++e) sel[e] = p[e] + (w.exp_probs_b ? w.exp_probs_b[e] : 0.0f);  // selection only
    if (G > 1) {  // group-limited: a group scores its two best; the best groups_used groups stay eligible
      for (int32_t gi = 0; gi < G; ++gi) {
        float b1 = -INFINITY, b2 = -INFINITY;
        for (int32_t e = gi * per_group; e < (gi + 1) * per_group; ++e) {
          if (sel[e] > b1) b2 = b1, b1 = sel[e];
          else if (sel[e] > b2) b2 = sel[e];
        }
        gscore[gi] = b1 + b2;
        gorder[gi] = gi;
      }
      std::partial_sort(gorder.begin(), gorder.begin() + mc.groups_used, gorder.end(), [&](int32_t x, int32_t y) {
        return gscore[x] > gscore[y] || (gscore[x] == gscore[y] && x < y);
      });
      for (int32_t k = mc.groups_used; k < G; ++k) {
        for (int32_t e = gorder[k] * per_group; e < (gorder[k] + 1) * per_group; ++e) sel[e] = -INFINITY;
      }
    }
    for (int32_t e = 0; e < E; ++e) order[e] = e;
    if (w.tid2eid) {  // hash-routed layer: the token's fixed experts (no bias, no groups)
      const int32_t id = batch_->token_ids[t];
      for (int32_t k = 0; k < K; ++k) order[k] = w.tid2eid[static_cast<size_t>(id) * K + k];
    } else {
      std::partial_sort(order.begin(), order.begin() + K, order.end(), [&](int32_t a, int32_t b) {
        return sel[a] > sel[b] || (sel[a] == sel[b] && a < b);
      });
    }
    if (mc.gating == MoeGating::SoftmaxWeight) {
      for (int32_t k = 0; k < K; ++k) chosen[k] = p[order[k]];
      softmax(chosen.data(), K);
      for (int32_t k = 0; k < K; ++k) p[order[k]] = chosen[k];
    }
    float sum = 0;
    for (int32_t k = 0; k < K; ++k) sum += p[order[k]];
    sum = std::max(sum, 6.103515625e-5f);  // as llama.cpp clamps the normaliser
    if (choice_observer_) choice_observer_("experts", l, t, order.data(), K);
    for (int32_t k = 0; k < K; ++k) {
      sel_[static_cast<size_t>(t) * K + k] = order[k];
      float wk = p[order[k]];
      if (mc.norm_topk_prob) wk /= sum;
      selw_[static_cast<size_t>(t) * K + k] = wk * mc.weights_scale;
    }
  }
}

// eout_[i] *= sigmoid(gate · in[i]) for `rows` rows: the shared expert's per-token gate.
void DecoderForward::gate_shared_expert(const float* gate, const float* in, int32_t rows) {
  const int32_t dim = model_.config.dim;
  for (int32_t t = 0; t < rows; ++t) {
    const float* x = in + static_cast<size_t>(t) * dim;
    float dot = 0.0f;
    for (int32_t i = 0; i < dim; ++i) dot += gate[i] * x[i];
    const float s = 1.0f / (1.0f + std::exp(-dot));
    float* y = eout_.data() + static_cast<size_t>(t) * dim;
    for (int32_t i = 0; i < dim; ++i) y[i] *= s;
  }
}

// out[first, first + rows) += the shared experts (fused into one MLP) over those tokens.
void DecoderForward::add_shared_experts(int32_t l, const float* in, int32_t first, int32_t rows, float* out) {
  const MoeConfig& mc = model_.config.moe;
  const LayerWeights& w = model_.layers[l];
  const size_t dim = static_cast<size_t>(model_.config.dim), off = static_cast<size_t>(first) * dim;
  if (rows == 0) return;
  dense_ffn(w.shexp_gate, w.shexp_up, w.shexp_down, in + off, rows, eout_.data(), hb_.data(), hb2_.data(),
            mc.swiglu_limit_shared);
  if (w.shexp_gate_inp) gate_shared_expert(w.shexp_gate_inp, in + off, rows);
  for (size_t i = 0; i < static_cast<size_t>(rows) * dim; ++i) out[off + i] += eout_[i];
}

void DecoderForward::moe_ffn(int32_t l, const float* in, float* out) {
  const ModelConfig& c = model_.config;
  const MoeConfig& mc = c.moe;
  const LayerWeights& w = model_.layers[l];
  const int32_t T = T_, E = mc.num_experts, K = mc.num_experts_used, dim = c.dim;
  {
    ProfScope ps(ProfKind::Matmul);
    ops_->matmul(w.router, in, T, router_.data());
  }
  route_experts(l);
  std::fill(out, out + static_cast<size_t>(T) * dim, 0.0f);
  const bool all_to_all = model_.shard.expert_all_to_all && model_.shard.ranks > 1;
  if (all_to_all) moe_rows_.assign(static_cast<size_t>(T), 0);  // [T] the tokens this rank wrote
  for (int32_t e = 0; e < E; ++e) {  // each expert once, over the tokens routed to it
    if (w.exp_gate[e].data == nullptr) continue;  // another rank's expert (tensor_shard.h): it adds its share there
    int32_t n = 0;
    for (int32_t t = 0; t < T; ++t) {
      for (int32_t k = 0; k < K; ++k) {
        if (sel_[static_cast<size_t>(t) * K + k] != e) continue;
        std::copy(in + static_cast<size_t>(t) * dim, in + static_cast<size_t>(t + 1) * dim,
                  ein_.data() + static_cast<size_t>(n) * dim);
        etok_[n] = t;
        ewt_[n] = selw_[static_cast<size_t>(t) * K + k];
        ++n;
      }
    }
    if (n == 0) continue;
    const int64_t eff = mc.expert_ffn_dim;
    const MlpBiases bias{w.exp_gate_b ? w.exp_gate_b + e * eff : nullptr, w.exp_up_b ? w.exp_up_b + e * eff : nullptr,
                         w.exp_down_b ? w.exp_down_b + static_cast<int64_t>(e) * dim : nullptr};
    dense_ffn(w.exp_gate[e], w.exp_up[e], w.exp_down[e], ein_.data(), n, eout_.data(), hb_.data(), hb2_.data(),
              mc.swiglu_limit, bias, mc.swiglu_alpha);
    for (int32_t i = 0; i < n; ++i) {
      float* dst = out + static_cast<size_t>(etok_[i]) * dim;
      const float* src = eout_.data() + static_cast<size_t>(i) * dim;
      for (int32_t d = 0; d < dim; ++d) dst[d] += ewt_[i] * src[d];
      if (all_to_all) moe_rows_[static_cast<size_t>(etok_[i])] = 1;
    }
  }
  if (!all_to_all) {
    if (mc.num_shared_experts > 0) add_shared_experts(l, in, 0, T, out);  // whole, or this rank's columns
    ops_->combine_experts(out, T, dim, nullptr);  // experts (or their slices) on other ranks add theirs
    return;
  }
  // All-to-all: the shared experts (whole here) run on the tokens this rank owns; each present row goes to its
  // owner, which sums, then every rank gathers every owner's rows.
  const int32_t ranks = model_.shard.ranks, rank = model_.shard.rank;
  const int32_t own_first = static_cast<int32_t>(owned_first_row(T, ranks, rank));
  const int32_t own_end = static_cast<int32_t>(owned_first_row(T, ranks, rank + 1));
  if (mc.num_shared_experts > 0) {
    add_shared_experts(l, in, own_first, own_end - own_first, out);
    std::fill(moe_rows_.begin() + own_first, moe_rows_.begin() + own_end, uint8_t{1});
  }
  ops_->combine_experts(out, T, dim, moe_rows_.data());
}

}  // namespace slimkv
