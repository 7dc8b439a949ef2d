// PagedAttention::run with per-layer dims: query/key heads of 16 values and value heads of 8 (K and V head sizes
// differ, as DeepSeek's and some others'), GQA 4/2, an explicit softmax scale, two sequences in one batch over
// scattered pages — against a plain double-precision softmax attention.
#include <gtest/gtest.h>

#include <cmath>
#include <functional>
#include <random>

#include "kernels/kv_codec.h"
#include "kernels/paged_attention.h"

namespace slimkv {
namespace {

// softmax(scale · q·K^T) · V over query token t's visible positions in double precision: key(slot) / value(slot)
// give the rows (decoded floats) of the slot holding each position.
std::vector<double> reference_attention(const PagedBatchMeta& m, int32_t t, const float* q, int32_t dk, int32_t dv,
                                        double scale, const std::function<const float*(int64_t)>& key,
                                        const std::function<const float*(int64_t)>& value) {
  const int32_t s = m.token_seq[t], bs = m.block_size, n = m.token_pos[t] + 1;
  auto slot_of = [&](int32_t j) { return static_cast<int64_t>(m.kv_indices[m.kv_indptr[s] + j / bs]) * bs + j % bs; };
  std::vector<double> p(n), o(dv, 0.0);
  double mx = -1e300, z = 0;
  for (int32_t j = 0; j < n; ++j) {
    const float* kr = key(slot_of(j));
    double d = 0;
    for (int32_t i = 0; i < dk; ++i) d += double(q[i]) * kr[i];
    mx = std::max(mx, p[j] = d * scale);
  }
  for (auto& x : p) z += (x = std::exp(x - mx));
  for (int32_t j = 0; j < n; ++j) {
    const float* vr = value(slot_of(j));
    for (int32_t i = 0; i < dv; ++i) o[i] += p[j] / z * vr[i];
  }
  return o;
}

TEST(PagedAttentionDims, DifferentKeyAndValueHeadSizesAndExplicitScale) {
  const int32_t H = 4, KVH = 2, DK = 16, DV = 8, bs = 4, num_blocks = 8;
  const int64_t slots = static_cast<int64_t>(num_blocks) * bs;
  std::mt19937 rng(3);
  std::normal_distribution<float> n(0.0f, 1.0f);
  std::vector<float> k(static_cast<size_t>(KVH) * slots * DK), v(static_cast<size_t>(KVH) * slots * DV);
  for (auto& x : k) x = n(rng);
  for (auto& x : v) x = n(rng);
  // Sequence 0: 6 tokens in blocks 5, 2; sequence 1: 3 tokens in block 7. Query tokens: seq 0 at positions 4, 5;
  // seq 1 at position 2.
  PagedBatchMeta m;
  m.block_size = bs;
  m.token_seq = {0, 0, 1};
  m.token_pos = {4, 5, 2};
  m.kv_indptr = {0, 2, 3};
  m.kv_indices = {5, 2, 7};
  m.kv_last_page_len = {2, 3};
  const int32_t T = 3;
  std::vector<float> q(static_cast<size_t>(T) * H * DK), out(static_cast<size_t>(T) * H * DV);
  for (auto& x : q) x = n(rng);
  PagedAttention::LayerKv lk{reinterpret_cast<const uint8_t*>(k.data()), reinterpret_cast<const uint8_t*>(v.data()),
                             DK, DV, DK * 4, DV * 4, slots * DK * 4, slots * DV * 4, KvDtype::F32, false};
  const float scale = 0.3f;
  for (Isa isa : {Isa::Scalar, Isa::Avx2, Isa::Avx512}) {
    if (static_cast<int>(isa) > static_cast<int>(detected_isa())) continue;
    PagedAttention pa;
    pa.plan(m, H / KVH, 1);
    pa.run(q.data(), lk, {H, KVH, DK, DV, scale}, out.data(), nullptr, isa);
    for (int32_t t = 0; t < T; ++t) {
      for (int32_t h = 0; h < H; ++h) {
        const int64_t kvh = h / (H / KVH);
        const std::vector<double> o = reference_attention(
            m, t, q.data() + (static_cast<size_t>(t) * H + h) * DK, DK, DV, scale,
            [&](int64_t slot) { return k.data() + (kvh * slots + slot) * DK; },
            [&](int64_t slot) { return v.data() + (kvh * slots + slot) * DV; });
        for (int32_t i = 0; i < DV; ++i) {
          ASSERT_NEAR(out[(static_cast<size_t>(t) * H + h) * DV + i], o[i], 1e-5) << "isa " << static_cast<int>(isa);
        }
      }
    }
  }
}

// MLA's shape: one shared record of 576 values per token whose first 512 are also the value (v read inside the
// key record), stored as two parts with their own scales (latent 512 | rope key 64), optionally Hadamard-rotated
// part by part; 16 query heads on it, f32 / f16 / int8 / int4, pages of 8 and of 4 tokens (the 8-row scoring groups
// then straddle a page) — every ISA against the decoded, un-rotated rows in double precision.
TEST(PagedAttentionDims, LatentRecordWithValueInsideKeyAcrossDtypesAndPageSizes) {
  const int32_t H = 16, DK = 576, DV = 512, num_blocks = 12;
  for (KvDtype dt : {KvDtype::F32, KvDtype::F16, KvDtype::Int8, KvDtype::Int4}) {
    for (auto [bs, rotate] : {std::pair{8, false}, std::pair{4, false}, std::pair{8, true}}) {
      const int64_t slots = static_cast<int64_t>(num_blocks) * bs;
      const int64_t rec = kv_record_bytes(dt, DK, DV);
      std::mt19937 rng(11);
      std::normal_distribution<float> n(0.0f, 1.0f);
      std::vector<uint8_t> store(static_cast<size_t>(slots * rec));
      std::vector<float> dec(static_cast<size_t>(slots) * DK), row(DK);
      for (int64_t s = 0; s < slots; ++s) {
        for (int32_t i = 0; i < DK; ++i) row[i] = n(rng) * (i < DV ? 1.0f : 8.0f);  // a larger rope key
        if (rotate) hadamard_rotate_record(row.data(), DK, DV);
        encode_kv_record(row.data(), DK, DV, dt, store.data() + s * rec);
        decode_kv_record(store.data() + s * rec, DK, DV, dt, dec.data() + s * DK);
        if (rotate) hadamard_unrotate_record(dec.data() + s * DK, DK, DV);
      }
      // One sequence of 37 tokens over scattered blocks; queries at positions 36 and 20 (two decode steps of
      // different sequences sharing the pages would look the same to the kernel).
      const int32_t ctx = 37, nb = (ctx + bs - 1) / bs;
      PagedBatchMeta m;
      m.block_size = bs;
      m.token_seq = {0, 1};
      m.token_pos = {ctx - 1, 20};
      m.kv_indptr = {0, nb, nb + (21 + bs - 1) / bs};
      for (int32_t b = 0; b < nb; ++b) m.kv_indices.push_back((b * 5 + 3) % num_blocks);
      for (int32_t b = 0; b < (21 + bs - 1) / bs; ++b) m.kv_indices.push_back((b * 7 + 1) % num_blocks);
      m.kv_last_page_len = {(ctx - 1) % bs + 1, 20 % bs + 1};
      const int32_t T = 2;
      std::vector<float> q(static_cast<size_t>(T) * H * DK), out(static_cast<size_t>(T) * H * DV);
      for (auto& x : q) x = n(rng) * 0.05f;
      PagedAttention::LayerKv lk{store.data(), store.data(), DK, DV, rec, rec, slots * rec, slots * rec, dt, rotate};
      lk.k_split = DV;
      const float scale = 1.0f / 24.0f;
      for (Isa isa : {Isa::Scalar, Isa::Avx2, Isa::Avx512}) {
        if (static_cast<int>(isa) > static_cast<int>(detected_isa())) continue;
        PagedAttention pa;
        pa.plan(m, H, 1);
        pa.run(q.data(), lk, {H, 1, DK, DV, scale}, out.data(), nullptr, isa);
        for (int32_t t = 0; t < T; ++t) {
          for (int32_t h = 0; h < H; ++h) {
            auto row = [&](int64_t slot) { return dec.data() + slot * DK; };  // the value is the key's prefix
            const std::vector<double> o =
                reference_attention(m, t, q.data() + (static_cast<size_t>(t) * H + h) * DK, DK, DV, scale, row, row);
            for (int32_t i = 0; i < DV; ++i) {
              ASSERT_NEAR(out[(static_cast<size_t>(t) * H + h) * DV + i], o[i], 2e-5)
                  << "isa " << static_cast<int>(isa) << " dtype " << static_cast<int>(dt) << " bs " << bs
                  << " rotate " << rotate;
            }
          }
        }
      }
    }
  }
}

// A residual window (KIVI): a query's last W visible rows come from int8 records through another page table (a
// window group's: blocks wholly behind every query's window are -1 and must never be read; the window starts at
// its first row's block), the older rows from
// tq4 records — two walks merged by their softmax denominators, with and without attention sinks. One sequence
// shorter than the window (window rows only), one longer; every ISA against the mixed decoded rows in double.
TEST(PagedAttentionDims, ResidualWindowRowsComeFromTheirOwnRecordsAndMergeExactly) {
  const int32_t H = 4, KVH = 2, D = 64, bs = 4, W = 6, num_blocks = 16;
  const int64_t slots = static_cast<int64_t>(num_blocks) * bs;
  const int64_t old_rec = kv_head_record_bytes(KvDtype::Tq4, D), new_rec = kv_head_record_bytes(KvDtype::Int8, D);
  std::mt19937 rng(5);
  std::normal_distribution<float> n(0.0f, 1.0f);
  // [KVH][slots] records of each store, and their decoded rows (keys and values alike)
  std::vector<uint8_t> ko(KVH * slots * old_rec), vo(ko.size()), kn(KVH * slots * new_rec), vn(kn.size());
  std::vector<float> dko(KVH * slots * D), dvo(dko.size()), dkn(dko.size()), dvn(dko.size()), row(D);
  auto fill = [&](std::vector<uint8_t>& st, std::vector<float>& dec, KvDtype dt, int64_t rec) {
    for (int64_t i = 0; i < KVH * slots; ++i) {
      for (auto& x : row) x = n(rng);
      encode_kv_head(row.data(), D, dt, st.data() + i * rec);
      decode_kv_head(st.data() + i * rec, D, dt, dec.data() + i * D);
    }
  };
  fill(ko, dko, KvDtype::Tq4, old_rec);
  fill(vo, dvo, KvDtype::Tq4, old_rec);
  fill(kn, dkn, KvDtype::Int8, new_rec);
  fill(vn, dvn, KvDtype::Int8, new_rec);
  // Sequence 0: 23 tokens (query at 22: window 17..22, read from 16 on = blocks 4, 5); sequence 1: 5 tokens
  // (query at 4: every row from the window).
  PagedBatchMeta m, r;
  m.block_size = r.block_size = bs;
  m.token_seq = r.token_seq = {0, 1};
  m.token_pos = r.token_pos = {22, 4};
  m.kv_indptr = r.kv_indptr = {0, 6, 8};
  m.kv_indices = {3, 9, 1, 12, 6, 0, 14, 2};
  r.kv_indices = {-1, -1, -1, -1, 7, 11, 5, 13};
  const int32_t T = 2;
  std::vector<float> q(static_cast<size_t>(T) * H * D), out(q.size());
  for (auto& x : q) x = n(rng) * 0.3f;
  PagedAttention::LayerKv lk{ko.data(), vo.data(), D, D, old_rec, old_rec, slots * old_rec, slots * old_rec,
                             KvDtype::Tq4, false};
  lk.residual = PagedAttention::LayerKv::Residual{kn.data(), vn.data(), new_rec, new_rec, slots * new_rec,
                                                  slots * new_rec, KvDtype::Int8, W, &r};
  const float sinks[H] = {0.5f, -1.0f, 2.0f, 0.0f};
  for (const float* sk : {static_cast<const float*>(nullptr), sinks}) {
    for (Isa isa : {Isa::Scalar, Isa::Avx2, Isa::Avx512}) {
      if (static_cast<int>(isa) > static_cast<int>(detected_isa())) continue;
      PagedAttention pa;
      pa.plan(m, H / KVH, 1);
      pa.run(q.data(), lk, {H, KVH, D, D, 0.125f, sk}, out.data(), nullptr, isa);
      for (int32_t t = 0; t < T; ++t) {
        const int32_t s = m.token_seq[t], ctx = m.token_pos[t] + 1;
        for (int32_t h = 0; h < H; ++h) {
          const int64_t kvh = h / (H / KVH);
          std::vector<float> qg(q.begin() + (t * H + h) * D, q.begin() + (t * H + h + 1) * D);
          round_query_to_grid(qg.data(), D);  // as run() scores integer-coded keys
          std::vector<double> p(ctx), o(D, 0.0);
          double mx = sk ? sk[h] : -1e300, z = 0;
          auto at = [&](const std::vector<float>& dec, const PagedBatchMeta& pm, int32_t j) {
            const int64_t slot = static_cast<int64_t>(pm.kv_indices[pm.kv_indptr[s] + j / bs]) * bs + j % bs;
            return dec.data() + (kvh * slots + slot) * D;
          };
          const int32_t first_recent = std::max(0, ctx - W) / bs * bs;  // the window from its block's start
          for (int32_t j = 0; j < ctx; ++j) {
            const float* kr = j >= first_recent ? at(dkn, r, j) : at(dko, m, j);
            double d = 0;
            for (int32_t i = 0; i < D; ++i) d += double(qg[i]) * kr[i];
            mx = std::max(mx, p[j] = d * 0.125);
          }
          for (auto& x : p) z += (x = std::exp(x - mx));
          if (sk) z += std::exp(sk[h] - mx);
          for (int32_t j = 0; j < ctx; ++j) {
            const float* vr = j >= first_recent ? at(dvn, r, j) : at(dvo, m, j);
            for (int32_t i = 0; i < D; ++i) o[i] += p[j] / z * vr[i];
          }
          for (int32_t i = 0; i < D; ++i) {
            ASSERT_NEAR(out[(static_cast<size_t>(t) * H + h) * D + i], o[i], 2e-5)
                << "isa " << static_cast<int>(isa) << " token " << t << " head " << h << " sinks " << (sk != nullptr);
          }
        }
      }
    }
  }
}

}  // namespace
}  // namespace slimkv
