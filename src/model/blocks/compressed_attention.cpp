// DeepSeek-V4's compressed attention (blocks/compressed_attention.h), step by step: project (q, the K = V record,
// the raw stream), compress (state rows, then the entries its tokens complete), select_entries (the lightning
// indexer, CSA), attend (window + entries + sink), output_lora.
// Records live in the paged cache: raw tokens (windowed group), entries and indexer keys (compressed groups, one
// record per `ratio` tokens), compressor state (the last overlap * ratio tokens' rows, windowed group).
#include <algorithm>
#include <cmath>
#include <cstring>

#include "core/check.h"
#include "core/half.h"
#include "core/profiler.h"
#include "kernels/kv_codec.h"
#include "kernels/ops.h"
#include "model/blocks/compressed_attention.h"
#include "model/kv_streams.h"
#include "model/weight_binder.h"

namespace slimkv {
namespace {

// Normalised Sylvester-Hadamard transform in place (n a power of two): what llama.cpp applies to indexer queries
// and keys before the keys are stored F16.
void fwht(float* x, int32_t n) {
  for (int32_t len = 1; len < n; len <<= 1) {
    for (int32_t i = 0; i < n; i += len << 1) {
      for (int32_t j = i; j < i + len; ++j) {
        const float a = x[j], b = x[j + len];
        x[j] = a + b;
        x[j + len] = a - b;
      }
    }
  }
  const float k = 1.0f / std::sqrt(static_cast<float>(n));
  for (int32_t i = 0; i < n; ++i) x[i] *= k;
}

// Inverse rotation of the interleaved pairs at `pos` (ggml_rope_ext_back: the same cos/sin, sine negated).
void derope(const RopeTable& r, float* x, int32_t pos) {
  const int32_t half = r.rotary_dim / 2;
  const float* c = r.cos_.data() + static_cast<size_t>(pos) * half;
  const float* s = r.sin_.data() + static_cast<size_t>(pos) * half;
  for (int32_t i = 0; i < half; ++i) {
    const float a = x[2 * i], b = x[2 * i + 1];
    x[2 * i] = a * c[i] + b * s[i];
    x[2 * i + 1] = b * c[i] - a * s[i];
  }
}

// Where one stream's records live for the step: its storage geometry and its group's page table.
struct StreamView {
  const KvStorage* kv = nullptr;
  int32_t stream = -1;
  const PagedBatchMeta* meta = nullptr;
  const std::vector<int64_t>* slots = nullptr;  // [T] this step's write slots (-1: none)
  int32_t bs = 0;
  const KvLayerGeometry* g = nullptr;

  StreamView(const KvStorage& s, const ForwardBatch& b, int32_t st) : kv(&s), stream(st) {
    g = &s.layout().layers[st];
    meta = &b.attn[g->group];
    slots = &b.slots[g->group];
    bs = s.layout().block_size_tokens;
  }
  int64_t slot(int32_t seq, int64_t index) const {  // index: a token position or an entry number
    const int32_t page = meta->kv_indices[meta->kv_indptr[seq] + index / bs];
    SLIMKV_CHECK(page >= 0, "deepseek4: record {} of a sequence was freed", index);
    return static_cast<int64_t>(page) * bs + index % bs;
  }
  bool plain() const { return g->is_plain_f32(); }
  // The record at a slot as floats: a pointer into the cache (plain F32) or decoded into buf; rotated records are
  // un-rotated unless the caller works in the rotated basis (rotated = true: it rotates its queries instead).
  const float* read(int64_t s, float* buf, bool rotated = false) const {
    const uint8_t* p = const_cast<KvStorage*>(kv)->k_head(stream, s, 0);
    if (plain()) return reinterpret_cast<const float*>(p);
    decode_kv_record(p, g->k_dim, 0, g->dtype, buf);
    if (g->rotate && !rotated) hadamard_unrotate_record(buf, g->k_dim, 0);
    return buf;
  }
};

// Pools one compressed entry (channels [0, n)) from the compressor state records of its tokens. HCA (coff 1): the
// entry's own `ratio` tokens, record [kv n | score n]. CSA (coff 2): the previous group's tokens on channels [0, n)
// and its own on [n, 2n), record [kv 2n | score 2n]; before the first group the previous half is kv 0, score -inf.
void pool_entry(const StreamView& st, int32_t seq, int32_t entry, int32_t ratio, int32_t coff, int32_t n, float* out,
                std::vector<float>& w, std::vector<const float*>& rows, std::vector<float>& dec) {
  const int32_t m = coff * ratio;  // pooled tokens
  rows.assign(m, nullptr);
  dec.resize(static_cast<size_t>(m) * st.g->k_dim);
  for (int32_t j = 0; j < m; ++j) {
    const int64_t p = static_cast<int64_t>(entry + 1 - coff) * ratio + j;
    if (p >= 0) rows[j] = st.read(st.slot(seq, p), dec.data() + static_cast<size_t>(j) * st.g->k_dim);
  }
  w.resize(m);
  const int32_t cn = coff * n;  // kv channels per record (the score channels follow)
  for (int32_t i = 0; i < n; ++i) {
    float mx = -INFINITY;
    for (int32_t j = 0; j < m; ++j) {
      const int32_t ch = coff == 2 && j >= ratio ? n + i : i;
      w[j] = rows[j] ? rows[j][cn + ch] : -INFINITY;
      mx = std::max(mx, w[j]);
    }
    double sum = 0;
    for (int32_t j = 0; j < m; ++j) sum += w[j] = w[j] == -INFINITY ? 0.0f : std::exp(w[j] - mx);
    const float inv = static_cast<float>(1.0 / sum);
    double acc = 0;
    for (int32_t j = 0; j < m; ++j) {
      if (!rows[j]) continue;
      const int32_t ch = coff == 2 && j >= ratio ? n + i : i;
      acc += rows[j][ch] * (w[j] * inv);
    }
    out[i] = static_cast<float>(acc);
  }
}

}  // namespace

CompressedLayerStreams compressed_layer_streams(const ModelConfig& c, int32_t layer) {
  const LayerConfig& l = c.layers[layer];
  const int32_t head_dim = l.head_dim_k, ratio = l.compress_ratio, overlap = ratio == 4 ? 2 : 1;
  const int32_t index_dim = c.dsv4.index_head_dim;
  CompressedLayerStreams s;
  auto add = [&](KvLayerSpec spec) {
    s.specs.push_back(spec);
    return static_cast<int32_t>(s.specs.size()) - 1;
  };
  s.raw = add({1, head_dim, head_dim, l.sliding_window, true});
  if (ratio == 0) return s;
  s.comp = add({1, head_dim, head_dim, 0, true, ratio});
  s.comp_state = add({1, 2 * overlap * head_dim, 2 * overlap * head_dim, overlap * ratio, true, 0,
                      KvRecordKind::State});
  if (ratio != 4) return s;
  s.idx = add({1, index_dim, index_dim, 0, true, ratio, KvRecordKind::IndexKeys});
  s.idx_state = add({1, 4 * index_dim, 4 * index_dim, 2 * ratio, true, 0, KvRecordKind::State});
  return s;
}

CompressedLayerStreams compressed_stream_indices(const ModelConfig& c, int32_t layer) {
  CompressedLayerStreams s = compressed_layer_streams(c, layer);
  const int32_t first = first_kv_stream(c, layer);
  for (int32_t* i : {&s.raw, &s.comp, &s.comp_state, &s.idx, &s.idx_state}) {
    if (*i >= 0) *i += first;
  }
  return s;
}

struct CompressedAttention::Layer {
  int32_t layer = 0, tokens = 0;
  int32_t heads = 0, head_dim = 0, rope_dim = 0, nope_dim = 0;  // head_dim = nope_dim + rope_dim (RoPE on the last)
  int32_t ratio = 0, overlap = 1, window = 0;                   // overlap: 2 on CSA layers (ratio 4), else 1
  int32_t index_heads = 0, index_dim = 0, topk_cap = 0;
  CompressedLayerStreams streams;  // as positions in the storage's layers
  const LayerWeights* w = nullptr;
  const RopeTable* rope = nullptr;
};

CompressedAttention::CompressedAttention(const Model& m) {
  for (int32_t l = 0; l < m.config.num_layers; ++l) streams_.push_back(compressed_stream_indices(m.config, l));
}

void CompressedAttention::run(DecoderForward& f, int32_t l, const float* in, float* out) {
  const ModelConfig& c = f.model().config;
  const LayerConfig& lc = c.layers[l];
  Layer ly;
  ly.layer = l;
  ly.tokens = f.num_tokens();
  ly.heads = lc.num_heads;
  ly.head_dim = lc.head_dim_k;
  ly.rope_dim = lc.rotary_dim;
  ly.nope_dim = ly.head_dim - ly.rope_dim;
  ly.ratio = lc.compress_ratio;
  ly.overlap = ly.ratio == 4 ? 2 : 1;
  ly.window = lc.sliding_window;
  ly.index_heads = c.dsv4.index_heads;
  ly.index_dim = c.dsv4.index_head_dim;
  ly.topk_cap = f.block_options().index_topk > 0 ? f.block_options().index_topk : c.dsv4.index_topk;
  ly.streams = streams_[l];
  ly.w = &f.model().layers[l];
  ly.rope = &f.rope(l);
  project(f, ly, in);
  if (ly.ratio > 0) compress(f, ly, in, ly.streams.comp_state, ly.streams.comp, false);
  if (ly.ratio == 4) {
    compress(f, ly, in, ly.streams.idx_state, ly.streams.idx, true);
    select_entries(f, ly, in);
  }
  attend(f, ly);
  output_lora(f, ly, out);
}

// q = per-head norm(wq_b · norm(wq_a · x)), roped; the K = V record = norm(wkv · x), roped, into the raw stream.
void CompressedAttention::project(DecoderForward& f, const Layer& ly, const float* in) {
  const ModelConfig& c = f.model().config;
  const Dsv4Config& d = c.dsv4;
  const LayerWeights& w = *ly.w;
  const ForwardBatch& b = f.batch();
  KvStorage& kv = f.kv();
  const int32_t T = ly.tokens, H = ly.heads, D = ly.head_dim, nope = ly.nope_dim;
  const float eps = c.rms_eps;
  qr_.resize(static_cast<size_t>(T) * d.q_lora_rank);
  q_.resize(static_cast<size_t>(T) * H * D);
  kv_.resize(static_cast<size_t>(T) * D);
  o_.resize(static_cast<size_t>(T) * H * D);
  {
    ProfScope ps(ProfKind::Matmul);
    f.ops().matmul(w.wq_a, in, T, qr_.data());
  }
  f.ops().rmsnorm_rows(qr_.data(), qr_.data(), w.q_a_norm, T, d.q_lora_rank, eps);
  {
    ProfScope ps(ProfKind::Matmul);
    f.ops().matmul(w.wq_b, qr_.data(), T, q_.data());
    f.ops().matmul(w.wkv, in, T, kv_.data());
  }
  const StreamView raw(kv, b, ly.streams.raw);
  ProfScope ps(ProfKind::KvWrite);
  for (int32_t t = 0; t < T; ++t) {
    const int32_t pos = b.positions[t];
    float* q = q_.data() + static_cast<size_t>(t) * H * D;
    for (int32_t h = 0; h < H; ++h) rmsnorm_unweighted(q + static_cast<size_t>(h) * D, q + static_cast<size_t>(h) * D, D, eps);
    ly.rope->apply(q + nope, H, pos, D);
    float* k = kv_.data() + static_cast<size_t>(t) * D;
    rmsnorm(k, k, w.kv_norm, D, eps);
    ly.rope->apply(k + nope, 1, pos, D);
    f.write_kv(kv, ly.streams.raw, (*raw.slots)[t], k, k);
  }
}

// A compressor: every token's state row into the state stream, then the entries its tokens complete (pooled, normed,
// roped at the group's first position; indexer keys also Hadamard-rotated).
void CompressedAttention::compress(DecoderForward& f, const Layer& ly, const float* in, int32_t state_stream,
                                   int32_t entry_stream, bool indexer) {
  const LayerWeights& w = *ly.w;
  const WeightView& wkv = indexer ? w.idx_comp_wkv : w.comp_wkv;
  const WeightView& wgate = indexer ? w.idx_comp_wgate : w.comp_wgate;
  const float* ape = indexer ? w.idx_comp_ape : w.comp_ape;
  const float* norm = indexer ? w.idx_comp_norm : w.comp_norm;
  const int32_t n = indexer ? ly.index_dim : ly.head_dim;  // channels of an entry
  const ForwardBatch& b = f.batch();
  KvStorage& kv = f.kv();
  const int32_t T = ly.tokens, r = ly.ratio, coff = ly.overlap;
  ProfScope ps(ProfKind::Compressor);
  const int32_t cn = coff * n;
  st_kv_.resize(static_cast<size_t>(T) * cn);
  st_sc_.resize(static_cast<size_t>(T) * cn);
  f.ops().matmul(wkv, in, T, st_kv_.data());
  f.ops().matmul(wgate, in, T, st_sc_.data());
  const StreamView st(kv, b, state_stream), ent(kv, b, entry_stream);
  st_rec_.resize(2 * static_cast<size_t>(cn));
  for (int32_t t = 0; t < T; ++t) {
    const float* a = ape + static_cast<size_t>(b.positions[t] % r) * cn;
    std::copy_n(st_kv_.data() + static_cast<size_t>(t) * cn, cn, st_rec_.data());
    for (int32_t i = 0; i < cn; ++i) st_rec_[cn + i] = st_sc_[static_cast<size_t>(t) * cn + i] + a[i];
    f.write_kv(kv, state_stream, (*st.slots)[t], st_rec_.data(), st_rec_.data());
  }
  std::vector<float> pw, dec;
  std::vector<const float*> rows;
  entry_.resize(std::max(ly.head_dim, ly.index_dim));
  for (int32_t t = 0; t < T; ++t) {
    const int32_t pos = b.positions[t];
    if ((pos + 1) % r != 0) continue;
    const int32_t e = (pos + 1) / r - 1;
    pool_entry(st, st.meta->token_seq[t], e, r, coff, n, entry_.data(), pw, rows, dec);
    rmsnorm(entry_.data(), entry_.data(), norm, n, f.model().config.rms_eps);
    ly.rope->apply(entry_.data() + (n - ly.rope_dim), 1, e * r, n);
    if (indexer) fwht(entry_.data(), n);
    f.write_kv(kv, entry_stream, (*ent.slots)[t], entry_.data(), entry_.data());
  }
}

// Lightning indexer (CSA): per token the top-k complete entries by sum_h w_h relu(q_h · k_e). Exact ties (all
// heads' relu 0 gives score 0) go to the later entry, as llama.cpp's top_k resolved the one tie in its dump.
void CompressedAttention::select_entries(DecoderForward& f, const Layer& ly, const float* in) {
  const LayerWeights& w = *ly.w;
  const ForwardBatch& b = f.batch();
  const int32_t T = ly.tokens, r = ly.ratio, iH = ly.index_heads, iD = ly.index_dim, topk_cap = ly.topk_cap;
  ProfScope ps(ProfKind::Indexer);
  iq_.resize(static_cast<size_t>(T) * iH * iD);
  iw_.resize(static_cast<size_t>(T) * iH);
  f.ops().matmul(w.idx_q_b, qr_.data(), T, iq_.data());
  f.ops().matmul(w.idx_proj, in, T, iw_.data());
  const float wscale = 1.0f / std::sqrt(static_cast<float>(iD * iH));
  for (int32_t t = 0; t < T; ++t) {
    float* q = iq_.data() + static_cast<size_t>(t) * iH * iD;
    ly.rope->apply(q + (iD - ly.rope_dim), iH, b.positions[t], iD);
    for (int32_t h = 0; h < iH; ++h) {
      fwht(q + static_cast<size_t>(h) * iD, iD);
      for (int32_t i = 0; i < iD; ++i) q[h * iD + i] = fp16_to_fp32(fp32_to_fp16(q[h * iD + i]));
    }
    for (int32_t h = 0; h < iH; ++h) iw_[static_cast<size_t>(t) * iH + h] *= wscale;
  }
  topk_.assign(static_cast<size_t>(T) * topk_cap, -1);
  ntopk_.assign(T, 0);
  const StreamView idx(f.kv(), b, ly.streams.idx);
  auto score_tokens = [&](int64_t t0, int64_t t1, int32_t) {
    std::vector<float> sc, kmat, dots, kbuf(iD);
    std::vector<int32_t> order;
    for (int64_t t = t0; t < t1; ++t) {
      const int32_t nvis = (b.positions[t] + 1) / r, seq = idx.meta->token_seq[t];
      const float* q = iq_.data() + static_cast<size_t>(t) * iH * iD;
      const float* hw = iw_.data() + static_cast<size_t>(t) * iH;
      sc.assign(nvis, 0.0f);
      if (nvis > 0) {  // dots[h, e] = q_h · k_e through the matmul kernels: keys [nvis, iD] as the matrix
        kmat.resize(static_cast<size_t>(nvis) * iD);
        for (int32_t e = 0; e < nvis; ++e) {
          const float* k = idx.read(idx.slot(seq, e), kbuf.data());
          std::copy_n(k, iD, kmat.data() + static_cast<size_t>(e) * iD);
        }
        dots.resize(static_cast<size_t>(iH) * nvis);
        matmul(WeightView{DType::F32, nvis, iD, kmat.data()}, q, iH, dots.data(), nullptr);
        for (int32_t h = 0; h < iH; ++h) {
          const float* dh = dots.data() + static_cast<size_t>(h) * nvis;
          for (int32_t e = 0; e < nvis; ++e) sc[e] += std::max(dh[e], 0.0f) * hw[h];
        }
      }
      const int32_t k = std::min(topk_cap, nvis);
      order.resize(nvis);
      for (int32_t e = 0; e < nvis; ++e) order[e] = e;
      std::partial_sort(order.begin(), order.begin() + k, order.end(),
                        [&](int32_t a, int32_t c2) { return sc[a] > sc[c2] || (sc[a] == sc[c2] && a > c2); });
      std::sort(order.begin(), order.begin() + k);  // attend entries in position order
      std::copy_n(order.begin(), k, topk_.begin() + t * topk_cap);
      ntopk_[t] = k;
    }
  };
  if (f.pool()) f.pool()->parallel_for(T, 1, score_tokens);
  else score_tokens(0, T, 0);
  for (int32_t t = 0; t < T && f.choice_observer(); ++t) {
    f.choice_observer()("indexer", ly.layer, t, topk_.data() + static_cast<size_t>(t) * topk_cap, ntopk_[t]);
  }
}

// The window's raw tokens, then the visible (CSA: chosen) entries, one softmax with the sink; output de-roped.
void CompressedAttention::attend(DecoderForward& f, const Layer& ly) {
  const LayerWeights& w = *ly.w;
  const ForwardBatch& b = f.batch();
  const KvStorage& kv = f.kv();
  const int32_t T = ly.tokens, H = ly.heads, D = ly.head_dim, r = ly.ratio, W = ly.window, nope = ly.nope_dim;
  const int32_t topk_cap = ly.topk_cap;
  const StreamView raw(kv, b, ly.streams.raw);
  ProfScope ps(ProfKind::Attention);
  const float scale = 1.0f / std::sqrt(static_cast<float>(D));
  const bool has_comp = r > 0;
  auto attend_tokens = [&](int64_t t0, int64_t t1, int32_t) {
    std::vector<const float*> keys;
    std::vector<float> dec, sc, kmat, kT;
    const StreamView comp = has_comp ? StreamView(kv, b, ly.streams.comp) : raw;
    // Rotated (int8 / int4) records: attend in the rotated basis — the queries rotated once per head, the output
    // (a mix of keys, K = V) un-rotated once — instead of un-rotating every key read.
    const bool rot = raw.g->rotate;
    SLIMKV_CHECK(comp.g->rotate == rot, "deepseek4: raw and compressed records rotate alike");
    std::vector<float> qrot;
    for (int64_t t = t0; t < t1; ++t) {
      const int32_t pos = b.positions[t], seq = raw.meta->token_seq[t];
      const int32_t lo = std::max(0, pos - W + 1);
      int32_t ncomp = 0;
      if (r == 128) ncomp = (pos + 1) / r;
      if (r == 4) ncomp = ntopk_[t];
      const int32_t nkeys = pos - lo + 1 + ncomp;
      keys.resize(nkeys);
      dec.resize(static_cast<size_t>(nkeys) * D);
      for (int32_t p = lo; p <= pos; ++p) {
        keys[p - lo] = raw.read(raw.slot(seq, p), dec.data() + static_cast<size_t>(p - lo) * D, rot);
      }
      for (int32_t j = 0; j < ncomp; ++j) {
        const int32_t e = r == 4 ? topk_[static_cast<size_t>(t) * topk_cap + j] : j;
        const int32_t at = pos - lo + 1 + j;
        keys[at] = comp.read(comp.slot(seq, e), dec.data() + static_cast<size_t>(at) * D, rot);
      }
      // scores [H, nkeys] = q · K^T and outputs [H, D] = P · K through the matmul kernels
      kmat.resize(static_cast<size_t>(nkeys) * D);
      kT.resize(static_cast<size_t>(nkeys) * D);
      for (int32_t j = 0; j < nkeys; ++j) {
        std::copy_n(keys[j], D, kmat.data() + static_cast<size_t>(j) * D);
        for (int32_t i = 0; i < D; ++i) kT[static_cast<size_t>(i) * nkeys + j] = keys[j][i];
      }
      sc.resize(static_cast<size_t>(H) * nkeys);
      const float* qt = q_.data() + static_cast<size_t>(t) * H * D;
      if (rot) {
        qrot.assign(qt, qt + static_cast<size_t>(H) * D);
        for (int32_t h = 0; h < H; ++h) hadamard_rotate_record(qrot.data() + static_cast<size_t>(h) * D, D, 0);
        qt = qrot.data();
      }
      matmul(WeightView{DType::F32, nkeys, D, kmat.data()}, qt, H, sc.data(), nullptr);
      for (int32_t h = 0; h < H; ++h) {
        float* sh = sc.data() + static_cast<size_t>(h) * nkeys;
        float mx = w.attn_sinks[h];
        for (int32_t j = 0; j < nkeys; ++j) mx = std::max(mx, sh[j] *= scale);
        float sum = std::exp(w.attn_sinks[h] - mx);
        for (int32_t j = 0; j < nkeys; ++j) sum += sh[j] = std::exp(sh[j] - mx);
        const float inv = 1.0f / sum;
        for (int32_t j = 0; j < nkeys; ++j) sh[j] *= inv;
      }
      float* ot = o_.data() + static_cast<size_t>(t) * H * D;
      matmul(WeightView{DType::F32, D, nkeys, kT.data()}, sc.data(), H, ot, nullptr);
      for (int32_t h = 0; h < H; ++h) {
        if (rot) hadamard_unrotate_record(ot + static_cast<size_t>(h) * D, D, 0);
        derope(*ly.rope, ot + static_cast<size_t>(h) * D + nope, pos);
      }
    }
  };
  if (f.pool()) f.pool()->parallel_for(T, 1, attend_tokens);
  else attend_tokens(0, T, 0);
}

// Grouped output LoRA: group g's heads through wo_a[g], then wo_b over the concatenation.
void CompressedAttention::output_lora(DecoderForward& f, const Layer& ly, float* out) {
  const Dsv4Config& d = f.model().config.dsv4;
  const LayerWeights& w = *ly.w;
  const int32_t T = ly.tokens, H = ly.heads, D = ly.head_dim;
  const int32_t G = d.o_groups, per = H / G * D, olr = d.o_lora_rank;
  gin_.resize(static_cast<size_t>(T) * per);
  gout_.resize(static_cast<size_t>(T) * olr);
  oa_.resize(static_cast<size_t>(T) * G * olr);
  ProfScope ps(ProfKind::Matmul);
  for (int32_t g = 0; g < G; ++g) {
    for (int32_t t = 0; t < T; ++t) {
      std::copy_n(o_.data() + static_cast<size_t>(t) * H * D + static_cast<size_t>(g) * per, per,
                  gin_.data() + static_cast<size_t>(t) * per);
    }
    f.ops().matmul(w.wo_a[g], gin_.data(), T, gout_.data());
    for (int32_t t = 0; t < T; ++t) {
      std::copy_n(gout_.data() + static_cast<size_t>(t) * olr, olr,
                  oa_.data() + (static_cast<size_t>(t) * G + g) * olr);
    }
  }
  f.ops().matmul(w.wo_b, oa_.data(), T, out);
  f.ops().all_reduce_sum(out, static_cast<int64_t>(T) * f.model().config.dim);  // output groups split over ranks
}


// The attention's weights: q LoRA and its norm, the K = V projection and its norm, the grouped output LoRA, and on
// compressed layers the compressor's (and on CSA layers the indexer's).
void CompressedAttention::bind(LayerBinder& b, int32_t l) {
  const ModelConfig& c = b.config();
  Model& m = b.model();
  const LayerConfig& lc = c.layers[l];
  const Dsv4Config& d = c.dsv4;
  LayerWeights& w = m.layers[l];
  const int64_t dim = c.dim, H = lc.num_heads, D = lc.head_dim_k;
  w.wq_a = b.matrix(TensorRole::AttnQA, l, d.q_lora_rank, dim);
  w.q_a_norm = b.vector(TensorRole::AttnQANorm, l, d.q_lora_rank);
  w.wq_b = b.matrix(TensorRole::AttnQB, l, H * D, d.q_lora_rank);
  w.wkv = b.matrix(TensorRole::AttnKv, l, D, dim);
  w.kv_norm = b.vector(TensorRole::AttnKvNorm, l, D);
  const int64_t per_group = H * D / d.o_groups;
  const WeightView wo_a = b.matrix(TensorRole::AttnOutA, l, d.o_groups * d.o_lora_rank, per_group);
  for (int64_t g = 0; g < d.o_groups; ++g) {
    w.wo_a.push_back(LayerBinder::slice_rows(wo_a, g * d.o_lora_rank, d.o_lora_rank));
  }
  w.wo_b = b.matrix(TensorRole::AttnOutB, l, dim, d.o_groups * d.o_lora_rank);
  const int32_t r = lc.compress_ratio;
  if (r > 0) {
    const int64_t coff = r == 4 ? 2 : 1;
    w.comp_wkv = b.matrix(TensorRole::CompWkv, l, coff * D, dim);
    w.comp_wgate = b.matrix(TensorRole::CompWgate, l, coff * D, dim);
    w.comp_ape = b.dense_f32(TensorRole::CompApe, l, r, coff * D);
    w.comp_norm = b.vector(TensorRole::CompNorm, l, D);
  }
  if (r == 4) {
    const int64_t iH = d.index_heads, iD = d.index_head_dim;
    w.idx_proj = b.matrix(TensorRole::IdxProj, l, iH, dim);
    w.idx_q_b = b.matrix(TensorRole::IdxQB, l, iH * iD, d.q_lora_rank);
    w.idx_comp_wkv = b.matrix(TensorRole::IdxCompWkv, l, 2 * iD, dim);
    w.idx_comp_wgate = b.matrix(TensorRole::IdxCompWgate, l, 2 * iD, dim);
    w.idx_comp_ape = b.dense_f32(TensorRole::IdxCompApe, l, r, 2 * iD);
    w.idx_comp_norm = b.vector(TensorRole::IdxCompNorm, l, iD);
  }
}

}  // namespace slimkv
