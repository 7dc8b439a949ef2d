// The tile kernels (attention_tile.h) against their scalar reference and a double-precision softmax, for every
// stored dtype, page size and head size they take, with causal edges at page and kv-tile boundaries, sinks and
// windows; a row's result does not depend on the tile it is in (bit for bit); PagedAttention's tiles against its
// query-by-query walk (prefill == decode within the stated tolerance).
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <random>
#include <vector>

#include <fmt/format.h>

#include "kernels/attention_tile.h"
#include "kernels/kv_codec.h"
#include "kernels/paged_attention.h"

namespace slimkv {
namespace {

struct Store {  // one KV head's rows of one sequence in scattered pages
  int32_t kd, vd, split, bs;
  KvDtype dt;
  std::vector<uint8_t> k, v;
  std::vector<int32_t> blocks;
  std::vector<float> kf, vf;  // [positions, kd / vd] decoded rows (what the kernels see)
  PagedKv view() const {
    PagedKv kv;
    kv.k_base = k.data();
    kv.v_base = v.data();
    kv.block_ids = blocks.data();
    kv.block_size = bs;
    kv.k_row_bytes = kv_record_bytes(dt, kd, split);
    kv.v_row_bytes = kv_head_record_bytes(dt, vd);
    kv.dtype = dt;
    kv.k_dim = kd, kv.v_dim = vd, kv.k_split = split;
    return kv;
  }
};

Store make_store(KvDtype dt, int32_t kd, int32_t vd, int32_t split, int32_t bs, int64_t positions, uint32_t seed) {
  Store s{kd, vd, split, bs, dt, {}, {}, {}, {}, {}};
  const int64_t pages = (positions + bs - 1) / bs, slots = (pages + 3) * bs;
  std::mt19937 rng(seed);
  for (int64_t p = 0; p < pages; ++p) s.blocks.push_back(static_cast<int32_t>(pages + 2 - p));  // reversed, scattered
  const int64_t kb = kv_record_bytes(dt, kd, split), vb = kv_head_record_bytes(dt, vd);
  s.k.assign(slots * kb, 0);
  s.v.assign(slots * vb, 0);
  s.kf.resize(positions * kd);
  s.vf.resize(positions * vd);
  std::normal_distribution<float> n(0.0f, 1.0f);
  std::vector<float> x(std::max(kd, vd));
  for (int64_t p = 0; p < positions; ++p) {
    const int64_t slot = static_cast<int64_t>(s.blocks[p / bs]) * bs + p % bs;
    for (int32_t i = 0; i < kd; ++i) x[i] = n(rng);
    encode_kv_record(x.data(), kd, split, dt, s.k.data() + slot * kb);
    decode_kv_record(s.k.data() + slot * kb, kd, split, dt, s.kf.data() + p * kd);
    for (int32_t i = 0; i < vd; ++i) x[i] = n(rng);
    encode_kv_head(x.data(), vd, dt, s.v.data() + slot * vb);
    decode_kv_head(s.v.data() + slot * vb, vd, dt, s.vf.data() + p * vd);
  }
  return s;
}

struct Rows {  // a tile's queries and ranges
  std::vector<float> q;
  std::vector<int32_t> sink;
  std::vector<int64_t> lo, hi;
  AttendTile tile(int32_t kd) const {
    return AttendTile{q.data(), kd, static_cast<int32_t>(lo.size()), sink.data(), lo.data(), hi.data()};
  }
};

// Normalised outputs [rows, vd] of a kernel over [begin, end) from a fresh state.
std::vector<float> run_tile(bool (*kernel)(const AttendTile&, const PagedKv&, int64_t, int64_t, float, TileState&),
                            const AttendTile& t, const Store& s, int64_t begin, int64_t end, float scale) {
  const int32_t R = t.num_rows;
  std::vector<float> m(R), l(R), acc(static_cast<size_t>(R) * s.vd), scratch(tile_scratch_floats(s.kd, s.vd, s.bs));
  TileState st{m.data(), l.data(), acc.data(), s.vd, scratch.data()};
  tile_state_reset(st, R, s.vd);
  if (kernel == nullptr || !kernel(t, s.view(), begin, end, scale, st)) attend_tile_ref(t, s.view(), begin, end, scale, st);
  for (int32_t r = 0; r < R; ++r) {
    for (int32_t i = 0; i < s.vd; ++i) acc[r * s.vd + i] /= l[r];
  }
  return acc;
}

// softmax over row r's visible positions in double
std::vector<double> exact(const Rows& rows, int32_t r, const Store& s, int64_t begin, int64_t end, float scale) {
  std::vector<double> o(s.vd, 0.0), p;
  std::vector<int64_t> pos;
  for (int64_t j = begin; j < end; ++j) {
    if (j < rows.sink[r] || (j >= rows.lo[r] && j < rows.hi[r])) pos.push_back(j);
  }
  double mx = -1e300, z = 0;
  for (int64_t j : pos) {
    double d = 0;
    for (int32_t i = 0; i < s.kd; ++i) d += double(rows.q[r * s.kd + i]) * s.kf[j * s.kd + i];
    p.push_back(d * scale);
    mx = std::max(mx, p.back());
  }
  for (double& x : p) z += (x = std::exp(x - mx));
  for (size_t a = 0; a < pos.size(); ++a) {
    for (int32_t i = 0; i < s.vd; ++i) o[i] += p[a] / z * s.vf[pos[a] * s.vd + i];
  }
  return o;
}

// Causal rows of `tokens` consecutive queries ending at position last, `heads` heads each; windows when window > 0.
Rows causal_rows(int32_t kd, int64_t last, int32_t tokens, int32_t heads, int32_t sinks, int32_t window,
                 uint32_t seed) {
  Rows r;
  std::mt19937 rng(seed);
  std::normal_distribution<float> n(0.0f, 1.0f);
  for (int32_t t = 0; t < tokens; ++t) {
    for (int32_t h = 0; h < heads; ++h) {
      const int64_t ctx = last - (tokens - 1) + t + 1;
      const bool windowed = window > 0 && ctx > sinks + window;
      r.sink.push_back(windowed ? sinks : 0);
      r.lo.push_back(windowed ? ctx - window : 0);
      r.hi.push_back(ctx);
      for (int32_t i = 0; i < kd; ++i) r.q.push_back(n(rng));
    }
  }
  return r;
}

using TileKernel = bool (*)(const AttendTile&, const PagedKv&, int64_t, int64_t, float, TileState&);

std::vector<std::pair<Isa, TileKernel>> fast_kernels() {
  std::vector<std::pair<Isa, TileKernel>> out;
  for (Isa isa : {Isa::Avx2, Isa::Avx512}) {
    if (static_cast<int>(isa) <= static_cast<int>(detected_isa()) && dot_kernels(isa).attend_tile) {
      out.emplace_back(isa, dot_kernels(isa).attend_tile);
    }
  }
  return out;
}

TEST(AttentionTile, EveryDtypeAndPageSizeMatchesItsReference) {
  struct Case { KvDtype dt; int32_t kd, vd, split, bs; };
  const Case cases[] = {{KvDtype::F32, 64, 64, 0, 8},   {KvDtype::F16, 64, 64, 0, 16}, {KvDtype::Int8, 64, 64, 0, 8},
                        {KvDtype::Int4, 128, 128, 0, 32}, {KvDtype::Tq4, 64, 64, 0, 8}, {KvDtype::F16, 16, 8, 0, 4},
                        {KvDtype::Int8, 80, 64, 64, 128}, {KvDtype::F16, 96, 96, 0, 256}, {KvDtype::Tq3, 64, 64, 0, 8}};
  for (const Case& c : cases) {
    SCOPED_TRACE(fmt::format("dtype {} kd {} vd {} split {} bs {}", static_cast<int>(c.dt), c.kd, c.vd, c.split, c.bs));
    const int64_t last = 300;  // queries at positions 270..300 cross kv tiles of 64 and pages
    const Store s = make_store(c.dt, c.kd, c.vd, c.split, c.bs, last + 1, 7);
    for (const auto& [sinks, window] : {std::pair{0, 0}, std::pair{4, 37}, std::pair{0, 64}}) {
      const int32_t heads = c.kd == 16 ? 1 : 2, tokens = kMaxTileQueryRows / heads;
      const Rows rows = causal_rows(c.kd, last, tokens, heads, sinks, window, 11);
      const float scale = 1.0f / std::sqrt(static_cast<float>(c.kd));
      const std::vector<float> ref = run_tile(nullptr, rows.tile(c.kd), s, 0, last + 1, scale);
      for (size_t r = 0; r < rows.lo.size(); ++r) {
        const std::vector<double> e = exact(rows, static_cast<int32_t>(r), s, 0, last + 1, scale);
        for (int32_t i = 0; i < c.vd; ++i) ASSERT_NEAR(ref[r * c.vd + i], e[i], 2e-5) << "row " << r;
      }
      for (const auto& [isa, kernel] : fast_kernels()) {
        const std::vector<float> fast = run_tile(kernel, rows.tile(c.kd), s, 0, last + 1, scale);
        for (size_t i = 0; i < ref.size(); ++i) ASSERT_NEAR(fast[i], ref[i], 2e-5) << "isa " << static_cast<int>(isa);
      }
    }
  }
}

TEST(AttentionTile, ARowsResultDoesNotDependOnItsTile) {
  // Each row alone, and in tiles of other sizes and other company, gives the same bits (the causal diagonal at
  // every offset of a page and a kv tile).
  const Store s = make_store(KvDtype::F16, 64, 64, 0, 8, 200, 5);
  const Rows all = causal_rows(64, 199, 60, 1, 0, 0, 3);
  for (const auto& [isa, kernel] : fast_kernels()) {
    const std::vector<float> together = run_tile(kernel, all.tile(64), s, 0, 200, 0.125f);
    for (const int32_t step : {1, 3, 7}) {
      for (size_t r0 = 0; r0 < all.lo.size(); r0 += step) {
        Rows part;
        const size_t r1 = std::min(all.lo.size(), r0 + step);
        part.q.assign(all.q.begin() + r0 * 64, all.q.begin() + r1 * 64);
        part.sink.assign(all.sink.begin() + r0, all.sink.begin() + r1);
        part.lo.assign(all.lo.begin() + r0, all.lo.begin() + r1);
        part.hi.assign(all.hi.begin() + r0, all.hi.begin() + r1);
        const std::vector<float> alone = run_tile(kernel, part.tile(64), s, 0, 200, 0.125f);
        ASSERT_TRUE(std::equal(alone.begin(), alone.end(), together.begin() + r0 * 64))
            << "isa " << static_cast<int>(isa) << " rows " << r0 << ".." << r1;
      }
    }
  }
}

}  // namespace
}  // namespace slimkv

namespace slimkv {
namespace {

// PagedAttention over one sequence's prompt: the whole prompt in one run (tiles) against each token alone (the
// query-by-query walk), for stored dtypes, GQA groups, attention sinks, a sliding window and a residual window.
TEST(AttentionTile, PagedPrefillTilesEqualTheQueryByQueryWalk) {
  const int32_t H = 8, KVH = 2, D = 64, bs = 8, T = 150, pages = (T + bs - 1) / bs;
  const int64_t slots = static_cast<int64_t>(pages + 2) * bs;
  std::mt19937 rng(9);
  std::normal_distribution<float> n(0.0f, 1.0f);
  std::vector<float> q(static_cast<size_t>(T) * H * D), sinks(H);
  for (auto& x : q) x = n(rng);
  for (auto& x : sinks) x = n(rng);
  PagedBatchMeta m;
  m.block_size = bs;
  for (int32_t t = 0; t < T; ++t) m.token_seq.push_back(0), m.token_pos.push_back(t);
  m.kv_indptr = {0, pages};
  for (int32_t p = 0; p < pages; ++p) m.kv_indices.push_back(pages + 1 - p);
  m.kv_last_page_len = {T - (pages - 1) * bs};
  for (KvDtype dt : {KvDtype::F16, KvDtype::Int8, KvDtype::Tq4}) {
    const int64_t rb = kv_head_record_bytes(dt, D);
    std::vector<uint8_t> k(KVH * slots * rb), v(KVH * slots * rb), rk(KVH * slots * D * 4), rv(KVH * slots * D * 4);
    std::vector<float> x(D);
    for (int32_t h = 0; h < KVH; ++h) {
      for (int64_t s = 0; s < slots; ++s) {
        for (auto& e : x) e = n(rng);
        encode_kv_head(x.data(), D, dt, k.data() + (h * slots + s) * rb);
        std::memcpy(rk.data() + (h * slots + s) * D * 4, x.data(), D * 4);
        for (auto& e : x) e = n(rng);
        encode_kv_head(x.data(), D, dt, v.data() + (h * slots + s) * rb);
        std::memcpy(rv.data() + (h * slots + s) * D * 4, x.data(), D * 4);
      }
    }
    for (int variant = 0; variant < 3; ++variant) {  // plain + sinks, a sliding window, a residual window
      SCOPED_TRACE(fmt::format("dtype {} variant {}", static_cast<int>(dt), variant));
      PagedAttention::LayerKv lk{k.data(), v.data(), D, D, rb, rb, slots * rb, slots * rb, dt, false};
      if (variant == 1) lk.sink_tokens = 4, lk.window_tokens = 40;
      if (variant == 2) {
        lk.residual = PagedAttention::LayerKv::Residual{rk.data(), rv.data(), D * 4, D * 4, slots * D * 4,
                                                        slots * D * 4, KvDtype::F32, 20, &m};
      }
      const AttentionDims dims{H, KVH, D, D, 0.0f, variant == 0 ? sinks.data() : nullptr};
      std::vector<float> tiled(q.size() / D * D), single(tiled.size());
      for (Isa isa : {Isa::Avx2, Isa::Avx512}) {
        if (static_cast<int>(isa) > static_cast<int>(detected_isa())) continue;
        PagedAttention pa;
        pa.plan(m, H / KVH, 1);
        pa.run(q.data(), lk, dims, tiled.data(), nullptr, isa);
        for (int32_t t = 0; t < T; ++t) {
          PagedBatchMeta one = m;
          one.token_seq = {0};
          one.token_pos = {t};
          PagedAttention pb;
          pb.plan(one, H / KVH, 1);
          if (variant == 2) lk.residual->meta = &one;
          pb.run(q.data() + static_cast<size_t>(t) * H * D, lk, dims, single.data() + static_cast<size_t>(t) * H * D,
                 nullptr, isa);
          if (variant == 2) lk.residual->meta = &m;
        }
        float worst = 0;
        for (size_t i = 0; i < tiled.size(); ++i) worst = std::max(worst, std::fabs(tiled[i] - single[i]));
        EXPECT_LT(worst, 2e-5f) << "isa " << static_cast<int>(isa);
        EXPECT_GT(worst, 0.0f) << "isa " << static_cast<int>(isa) << ": the prompt should have attended in tiles";
      }
    }
  }
}

}  // namespace
}  // namespace slimkv
