// KV storage codecs: round-trip error bounds per dtype, the Hadamard rotation is orthonormal, and attention over
// quantized rows equals attention over their decoded values.
#include <gtest/gtest.h>

#include <cmath>
#include <random>

#include "core/check.h"
#include "kernels/dot.h"
#include "kernels/kv_codec.h"

namespace slimkv {
namespace {

std::vector<float> randn(int n, uint32_t seed) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> d(0, 1);
  std::vector<float> v(n);
  for (auto& x : v) x = d(rng);
  return v;
}

TEST(KvCodec, RoundTripErrorIsBoundedByHalfAStep) {
  for (KvDtype dt : {KvDtype::F32, KvDtype::F16, KvDtype::Int8, KvDtype::Int4}) {
    for (int hd : {8, 16, 64}) {
      auto x = randn(hd, hd);
      std::vector<uint8_t> buf(kv_head_record_bytes(dt, hd));
      std::vector<float> y(hd);
      encode_kv_head(x.data(), hd, dt, buf.data());
      decode_kv_head(buf.data(), hd, dt, y.data());
      float amax = 0;
      for (float v : x) amax = std::max(amax, std::fabs(v));
      const float step = dt == KvDtype::Int8 ? amax / 127 : dt == KvDtype::Int4 ? amax / 7 : amax * 1e-3f;
      for (int i = 0; i < hd; ++i) {
        if (dt == KvDtype::F32) ASSERT_EQ(x[i], y[i]);
        else ASSERT_LE(std::fabs(x[i] - y[i]), 0.5f * step * 1.01f + 1e-6f) << kv_dtype_name(dt) << " i=" << i;
      }
    }
  }
}

TEST(KvCodec, TurboQuantRowsBeatAbsmaxAtTheSameBitsOnRotatedRows) {
  // tq4 / tq3: the RMS as fp16 and Lloyd-Max codebook indices. On Gaussian (rotated) rows of odd and even sizes:
  // the errors are Lloyd-Max's, tq4's is lower than int4's at the same bytes on wide rows, and tq3 (3.25 bits a
  // value at head dim 64) pays less than a uniform quantizer's 4x for its missing bit.
  auto mse = [](KvDtype dt, int hd, int rows) {
    double e = 0;
    for (int r = 0; r < rows; ++r) {
      auto x = randn(hd, 100 + r);
      std::vector<uint8_t> buf(kv_head_record_bytes(dt, hd));
      std::vector<float> y(hd);
      encode_kv_head(x.data(), hd, dt, buf.data());
      decode_kv_head(buf.data(), hd, dt, y.data());
      for (int i = 0; i < hd; ++i) e += (x[i] - y[i]) * (x[i] - y[i]);
    }
    return e / (hd * rows);
  };
  for (int hd : {7, 64, 128}) {  // 7: the odd packing (a short row's absmax is small: no comparison there)
    const double int4 = mse(KvDtype::Int4, hd, 200), tq4 = mse(KvDtype::Tq4, hd, 200), tq3 = mse(KvDtype::Tq3, hd, 200);
    EXPECT_LT(tq4, 0.012) << hd;  // Lloyd-Max 16 levels: 0.0095 for the unit normal
    EXPECT_LT(tq3, 0.040) << hd;  // 8 levels: 0.0345
    if (hd < 64) continue;
    EXPECT_LT(tq4, 0.9 * int4) << hd;
    EXPECT_LT(tq3, 3.5 * int4) << hd;  // one bit fewer: ~4x the error of a uniform quantizer
  }
  EXPECT_EQ(kv_head_record_bytes(KvDtype::Tq3, 64), 26);
  EXPECT_EQ(kv_head_record_bytes(KvDtype::Tq4, 64), kv_head_record_bytes(KvDtype::Int4, 64));
  std::vector<float> zero(64, 0.0f), back(64, 1.0f);
  std::vector<uint8_t> buf(kv_head_record_bytes(KvDtype::Tq3, 64));
  encode_kv_head(zero.data(), 64, KvDtype::Tq3, buf.data());
  decode_kv_head(buf.data(), 64, KvDtype::Tq3, back.data());
  EXPECT_EQ(back, zero);
}

TEST(KvCodec, HadamardRotationIsOrthonormalAndInvertible) {
  for (int hd : {8, 64, 128}) {
    auto x = randn(hd, 3), y = randn(hd, 4);
    auto rx = x, ry = y;
    hadamard_rotate(rx.data(), hd);
    hadamard_rotate(ry.data(), hd);
    double dot = 0, rdot = 0;
    for (int i = 0; i < hd; ++i) {
      dot += double(x[i]) * y[i];
      rdot += double(rx[i]) * ry[i];
    }
    EXPECT_NEAR(dot, rdot, 1e-4);
    hadamard_unrotate(rx.data(), hd);
    for (int i = 0; i < hd; ++i) EXPECT_NEAR(rx[i], x[i], 1e-5f);
  }
  std::vector<float> z(6);
  EXPECT_THROW(hadamard_rotate(z.data(), 6), Error);
}

TEST(KvCodec, RotationSpreadsAnOutlierSoInt4ErrorDrops) {
  const int hd = 64;
  auto x = randn(hd, 9);
  x[5] = 40.0f;  // one outlier channel, as keys have
  auto err = [&](bool rotate) {
    auto v = x;
    if (rotate) hadamard_rotate(v.data(), hd);
    std::vector<uint8_t> buf(kv_head_record_bytes(KvDtype::Int4, hd));
    std::vector<float> y(hd);
    encode_kv_head(v.data(), hd, KvDtype::Int4, buf.data());
    decode_kv_head(buf.data(), hd, KvDtype::Int4, y.data());
    if (rotate) hadamard_unrotate(y.data(), hd);
    double e = 0;
    for (int i = 0; i < hd; ++i) e += (y[i] - x[i]) * (y[i] - x[i]);
    return e;
  };
  EXPECT_LT(err(true), 0.5 * err(false));
}

// `rows` random K and V rows of hd values encoded in kdt / vdt, and the same rows decoded to floats.
struct EncodedRows {
  std::vector<uint8_t> k, v;   // [rows, record bytes]
  std::vector<float> kd, vd;   // [rows, hd]
};
EncodedRows encoded_rows(int rows, int hd, KvDtype kdt, KvDtype vdt, int seed_k, int seed_v) {
  const int64_t krec = kv_head_record_bytes(kdt, hd), vrec = kv_head_record_bytes(vdt, hd);
  EncodedRows e{std::vector<uint8_t>(rows * krec), std::vector<uint8_t>(rows * vrec), std::vector<float>(rows * hd),
                std::vector<float>(rows * hd)};
  for (int r = 0; r < rows; ++r) {
    auto a = randn(hd, seed_k + r), b = randn(hd, seed_v + r);
    encode_kv_head(a.data(), hd, kdt, e.k.data() + r * krec);
    encode_kv_head(b.data(), hd, vdt, e.v.data() + r * vrec);
    decode_kv_head(e.k.data() + r * krec, hd, kdt, e.kd.data() + r * hd);
    decode_kv_head(e.v.data() + r * vrec, hd, vdt, e.vd.data() + r * hd);
  }
  return e;
}

TEST(KvCodec, AttentionOverQuantizedRowsEqualsAttentionOverDecodedRows) {
  const int ctx = 21, bs = 8;
  for (int hd : {16, 48, 64, 128})  // the register-accumulator paths (and 8-row key groups plus a tail)
  for (KvDtype dt : {KvDtype::F32, KvDtype::F16, KvDtype::Int8, KvDtype::Int4, KvDtype::Tq4}) {
    const int64_t rec = kv_head_record_bytes(dt, hd);
    std::vector<int32_t> ids = {2, 0, 1};
    const EncodedRows rows = encoded_rows(3 * bs, hd, dt, dt, 100, 200);
    const std::vector<uint8_t>&k = rows.k, &v = rows.v;  // [rows, record bytes]
    const std::vector<float>&kd = rows.kd, &vd = rows.vd;  // [rows, hd]
    auto q = randn(hd, 7);
    // integer codes: the query on the integer grid, as PagedAttention passes it (the AVX-512 kernel scores in integers)
    if (kv_dtype_has_integer_codes(dt)) round_query_to_grid(q.data(), hd);
    std::vector<float> s1(ctx), s2(ctx), o1(hd), o2(hd);
    PagedKv quant{k.data(), v.data(), ids.data(), bs, rec, rec, dt, hd, hd};
    PagedKv plain{reinterpret_cast<const uint8_t*>(kd.data()), reinterpret_cast<const uint8_t*>(vd.data()), ids.data(),
                  bs, hd * 4, hd * 4, KvDtype::F32, hd, hd};
    for (Isa isa : {Isa::Scalar, detected_isa()}) {
      dot_kernels(isa).attend(q.data(), quant, ctx, 0.25f, s1.data(), o1.data());
      kScalarDot.attend(q.data(), plain, ctx, 0.25f, s2.data(), o2.data());
      for (int d = 0; d < hd; ++d) EXPECT_NEAR(o1[d], o2[d], 1e-5f) << kv_dtype_name(dt) << " hd " << hd;
    }
  }
}

TEST(KvCodec, AsymmetricKeyAndValueDtypesMatchAttentionOverDecodedRows) {
  // Keys in one dtype, values in another (--kv-cache-dtype-v): every ISA against the scalar walk over decoded rows,
  // and attend_group equal to attend bit for bit.
  const int ctx = 37, bs = 8, hd = 64;
  const std::vector<std::pair<KvDtype, KvDtype>> pairs = {{KvDtype::Int8, KvDtype::Tq4}, {KvDtype::Tq4, KvDtype::Int8},
                                                          {KvDtype::Int4, KvDtype::Int8}, {KvDtype::Int8, KvDtype::F16},
                                                          {KvDtype::F16, KvDtype::Int4}};
  for (const auto& [kdt, vdt] : pairs) {
    const int64_t krec = kv_head_record_bytes(kdt, hd), vrec = kv_head_record_bytes(vdt, hd);
    std::vector<int32_t> ids = {4, 0, 3, 1, 2};
    const EncodedRows rows = encoded_rows(5 * bs, hd, kdt, vdt, 500, 600);
    const std::vector<uint8_t>&k = rows.k, &v = rows.v;  // [rows, record bytes]
    const std::vector<float>&kd = rows.kd, &vd = rows.vd;  // [rows, hd]
    auto q = randn(2 * hd, 9);
    if (kv_dtype_has_integer_codes(kdt)) {
      round_query_to_grid(q.data(), hd);
      round_query_to_grid(q.data() + hd, hd);
    }
    PagedKv mixed{k.data(), v.data(), ids.data(), bs, krec, vrec, kdt, hd, hd};
    mixed.v_dtype = vdt;
    PagedKv plain{reinterpret_cast<const uint8_t*>(kd.data()), reinterpret_cast<const uint8_t*>(vd.data()),
                  ids.data(), bs, hd * 4, hd * 4, KvDtype::F32, hd, hd};
    std::vector<float> s1(ctx), s2(2 * ctx), o1(hd), o2(2 * hd), o3(hd);
    kScalarDot.attend(q.data(), plain, ctx, 0.25f, s1.data(), o1.data());
    for (Isa isa : {Isa::Scalar, Isa::Avx2, Isa::Avx512}) {
      if (static_cast<int>(isa) > static_cast<int>(detected_isa())) continue;
      const DotKernels& kern = dot_kernels(isa);
      kern.attend_group(q.data(), 2, hd, mixed, ctx, 0.25f, s2.data(), ctx, o2.data(), hd);
      kern.attend(q.data(), mixed, ctx, 0.25f, s1.data(), o3.data());
      for (int d = 0; d < hd; ++d) {
        EXPECT_NEAR(o2[d], o1[d], 1e-5f) << kv_dtype_name(kdt) << "/" << kv_dtype_name(vdt) << " isa " << int(isa);
        ASSERT_EQ(o2[d], o3[d]) << kv_dtype_name(kdt) << "/" << kv_dtype_name(vdt) << " isa " << int(isa);
      }
    }
  }
}

TEST(KvCodec, GroupedQueryHeadsGetExactlyTheSingleHeadResult) {
  // GQA: attend_group serves num_q query heads from one walk over the KV head's pages; each head's output must be
  // what attend() gives for it alone, bit for bit, at every ISA, for every dtype, with and without summary biases
  // and a sparse window, and for contexts that end inside a page.
  const int bs = 8, pages = 40;
  for (int hd : {16, 48, 64, 40})
  for (KvDtype dt : {KvDtype::F32, KvDtype::F16, KvDtype::Int8, KvDtype::Int4, KvDtype::Tq4})
  for (int num_q : {1, 2, 4, 5}) {
    const int64_t rec = kv_head_record_bytes(dt, hd);
    std::vector<int32_t> ids(pages);
    for (int i = 0; i < pages; ++i) ids[i] = (i * 7 + 3) % pages;  // shuffled pages
    std::vector<uint8_t> k(pages * bs * rec), v(pages * bs * rec);
    for (int r = 0; r < pages * bs; ++r) {
      auto a = randn(hd, 300 + r), b = randn(hd, 900 + r);
      encode_kv_head(a.data(), hd, dt, k.data() + r * rec);
      encode_kv_head(b.data(), hd, dt, v.data() + r * rec);
    }
    std::vector<float> bias(bs);
    for (int i = 0; i < bs; ++i) bias[i] = std::log(1.0f + i);
    for (int variant = 0; variant < 3; ++variant) {
      PagedKv kv{k.data(), v.data(), ids.data(), bs, rec, rec, dt, hd, hd};
      int64_t ctx = 301;
      if (variant == 1) {  // merged summaries in the first page
        kv.row_bias = bias.data();
        kv.num_bias_rows = bs;
      } else if (variant == 2) {  // sinks + recent window
        kv.sink_tokens = 4;
        kv.window_begin = 200;
        ctx = 4 + 101;
      }
      auto q = randn(num_q * hd, 11 + num_q);
      for (Isa isa : {Isa::Scalar, Isa::Avx2, Isa::Avx512}) {
        if (static_cast<int>(isa) > static_cast<int>(detected_isa())) continue;
        const DotKernels& kern = dot_kernels(isa);
        std::vector<float> sg(num_q * ctx), og(num_q * hd), s1(ctx), o1(hd);
        kern.attend_group(q.data(), num_q, hd, kv, ctx, 0.2f, sg.data(), ctx, og.data(), hd);
        for (int h = 0; h < num_q; ++h) {
          kern.attend(q.data() + h * hd, kv, ctx, 0.2f, s1.data(), o1.data());
          for (int d = 0; d < hd; ++d) {
            ASSERT_EQ(og[h * hd + d], o1[d]) << kv_dtype_name(dt) << " hd " << hd << " heads " << num_q << " head "
                                             << h << " variant " << variant << " isa " << static_cast<int>(isa);
          }
        }
      }
    }
  }
}

TEST(KvCodec, TheGroupPageWalkMatchesDecodedRowsForEveryPageSize) {
  // The decode walk's common case (cpu_avx2/attention_pages_avx2.cpp: f16 / int8 / int4 / tq4 rows of 64 or 128
  // values, a page decoded at a time): pages whose size is not a multiple of 8 (a partial 8-row group inside every
  // page), a context ending inside a page, a GQA group of 4 — against the scalar walk over the decoded rows, and
  // each head equal to attend() for it alone, bit for bit.
  for (int bs : {5, 12, 16})
  for (int hd : {64, 128})
  for (KvDtype dt : {KvDtype::F16, KvDtype::Int8, KvDtype::Int4, KvDtype::Tq4}) {
    const int pages = 9, num_q = 4, ctx = pages * bs - 3;
    const int64_t rec = kv_head_record_bytes(dt, hd);
    std::vector<int32_t> ids(pages);
    for (int i = 0; i < pages; ++i) ids[i] = (i * 4 + 1) % pages;  // shuffled pages
    const EncodedRows rows = encoded_rows(pages * bs, hd, dt, dt, 700, 800);
    auto q = randn(num_q * hd, 13);
    if (kv_dtype_has_integer_codes(dt)) {
      for (int h = 0; h < num_q; ++h) round_query_to_grid(q.data() + h * hd, hd);
    }
    PagedKv quant{rows.k.data(), rows.v.data(), ids.data(), bs, rec, rec, dt, hd, hd};
    PagedKv plain{reinterpret_cast<const uint8_t*>(rows.kd.data()), reinterpret_cast<const uint8_t*>(rows.vd.data()),
                  ids.data(), bs, hd * 4, hd * 4, KvDtype::F32, hd, hd};
    const DotKernels& kern = dot_kernels(detected_isa());
    std::vector<float> sg(num_q * ctx), og(num_q * hd), s1(ctx), o1(hd), o2(hd);
    kern.attend_group(q.data(), num_q, hd, quant, ctx, 0.125f, sg.data(), ctx, og.data(), hd);
    for (int h = 0; h < num_q; ++h) {
      kern.attend(q.data() + h * hd, quant, ctx, 0.125f, s1.data(), o1.data());
      kScalarDot.attend(q.data() + h * hd, plain, ctx, 0.125f, s1.data(), o2.data());
      for (int d = 0; d < hd; ++d) {
        ASSERT_EQ(og[h * hd + d], o1[d]) << kv_dtype_name(dt) << " hd " << hd << " page " << bs << " head " << h;
        ASSERT_NEAR(og[h * hd + d], o2[d], 1e-5f) << kv_dtype_name(dt) << " hd " << hd << " page " << bs;
      }
    }
  }
}

TEST(KvCodec, AttentionWithDifferentKeyAndValueSizesMatchesReference) {
  // Low-rank latents: keys of 16 values, values of 8, f32 and int8 rows.
  const int kd = 16, vd = 8, ctx = 19, bs = 4;
  for (KvDtype dt : {KvDtype::F32, KvDtype::Int8}) {
    const int64_t krec = kv_head_record_bytes(dt, kd), vrec = kv_head_record_bytes(dt, vd);
    std::vector<int32_t> ids = {4, 1, 3, 0, 2};
    std::vector<uint8_t> k(5 * bs * krec), v(5 * bs * vrec);
    for (int r = 0; r < 5 * bs; ++r) {
      auto a = randn(kd, 300 + r), b = randn(vd, 400 + r);
      encode_kv_head(a.data(), kd, dt, k.data() + r * krec);
      encode_kv_head(b.data(), vd, dt, v.data() + r * vrec);
    }
    auto q = randn(kd, 8);
    PagedKv kv{k.data(), v.data(), ids.data(), bs, krec, vrec, dt, kd, vd};
    std::vector<float> s1(ctx), s2(ctx), o1(vd), o2(vd);
    kScalarDot.attend(q.data(), kv, ctx, 0.3f, s1.data(), o1.data());
    dot_kernels(detected_isa()).attend(q.data(), kv, ctx, 0.3f, s2.data(), o2.data());
    for (int d = 0; d < vd; ++d) {
      EXPECT_TRUE(std::isfinite(o2[d]));
      EXPECT_NEAR(o1[d], o2[d], 1e-5f) << kv_dtype_name(dt);
    }
  }
}

// MLA's record: a normalised latent (512 values near 1) beside a rope key 8x larger. One scale for the record
// spends int4's 16 levels on the rope key's range and crushes the latent; a scale per part (kv_record_bytes: one
// more fp16) keeps the latent's error at its own scale.
TEST(KvCodec, TwoPartRecordScalesTheLatentAndTheRopeKeyApart) {
  const int32_t dk = 576, dv = 512;
  auto x = randn(dk, 77);
  for (int32_t i = dv; i < dk; ++i) x[i] *= 8.0f;
  for (KvDtype dt : {KvDtype::Int8, KvDtype::Int4}) {
    std::vector<uint8_t> one(kv_head_record_bytes(dt, dk)), two(kv_record_bytes(dt, dk, dv));
    EXPECT_EQ(two.size(), one.size() + 2);
    encode_kv_head(x.data(), dk, dt, one.data());
    encode_kv_record(x.data(), dk, dv, dt, two.data());
    std::vector<float> a(dk), b(dk);
    decode_kv_head(one.data(), dk, dt, a.data());
    decode_kv_record(two.data(), dk, dv, dt, b.data());
    double e1 = 0, e2 = 0, n = 0;
    for (int32_t i = 0; i < dv; ++i) {
      e1 += (a[i] - x[i]) * (a[i] - x[i]);
      e2 += (b[i] - x[i]) * (b[i] - x[i]);
      n += x[i] * x[i];
    }
    EXPECT_LT(e2, e1 / 4) << kv_dtype_name(dt) << ": latent error with its own scale";
    EXPECT_LT(std::sqrt(e2 / n), dt == KvDtype::Int8 ? 0.02 : 0.3) << kv_dtype_name(dt);
    for (int32_t i = dv; i < dk; ++i) EXPECT_NEAR(b[i], x[i], dt == KvDtype::Int8 ? 0.2 : 3.0);
    // Rotation part by part is orthonormal and inverts.
    std::vector<float> r = x;
    hadamard_rotate_record(r.data(), dk, dv);
    hadamard_unrotate_record(r.data(), dk, dv);
    for (int32_t i = 0; i < dk; ++i) EXPECT_NEAR(r[i], x[i], 1e-4f);
  }
}

}  // namespace
}  // namespace slimkv
