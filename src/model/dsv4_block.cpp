// DecoderForward's DeepSeek-V4 attention (as llama.cpp's deepseek4.cpp computes it): q LoRA → per-head RMS norm →
// RoPE on the last dims; one shared K = V head (kv norm, RoPE); on compressed layers a compressor pools each group
// of `ratio` tokens into an entry (gated softmax per channel with a learned position embedding; CSA's groups
// overlap the previous group), RMS-normed and roped at the group's first position; on CSA layers the lightning
// indexer scores the compressed indexer keys and each query keeps its top-k entries. A query attends its sliding
// window of raw tokens and its visible entries in one softmax with a learned per-head sink; the output is
// de-roped and leaves through the grouped output LoRA.
// Records live in the paged cache (kv_streams): raw tokens (windowed group), entries and indexer keys (compressed
// groups, one record per `ratio` tokens), compressor state (the last coff * ratio tokens' rows, windowed group).
#include <algorithm>
#include <cmath>
#include <cstring>

#include "core/check.h"
#include "core/half.h"
#include "core/profiler.h"
#include "kernels/kv_codec.h"
#include "kernels/ops.h"
#include "model/decoder_forward.h"
#include "model/dsv4_scratch.h"

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

void DecoderForward::dsv4_attention(int32_t l, const float* in, float* out) {
  const ModelConfig& c = model_.config;
  const Dsv4Config& d = c.dsv4;
  const LayerConfig& lc = c.layers[l];
  const LayerWeights& w = model_.layers[l];
  const ForwardBatch& b = *batch_;
  KvStorage& kv = *kv_;
  Dsv4Scratch& s = dsv4();
  const int32_t T = T_, H = lc.num_heads, D = lc.head_dim_k, R = lc.rotary_dim, nope = D - R;
  const int32_t r = lc.compress_ratio, coff = r == 4 ? 2 : 1, W = lc.sliding_window;
  const int32_t iH = d.index_heads, iD = d.index_head_dim;
  const RopeTable& rope = ropes_[layer_rope_[l]];
  const KvStreams ks = kv_streams(c, l);
  const float eps = c.rms_eps;
  s.qr.resize(static_cast<size_t>(T) * d.q_lora_rank);
  s.q.resize(static_cast<size_t>(T) * H * D);
  s.kv.resize(static_cast<size_t>(T) * D);
  s.o.resize(static_cast<size_t>(T) * H * D);
  {
    ProfScope ps(ProfKind::Matmul);
    matmul(w.wq_a, in, T, s.qr.data(), pool_);
  }
  rmsnorm_rows(s.qr.data(), s.qr.data(), w.q_a_norm, T, d.q_lora_rank, eps);
  {
    ProfScope ps(ProfKind::Matmul);
    matmul(w.wq_b, s.qr.data(), T, s.q.data(), pool_);
    matmul(w.wkv, in, T, s.kv.data(), pool_);
  }
  const StreamView raw(kv, b, ks.raw);
  {
    ProfScope ps(ProfKind::KvWrite);
    for (int32_t t = 0; t < T; ++t) {
      const int32_t pos = b.positions[t];
      float* q = s.q.data() + static_cast<size_t>(t) * H * D;
      for (int32_t h = 0; h < H; ++h) rmsnorm_unweighted(q + static_cast<size_t>(h) * D, q + static_cast<size_t>(h) * D, D, eps);
      rope.apply(q + nope, H, pos, D);
      float* k = s.kv.data() + static_cast<size_t>(t) * D;
      rmsnorm(k, k, w.kv_norm, D, eps);
      rope.apply(k + nope, 1, pos, D);
      write_kv(kv, ks.raw, (*raw.slots)[t], k, k);
    }
  }
  // Compressors: every token's state rows into the state stream, then the entries its tokens complete.
  auto compress = [&](int32_t state_stream, int32_t entry_stream, const WeightView& wkv, const WeightView& wgate,
                      const float* ape, const float* norm, int32_t n, bool rotate_entry) {
    ProfScope ps(ProfKind::Compressor);
    const int32_t cn = coff * n;
    s.st_kv.resize(static_cast<size_t>(T) * cn);
    s.st_sc.resize(static_cast<size_t>(T) * cn);
    matmul(wkv, in, T, s.st_kv.data(), pool_);
    matmul(wgate, in, T, s.st_sc.data(), pool_);
    const StreamView st(kv, b, state_stream), ent(kv, b, entry_stream);
    s.st_rec.resize(2 * static_cast<size_t>(cn));
    for (int32_t t = 0; t < T; ++t) {
      const float* a = ape + static_cast<size_t>(b.positions[t] % r) * cn;
      std::copy_n(s.st_kv.data() + static_cast<size_t>(t) * cn, cn, s.st_rec.data());
      for (int32_t i = 0; i < cn; ++i) s.st_rec[cn + i] = s.st_sc[static_cast<size_t>(t) * cn + i] + a[i];
      write_kv(kv, state_stream, (*st.slots)[t], s.st_rec.data(), s.st_rec.data());
    }
    std::vector<float> pw, dec;
    std::vector<const float*> rows;
    s.entry.resize(std::max(D, iD));
    for (int32_t t = 0; t < T; ++t) {
      const int32_t pos = b.positions[t];
      if ((pos + 1) % r != 0) continue;
      const int32_t e = (pos + 1) / r - 1;
      pool_entry(st, st.meta->token_seq[t], e, r, coff, n, s.entry.data(), pw, rows, dec);
      rmsnorm(s.entry.data(), s.entry.data(), norm, n, eps);
      rope.apply(s.entry.data() + (n - R), 1, e * r, n);
      if (rotate_entry) fwht(s.entry.data(), n);
      write_kv(kv, entry_stream, (*ent.slots)[t], s.entry.data(), s.entry.data());
    }
  };
  if (r > 0) compress(ks.comp_state, ks.comp, w.comp_wkv, w.comp_wgate, w.comp_ape, w.comp_norm, D, false);
  // Lightning indexer (CSA): per token the top-k complete entries by sum_h w_h relu(q_h · k_e). Exact ties (all
  // heads' relu 0 gives score 0) go to the later entry, as llama.cpp's top_k resolved the one tie in its dump.
  const int32_t topk_cap = index_topk_override_ > 0 ? index_topk_override_ : d.index_topk;
  if (r == 4) {
    compress(ks.idx_state, ks.idx, w.idx_comp_wkv, w.idx_comp_wgate, w.idx_comp_ape, w.idx_comp_norm, iD, true);
    ProfScope ps(ProfKind::Indexer);
    s.iq.resize(static_cast<size_t>(T) * iH * iD);
    s.iw.resize(static_cast<size_t>(T) * iH);
    matmul(w.idx_q_b, s.qr.data(), T, s.iq.data(), pool_);
    matmul(w.idx_proj, in, T, s.iw.data(), pool_);
    const float wscale = 1.0f / std::sqrt(static_cast<float>(iD * iH));
    for (int32_t t = 0; t < T; ++t) {
      float* q = s.iq.data() + static_cast<size_t>(t) * iH * iD;
      rope.apply(q + (iD - R), iH, b.positions[t], iD);
      for (int32_t h = 0; h < iH; ++h) {
        fwht(q + static_cast<size_t>(h) * iD, iD);
        for (int32_t i = 0; i < iD; ++i) q[h * iD + i] = fp16_to_fp32(fp32_to_fp16(q[h * iD + i]));
      }
      for (int32_t h = 0; h < iH; ++h) s.iw[static_cast<size_t>(t) * iH + h] *= wscale;
    }
    s.topk.assign(static_cast<size_t>(T) * topk_cap, -1);
    s.ntopk.assign(T, 0);
    const StreamView idx(kv, b, ks.idx);
    auto score_tokens = [&](int64_t t0, int64_t t1, int32_t) {
      std::vector<float> sc, kmat, dots, kbuf(iD);
      std::vector<int32_t> order;
      for (int64_t t = t0; t < t1; ++t) {
        const int32_t nvis = (b.positions[t] + 1) / r, seq = idx.meta->token_seq[t];
        const float* q = s.iq.data() + static_cast<size_t>(t) * iH * iD;
        const float* hw = s.iw.data() + static_cast<size_t>(t) * iH;
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
        std::copy_n(order.begin(), k, s.topk.begin() + t * topk_cap);
        s.ntopk[t] = k;
      }
    };
    if (pool_) pool_->parallel_for(T, 1, score_tokens);
    else score_tokens(0, T, 0);
    for (int32_t t = 0; t < T && choice_observer_; ++t) {
      choice_observer_("indexer", l, t, s.topk.data() + static_cast<size_t>(t) * topk_cap, s.ntopk[t]);
    }
  }
  // Attention: the window's raw tokens, then the visible (CSA: chosen) entries, one softmax with the sink.
  {
    ProfScope ps(ProfKind::Attention);
    const float scale = 1.0f / std::sqrt(static_cast<float>(D));
    const bool has_comp = r > 0;
    auto attend = [&](int64_t t0, int64_t t1, int32_t) {
      std::vector<const float*> keys;
      std::vector<float> dec, sc, kmat, kT;
      const StreamView comp = has_comp ? StreamView(kv, b, ks.comp) : raw;
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
        if (r == 4) ncomp = s.ntopk[t];
        const int32_t nkeys = pos - lo + 1 + ncomp;
        keys.resize(nkeys);
        dec.resize(static_cast<size_t>(nkeys) * D);
        for (int32_t p = lo; p <= pos; ++p) {
          keys[p - lo] = raw.read(raw.slot(seq, p), dec.data() + static_cast<size_t>(p - lo) * D, rot);
        }
        for (int32_t j = 0; j < ncomp; ++j) {
          const int32_t e = r == 4 ? s.topk[static_cast<size_t>(t) * topk_cap + j] : j;
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
        const float* qt = s.q.data() + static_cast<size_t>(t) * H * D;
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
        float* ot = s.o.data() + static_cast<size_t>(t) * H * D;
        matmul(WeightView{DType::F32, D, nkeys, kT.data()}, sc.data(), H, ot, nullptr);
        for (int32_t h = 0; h < H; ++h) {
          if (rot) hadamard_unrotate_record(ot + static_cast<size_t>(h) * D, D, 0);
          derope(rope, ot + static_cast<size_t>(h) * D + nope, pos);
        }
      }
    };
    if (pool_) pool_->parallel_for(T, 1, attend);
    else attend(0, T, 0);
  }
  // Grouped output LoRA: group g's heads through wo_a[g], then wo_b over the concatenation.
  const int32_t G = d.o_groups, per = H / G * D, olr = d.o_lora_rank;
  s.gin.resize(static_cast<size_t>(T) * per);
  s.gout.resize(static_cast<size_t>(T) * olr);
  s.oa.resize(static_cast<size_t>(T) * G * olr);
  ProfScope ps(ProfKind::Matmul);
  for (int32_t g = 0; g < G; ++g) {
    for (int32_t t = 0; t < T; ++t) {
      std::copy_n(s.o.data() + static_cast<size_t>(t) * H * D + static_cast<size_t>(g) * per, per,
                  s.gin.data() + static_cast<size_t>(t) * per);
    }
    matmul(w.wo_a[g], s.gin.data(), T, s.gout.data(), pool_);
    for (int32_t t = 0; t < T; ++t) {
      std::copy_n(s.gout.data() + static_cast<size_t>(t) * olr, olr,
                  s.oa.data() + (static_cast<size_t>(t) * G + g) * olr);
    }
  }
  matmul(w.wo_b, s.oa.data(), T, out, pool_);
}

}  // namespace slimkv
