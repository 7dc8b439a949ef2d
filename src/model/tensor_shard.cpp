#include "model/tensor_shard.h"

#include <sys/mman.h>
#include <unistd.h>

#include <cstring>

#include "core/check.h"

namespace slimkv {
namespace {

// Drops this process's mapping of the whole pages inside [p, p + bytes) (a file-backed, read-only mapping: they
// are read again from the file if ever touched): the full matrix a column slice was copied from stays out of
// this rank's resident memory.
void release_pages(const void* p, int64_t bytes) {
  const uintptr_t page = static_cast<uintptr_t>(::sysconf(_SC_PAGESIZE));
  const uintptr_t begin = (reinterpret_cast<uintptr_t>(p) + page - 1) / page * page;
  const uintptr_t end = (reinterpret_cast<uintptr_t>(p) + static_cast<uintptr_t>(bytes)) / page * page;
  if (end > begin) ::madvise(reinterpret_cast<void*>(begin), end - begin, MADV_DONTNEED);  // best effort
}

WeightView row_slice(const WeightView& w, int64_t first, int64_t count) {  // rows [first, first + count): a view
  WeightView v = w;
  v.rows = count;
  v.data = w.row(first);
  return v;
}

// Columns [first, first + count) of every row, copied into storage the model owns (a row-split projection's input
// slice). The cut must fall on the weight type's block boundaries.
WeightView col_slice(Model& m, const WeightView& w, int64_t first, int64_t count, int32_t layer, const char* what) {
  const int64_t block = dtype_block_elems(w.dtype);
  SLIMKV_CHECK(first % block == 0 && count % block == 0,
               "tensor parallel: layer {}'s {} would keep columns [{}, {}) of {}, not whole {}-value {} blocks: use "
               "fewer ranks or another weight type", layer, what, first, first + count, w.cols, block,
               dtype_name(w.dtype));
  const int64_t off_bytes = first / block * dtype_block_bytes(w.dtype);
  const int64_t row_bytes = count / block * dtype_block_bytes(w.dtype);
  auto buf = std::make_shared<std::vector<uint8_t>>(static_cast<size_t>(w.rows * row_bytes));  // [rows, count]
  for (int64_t r = 0; r < w.rows; ++r) std::memcpy(buf->data() + r * row_bytes, w.row(r) + off_bytes, row_bytes);
  release_pages(w.data, w.rows * w.row_bytes());
  m.keepalive.push_back(buf);
  WeightView v = w;
  v.cols = count;
  v.data = buf->data();
  return v;
}

// Rows [first, first + count) of each range's start, stacked into one matrix the model owns (a split of a matrix
// whose output rows are several head-indexed blocks, e.g. DeltaNet's [q | k | v]).
WeightView stacked_rows(Model& m, const WeightView& w, const std::vector<std::pair<int64_t, int64_t>>& ranges) {
  int64_t rows = 0;
  for (const auto& r : ranges) rows += r.second;
  auto buf = std::make_shared<std::vector<uint8_t>>(static_cast<size_t>(rows * w.row_bytes()));
  uint8_t* dst = buf->data();
  for (const auto& [first, count] : ranges) {
    std::memcpy(dst, w.row(first), static_cast<size_t>(count * w.row_bytes()));
    dst += count * w.row_bytes();
  }
  m.keepalive.push_back(buf);
  WeightView v = w;
  v.rows = rows;
  v.data = buf->data();
  return v;
}

// Gated DeltaNet: each rank keeps a contiguous range of key heads and the value heads that read them — the
// [q | k | v] projection and the convolution's channels in those three ranges, z, beta/alpha (grouped per key head),
// dt bias and A by head, the out projection's matching input columns. The recurrent state follows the config
// (per rank ÷ T). `config_done`: the model-wide head counts are divided once.
void shard_delta_net(Model& m, int32_t l, TensorShard s, bool config_done) {
  DeltaNetConfig& d = m.config.delta_net;
  LayerWeights& w = m.layers[l];
  const int32_t k_heads = config_done ? d.num_k_heads * s.ranks : d.num_k_heads;
  const int32_t v_heads = config_done ? d.num_v_heads * s.ranks : d.num_v_heads;
  SLIMKV_CHECK(k_heads % s.ranks == 0, "tensor parallel: layer {}'s {} DeltaNet key heads are not divisible by {} "
               "ranks", l, k_heads, s.ranks);
  const int64_t kn = k_heads / s.ranks, vn = v_heads / s.ranks, kf = s.rank * kn, vf = s.rank * vn;
  const int64_t hk = d.head_k_dim, hv = d.head_v_dim, key_dim = k_heads * hk, ratio = v_heads / k_heads;
  const std::vector<std::pair<int64_t, int64_t>> channels = {{kf * hk, kn * hk}, {key_dim + kf * hk, kn * hk},
                                                             {2 * key_dim + vf * hv, vn * hv}};
  w.ssm_qkv = stacked_rows(m, w.ssm_qkv, channels);
  std::vector<float> conv;  // [channels, conv_kernel]
  for (const auto& [first, count] : channels) {
    conv.insert(conv.end(), w.ssm_conv + first * d.conv_kernel, w.ssm_conv + (first + count) * d.conv_kernel);
  }
  w.ssm_conv = m.own_f32(std::move(conv));
  w.ssm_z = row_slice(w.ssm_z, vf * hv, vn * hv);
  w.ssm_ba = row_slice(w.ssm_ba, kf * 2 * ratio, kn * 2 * ratio);
  w.ssm_dt_bias += vf;
  w.ssm_a += vf;
  w.ssm_out = col_slice(m, w.ssm_out, vf * hv, vn * hv, l, "DeltaNet out");
  if (!config_done) {
    d.num_k_heads = static_cast<int32_t>(kn);
    d.num_v_heads = static_cast<int32_t>(vn);
  }
}

void shard_attention(Model& m, int32_t l, TensorShard s) {
  LayerConfig& lc = m.config.layers[l];
  LayerWeights& w = m.layers[l];
  const int32_t ranks = s.ranks, heads = lc.num_heads / ranks, kv = lc.num_kv_heads;
  SLIMKV_CHECK(lc.num_heads % ranks == 0, "tensor parallel: layer {} has {} query heads, not divisible by {} ranks", l,
               lc.num_heads, ranks);
  int32_t kv_keep = 0, kv_first = 0;  // this rank's KV heads
  if (kv % ranks == 0) {
    kv_keep = kv / ranks;
    kv_first = s.rank * kv_keep;
  } else {
    SLIMKV_CHECK(ranks % kv == 0, "tensor parallel: layer {} has {} KV heads: neither a multiple nor a divisor of {} "
                 "ranks", l, kv, ranks);
    kv_keep = 1;  // replicated: the one KV head this rank's query heads read
    kv_first = s.rank * heads / (lc.num_heads / kv);
  }
  const int32_t hd = lc.head_dim_k, hdv = lc.head_dim_v;
  const int64_t q_rows = lc.attn_output_gate ? 2 * hd : hd;  // per head: [q | gate] when gated
  w.wq = row_slice(w.wq, static_cast<int64_t>(s.rank) * heads * q_rows, heads * q_rows);
  w.wk = row_slice(w.wk, static_cast<int64_t>(kv_first) * hd, static_cast<int64_t>(kv_keep) * hd);
  w.wv = row_slice(w.wv, static_cast<int64_t>(kv_first) * hdv, static_cast<int64_t>(kv_keep) * hdv);
  if (w.bq) w.bq += static_cast<int64_t>(s.rank) * heads * hd;
  if (w.bk) w.bk += static_cast<int64_t>(kv_first) * hd;
  if (w.bv) w.bv += static_cast<int64_t>(kv_first) * hdv;
  if (w.attn_sinks) w.attn_sinks += static_cast<int64_t>(s.rank) * heads;
  w.wo = col_slice(m, w.wo, static_cast<int64_t>(s.rank) * heads * hdv, static_cast<int64_t>(heads) * hdv, l, "wo");
  lc.num_heads = heads;  // bo stays whole: it is added once, after the all-reduce
  lc.num_kv_heads = kv_keep;
  m.kv_head_first[l] = kv_first;
}

// MLA: heads split as in plain attention — q (wq_b or wq) by each head's [nope | rope] rows, k_b / v_b by head,
// wo by the heads' value columns — while the latent path (wq_a, wkv_a, their norms) and the latent cache stay whole
// on every rank: one latent serves every head, so it is replicated (KV memory per rank is not divided).
void shard_mla(Model& m, int32_t l, TensorShard s) {
  LayerConfig& lc = m.config.layers[l];
  LayerWeights& w = m.layers[l];
  const MlaConfig& a = m.config.mla;
  SLIMKV_CHECK(lc.num_heads % s.ranks == 0, "tensor parallel: layer {} has {} query heads, not divisible by {} ranks",
               l, lc.num_heads, s.ranks);
  const int32_t heads = lc.num_heads / s.ranks, first = s.rank * heads;
  const int64_t q_rows = a.nope_dim + a.rope_dim;
  WeightView& q = w.wq_b.data ? w.wq_b : w.wq;
  q = row_slice(q, first * q_rows, heads * q_rows);
  w.k_b = std::vector<WeightView>(w.k_b.begin() + first, w.k_b.begin() + first + heads);
  w.v_b = std::vector<WeightView>(w.v_b.begin() + first, w.v_b.begin() + first + heads);
  w.wo = col_slice(m, w.wo, static_cast<int64_t>(first) * a.v_head_dim, static_cast<int64_t>(heads) * a.v_head_dim, l,
                   "wo");
  lc.num_heads = heads;
}

// DeepSeek-V4: heads split by whole output groups — q (wq_b) by heads, sinks by head, wo_a by group, wo_b by the
// groups' LoRA columns — while the q LoRA, the one shared K = V head, its compressors, the indexer and the
// hyper-connections stay whole on every rank (so the compressed streams are replicated: KV per rank not divided).
void shard_dsv4_attention(Model& m, int32_t l, TensorShard s) {
  LayerConfig& lc = m.config.layers[l];
  LayerWeights& w = m.layers[l];
  const int32_t groups = m.config.dsv4.o_groups * s.ranks;  // the model's own count (o_groups is divided once, below)
  SLIMKV_CHECK(groups % s.ranks == 0 && lc.num_heads % s.ranks == 0,
               "tensor parallel: layer {} has {} heads in {} output groups, not divisible by {} ranks", l,
               lc.num_heads, groups, s.ranks);
  const int32_t heads = lc.num_heads / s.ranks, per_group = groups / s.ranks;
  const int64_t D = lc.head_dim_k, olr = m.config.dsv4.o_lora_rank;
  w.wq_b = row_slice(w.wq_b, static_cast<int64_t>(s.rank) * heads * D, heads * D);
  if (w.attn_sinks) w.attn_sinks += static_cast<int64_t>(s.rank) * heads;
  w.wo_a = std::vector<WeightView>(w.wo_a.begin() + s.rank * per_group, w.wo_a.begin() + (s.rank + 1) * per_group);
  w.wo_b = col_slice(m, w.wo_b, s.rank * per_group * olr, per_group * olr, l, "wo_b");
  lc.num_heads = heads;
}

// A copy of `bias` [experts, width] keeping columns [first, first + count) of each expert's row.
const float* expert_bias_slice(Model& m, const float* bias, int32_t experts, int64_t width, int64_t first,
                               int64_t count) {
  if (!bias || count == width) return bias;
  std::vector<float> out;
  for (int32_t e = 0; e < experts; ++e) out.insert(out.end(), bias + e * width + first, bias + e * width + first + count);
  return m.own_f32(std::move(out));
}

// MoE: the routed experts are spread over the E expert groups (a contiguous range each, the others' views emptied:
// their pages are never touched) and each kept expert is column-split over the T / E ranks of its group (gate / up
// by rows, down by input columns, the down bias on the group's first rank only); the router stays whole, so every
// rank routes alike, and the combine after the layer adds the other ranks' shares. Shared experts are column-split
// over every rank (all-reduce combine) or kept whole (all-to-all combine: each token's owner runs them).
// `config_done`: the expert width is divided once.
void shard_moe(Model& m, int32_t l, TensorShard s, bool config_done) {
  MoeConfig& mc = m.config.moe;
  LayerWeights& w = m.layers[l];
  SLIMKV_CHECK(mc.num_experts % s.expert_groups == 0, "expert parallel: layer {} has {} experts, not divisible by {} "
               "expert groups", l, mc.num_experts, s.expert_groups);
  const int32_t per_group = mc.num_experts / s.expert_groups, first = s.expert_group() * per_group;
  const int32_t slices = s.expert_slices();
  const int64_t full = config_done ? mc.expert_ffn_dim * int64_t{slices} : mc.expert_ffn_dim;
  SLIMKV_CHECK(full % slices == 0, "expert parallel: layer {}'s experts ({} wide) are not divisible by {} ranks per "
               "expert group", l, full, slices);
  const int64_t width = full / slices, col = static_cast<int64_t>(s.expert_slice()) * width;
  for (int32_t e = 0; e < mc.num_experts; ++e) {
    if (e >= first && e < first + per_group) {
      if (slices == 1) continue;
      w.exp_gate[e] = row_slice(w.exp_gate[e], col, width);
      if (w.exp_up[e].data) w.exp_up[e] = row_slice(w.exp_up[e], col, width);
      w.exp_down[e] = col_slice(m, w.exp_down[e], col, width, l, "expert down");
      continue;
    }
    w.exp_gate[e] = WeightView{};
    w.exp_up[e] = WeightView{};
    w.exp_down[e] = WeightView{};
  }
  w.exp_gate_b = expert_bias_slice(m, w.exp_gate_b, mc.num_experts, full, col, width);
  w.exp_up_b = expert_bias_slice(m, w.exp_up_b, mc.num_experts, full, col, width);
  if (s.expert_slice() != 0) w.exp_down_b = nullptr;  // added once per expert: by its group's first rank
  if (!config_done) mc.expert_ffn_dim = static_cast<int32_t>(width);
  if (mc.num_shared_experts > 0 && w.shexp_gate.data && !s.expert_all_to_all) {
    const int64_t sff = w.shexp_gate.rows;
    SLIMKV_CHECK(sff % s.ranks == 0, "tensor parallel: layer {}'s shared experts ({} wide) are not divisible by {} "
                 "ranks", l, sff, s.ranks);
    const int64_t share = sff / s.ranks, off = static_cast<int64_t>(s.rank) * share;
    w.shexp_gate = row_slice(w.shexp_gate, off, share);
    w.shexp_up = row_slice(w.shexp_up, off, share);
    w.shexp_down = col_slice(m, w.shexp_down, off, share, l, "shared-expert down");
  }
}

void shard_dense_ffn(Model& m, int32_t l, TensorShard s) {
  LayerConfig& lc = m.config.layers[l];
  LayerWeights& w = m.layers[l];
  SLIMKV_CHECK(lc.ffn_dim % s.ranks == 0, "tensor parallel: layer {}'s FFN width {} is not divisible by {} ranks", l,
               lc.ffn_dim, s.ranks);
  const int64_t width = lc.ffn_dim / s.ranks, first = static_cast<int64_t>(s.rank) * width;
  w.w1 = row_slice(w.w1, first, width);
  if (w.w3.data) w.w3 = row_slice(w.w3, first, width);
  w.w2 = col_slice(m, w.w2, first, width, l, "FFN down");
  lc.ffn_dim = static_cast<int32_t>(width);
}

}  // namespace

void shard_for_tensor_parallel(Model& m, TensorShard s) {
  SLIMKV_CHECK(s.ranks >= 1 && s.rank >= 0 && s.rank < s.ranks, "tensor parallel: rank {} of {}", s.rank, s.ranks);
  SLIMKV_CHECK(s.expert_groups >= 1 && s.ranks % s.expert_groups == 0, "--expert-parallel-size {} must divide the "
               "{} ranks", s.expert_groups, s.ranks);
  if (s.ranks == 1) return;
  m.unsharded_config = m.config;
  m.kv_head_first.assign(m.config.num_layers, 0);
  bool delta_done = false, moe_done = false;
  for (int32_t l = 0; l < m.config.num_layers; ++l) {
    if (m.config.layers[l].delta_net) {
      shard_delta_net(m, l, s, delta_done);
      delta_done = true;
    } else if (m.config.layers[l].mla) {
      shard_mla(m, l, s);
    } else if (m.config.dsv4.enabled()) {
      if (l == 0) {
        SLIMKV_CHECK(m.config.dsv4.o_groups % s.ranks == 0, "tensor parallel: {} output groups, not divisible by {} "
                     "ranks", m.config.dsv4.o_groups, s.ranks);
        m.config.dsv4.o_groups /= s.ranks;  // every layer's groups: this rank's share
      }
      shard_dsv4_attention(m, l, s);
    } else {
      shard_attention(m, l, s);
    }
    if (m.config.layers[l].moe) {
      shard_moe(m, l, s, moe_done);
      moe_done = true;
    } else {
      shard_dense_ffn(m, l, s);
    }
  }
  if (m.config.vocab_size % s.ranks == 0) {  // vocabulary-parallel head: each rank its logits' columns
    const int64_t rows = m.config.vocab_size / s.ranks;
    m.output = row_slice(m.output, static_cast<int64_t>(s.rank) * rows, rows);
    s.vocab_split = true;
  }
  int32_t first_attention = 0;  // the uniform values tools read: the first attention layer's
  while (first_attention + 1 < m.config.num_layers && m.config.layers[first_attention].delta_net) ++first_attention;
  const LayerConfig& first = m.config.layers[first_attention];
  m.config.num_heads = first.num_heads;
  m.config.num_kv_heads = first.num_kv_heads;
  m.config.hidden_dim = first.ffn_dim;
  m.shard = s;
  m.config.validate();
}

}  // namespace slimkv
