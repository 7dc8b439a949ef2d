// DecoderForward's attention block: what every family's attention is made of. Optional pieces (biases, per-head
// q/k norms) act when the layer has the weights; the window, head sizes, RoPE and an output gate come from the
// layer's config.
#include <chrono>
#include <cmath>
#include <cstring>

#include "core/check.h"
#include "core/profiler.h"
#include "kernels/ops.h"
#include "model/decoder_forward.h"

namespace slimkv {
PagedAttention::LayerKv DecoderForward::layer_kv(int32_t l) const {
  const KvStorage& kv = *kv_;
  const KvLayerGeometry& g = kv.layout().layers[l];
  PagedAttention::LayerKv lk{kv.k_base(l), kv.v_base(l), g.k_dim, g.v_dim, g.k_head_bytes(), g.v_head_bytes(),
                             kv.k_head_stride_bytes(l), kv.v_head_stride_bytes(l), g.dtype, g.rotate};
  if (g.v_in_k) {  // the value is the leading v_dim values of each key record
    lk.v = lk.k;
    lk.v_head_bytes = lk.k_head_bytes;
    lk.v_head_stride_bytes = lk.k_head_stride_bytes;
  }
  lk.k_split = g.k_split();
  if (g.v_dtype != g.dtype) lk.v_dtype = g.v_dtype;
  lk.sink_tokens = g.spec.sink_tokens;  // a window (sliding-window layer or static retention); 0 = every row
  lk.window_tokens = g.spec.window_tokens;
  if (!kv_proj_.empty()) {
    if (!kv_proj_[l].k.empty()) lk.k_proj = kv_proj_[l].k.data();
    if (!kv_proj_[l].v.empty()) lk.v_proj = kv_proj_[l].v.data();
  }
  return lk;
}

PagedAttention::LayerKv::Select DecoderForward::layer_select(int32_t l) {
  const KvStorage& kv = *kv_;
  const KvLayerGeometry& g = kv.layout().layers[l];
  PagedAttention::LayerKv::Select s;
  s.scorer = g.select.scorer == KvSelectScorer::Sketch   ? RowScorer::Sketch
             : g.select.scorer == KvSelectScorer::Oracle ? RowScorer::Oracle
                                                         : RowScorer::Pages;
  s.topk_tokens = g.select.topk_tokens;
  s.fraction = g.select.fraction;
  s.mass = g.select.mass;
  s.head_scale = g.select.head_scale.empty() ? nullptr : g.select.head_scale.data();
  s.sink_tokens = g.select.sink_tokens;
  s.window_tokens = g.select.window_tokens;
  if (const int32_t x = kv.layout().appended_stream(l, KvRecordKind::SelectIndex); x >= 0) {
    const KvLayerGeometry& xg = kv.layout().layers[x];
    SLIMKV_CHECK(static_cast<int32_t>(kv_proj_.size()) > x && !kv_proj_[x].k.empty(),
                 "select: layer {}'s index has no projection (its calibration was not loaded)", l);
    s.index = kv.k_base(x);
    s.index_head_bytes = xg.k_head_bytes();
    s.index_head_stride_bytes = kv.k_head_stride_bytes(x);
    s.rank = xg.k_dim;
    s.index_dtype = xg.dtype;
    s.index_rotate = xg.rotate;
    s.proj = kv_proj_[x].q.empty() ? kv_proj_[x].k.data() : kv_proj_[x].q.data();  // the query side of the sketch
    s.index_meta = &attention_plan(xg.group).meta();
  }
  return s;
}

// q_ [T, q_dim] and qgate_ [T, q_dim] from a q projection whose head h's rows are [q (head_dim) | gate (head_dim)].
void DecoderForward::project_gated_q(int32_t l, const float* in) {
  const LayerConfig& lc = model_.config.layers[l];
  const int32_t qd = lc.q_dim(), hd = lc.head_dim_k;
  ops_->matmul(model_.layers[l].wq, in, T_, qgate_.data());  // [T, heads, 2 * head_dim]
  for (int32_t t = 0; t < T_; ++t) {
    for (int32_t h = 0; h < lc.num_heads; ++h) {  // the gate compacts in place: its destination never passes its source
      const float* src = qgate_.data() + (static_cast<size_t>(t) * lc.num_heads + h) * 2 * hd;
      std::memcpy(q_.data() + static_cast<size_t>(t) * qd + static_cast<size_t>(h) * hd, src, sizeof(float) * hd);
      std::memmove(qgate_.data() + static_cast<size_t>(t) * qd + static_cast<size_t>(h) * hd, src + hd,
                   sizeof(float) * hd);
    }
  }
}

void DecoderForward::attention(int32_t l, const float* in, float* out) {
  const ModelConfig& c = model_.config;
  const LayerConfig& lc = c.layers[l];
  const LayerWeights& w = model_.layers[l];
  const ForwardBatch& b = *batch_;
  KvStorage& kv = *kv_;
  const int32_t T = T_, qd = lc.q_dim(), kd = lc.k_dim(), vd = lc.v_dim(), hd = lc.head_dim_k;
  {
    ProfScope ps(ProfKind::Matmul);
    if (lc.attn_output_gate) {
      project_gated_q(l, in);
      const MatmulOut kv_out[] = {{&w.wk, k_.data()}, {&w.wv, v_.data()}};
      ops_->matmul_same_input(kv_out, 2, in, T);
    } else {
      const MatmulOut qkv_out[] = {{&w.wq, q_.data()}, {&w.wk, k_.data()}, {&w.wv, v_.data()}};
      ops_->matmul_same_input(qkv_out, 3, in, T);
    }
  }
  add_row_bias(q_.data(), w.bq, T, qd);
  add_row_bias(k_.data(), w.bk, T, kd);
  add_row_bias(v_.data(), w.bv, T, vd);
  if (w.q_norm) ops_->rmsnorm_rows(q_.data(), q_.data(), w.q_norm, static_cast<int64_t>(T) * lc.num_heads, hd, c.rms_eps);
  if (w.k_norm) ops_->rmsnorm_rows(k_.data(), k_.data(), w.k_norm, static_cast<int64_t>(T) * lc.num_kv_heads, hd, c.rms_eps);
  const KvLayerGeometry& g = kv.layout().layers[l];
  const std::vector<int64_t>& slots = b.slots[g.group];
  const RopeTable& rope = ropes_[layer_rope_[l]];
  for (int32_t t = 0; t < T; ++t) {
    ProfScope ps(ProfKind::KvWrite);
    rope.apply(q_.data() + static_cast<size_t>(t) * qd, lc.num_heads, b.positions[t], hd);
    rope.apply(k_.data() + static_cast<size_t>(t) * kd, lc.num_kv_heads, b.positions[t], hd);
    write_kv(kv, l, slots[t], k_.data() + static_cast<size_t>(t) * kd, v_.data() + static_cast<size_t>(t) * vd);
    // The same rows at a wider dtype (a residual window), their sketch (a select index): each stream's encoding.
    for (const int32_t r : g.appended_streams) {
      write_kv(kv, r, b.slots[kv.layout().layers[r].group][t], k_.data() + static_cast<size_t>(t) * kd,
               v_.data() + static_cast<size_t>(t) * vd);
    }
  }
  if (q_observer_) q_observer_(l, q_.data(), T);
  if (observer_) observer_(l, k_.data(), v_.data(), T);
  PagedAttention::LayerKv lk = layer_kv(l);
  if (const int32_t r = kv.layout().appended_stream(l, KvRecordKind::Residual); r >= 0) {
    const KvLayerGeometry& rg = kv.layout().layers[r];
    lk.residual = PagedAttention::LayerKv::Residual{kv.k_base(r), kv.v_base(r), rg.k_head_bytes(), rg.v_head_bytes(),
                                                    kv.k_head_stride_bytes(r), kv.v_head_stride_bytes(r), rg.dtype,
                                                    g.residual_tokens, &attention_plan(rg.group).meta()};
  }
  if (g.select.on()) lk.select = layer_select(l);
  const AttentionDims dims{lc.num_heads, lc.num_kv_heads, lc.head_dim_k, lc.head_dim_v, c.attn_scale, w.attn_sinks};
  {
    PagedAttention& plan = attention_plan(g.group);
    const auto t0 = std::chrono::steady_clock::now();
    ops_->attention(plan, q_.data(), lk, dims, att_.data());
    const PagedAttention::ReadStats& r = plan.last_read();
    read_stats_.add(r);
    if (Profiler* prof = Profiler::active()) {  // select mode's choice of rows is the indexer's share of the walk
      const double wall = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
      const double busy = r.select_seconds + r.walk_seconds;
      const double share = busy > 0 ? r.select_seconds / busy : 0.0;
      prof->add(ProfKind::Indexer, share * wall);
      prof->add(ProfKind::Attention, (1 - share) * wall);
    }
  }
  if (lc.attn_output_gate) {  // att *= sigmoid(gate)
    const size_t n = static_cast<size_t>(T) * lc.attn_out_dim();
    for (size_t i = 0; i < n; ++i) att_[i] *= 1.0f / (1.0f + std::exp(-qgate_[i]));
  }
  {
    ProfScope ps(ProfKind::Matmul);
    ops_->matmul(w.wo, att_.data(), T, out);
  }
  ops_->all_reduce_sum(out, static_cast<int64_t>(T) * c.dim);  // a row-split wo sums over ranks; then the bias once
  add_row_bias(out, w.bo, T, c.dim);
}

}  // namespace slimkv
