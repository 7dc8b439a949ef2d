// Every optimised kernel against the scalar reference, per ISA this CPU has, with a tolerance per dtype.
#include <gtest/gtest.h>

#include <cmath>
#include <random>

#include "core/half.h"
#include "core/thread_pool.h"
#include "kernels/dot.h"
#include "kernels/kquant_panels.h"
#include "kernels/matmul.h"
#include "kernels/ops.h"
#include "kernels/type_traits.h"
#include "random_data.h"

namespace slimkv {
namespace {

class DotKernelTest : public ::testing::TestWithParam<Isa> {
 protected:
  void SetUp() override {
    if (static_cast<int>(GetParam()) > static_cast<int>(detected_isa())) GTEST_SKIP() << "CPU lacks this ISA";
  }
  const DotKernels& opt() { return dot_kernels(GetParam()); }
  const DotKernels& ref() { return kScalarDot; }
};

TEST_P(DotKernelTest, F32MatchesReferenceForAllLengths) {
  for (int64_t n : {1, 7, 8, 15, 16, 31, 33, 64, 100, 257, 1024}) {
    auto a = random_vec(n, 1), b = random_vec(n, 2);
    float r = ref().f32(a.data(), b.data(), n), o = opt().f32(a.data(), b.data(), n);
    EXPECT_NEAR(o, r, 1e-4f * std::sqrt(static_cast<float>(n)) + 1e-5f) << "n=" << n;
  }
}

TEST_P(DotKernelTest, F16MatchesReference) {
  for (int64_t n : {1, 9, 16, 40, 128, 1000}) {
    auto a = random_vec(n, 3), b = random_vec(n, 4);
    std::vector<uint16_t> h(n);
    for (int64_t i = 0; i < n; ++i) h[i] = fp32_to_fp16(a[i]);
    float r = ref().f16_f32(h.data(), b.data(), n), o = opt().f16_f32(h.data(), b.data(), n);
    EXPECT_NEAR(o, r, 1e-4f * std::sqrt(static_cast<float>(n)) + 1e-5f) << "n=" << n;
  }
}

TEST_P(DotKernelTest, QuantizeQ8_0IsBitIdenticalToReference) {
  auto x = random_vec(256, 5, 3.0f);
  x[7] = 0.0f;
  std::vector<Q8_0Block> a(8), b(8);
  ref().quantize_q8_0(x.data(), a.data(), 256);
  opt().quantize_q8_0(x.data(), b.data(), 256);
  for (int k = 0; k < 8; ++k) {
    EXPECT_EQ(a[k].d, b[k].d);
    for (int j = 0; j < 32; ++j) EXPECT_EQ(a[k].qs[j], b[k].qs[j]) << k << "," << j;
  }
}

// Q8_K activations through quantize_activations (the ISA's quantizer where it has one) equal the reference's:
// a block of zeros, a block whose largest magnitude is negative, one where -m comes before +m (the first wins).
TEST_P(DotKernelTest, QuantizeQ8_KIsBitIdenticalToReference) {
  auto x = random_vec(1024, 9, 3.0f);
  std::fill(x.begin() + 256, x.begin() + 512, 0.0f);
  for (size_t i = 512; i < 1024; ++i) x[i] *= 0.1f;  // below the planted extremes
  x[600] = -9.0f;
  x[800] = -7.5f;
  x[900] = 7.5f;
  std::vector<Q8_KBlock> a(4), b(4);
  type_traits(DType::Q8_K).from_float(x.data(), a.data(), 1024);
  quantize_activations(DType::Q8_K, x.data(), b.data(), 1024, GetParam());
  for (int k = 0; k < 4; ++k) {
    EXPECT_EQ(a[k].d, b[k].d) << k;
    for (int j = 0; j < 256; ++j) ASSERT_EQ(a[k].qs[j], b[k].qs[j]) << k << "," << j;
    for (int j = 0; j < 16; ++j) ASSERT_EQ(a[k].bsums[j], b[k].bsums[j]) << k << "," << j;
  }
  EXPECT_EQ(a[3].d, 1 / (-127.0f / -7.5f));
  EXPECT_GT(a[3].d, 0.0f);  // -7.5 came first (+7.5 would give a negative d)
}

TEST_P(DotKernelTest, QuantizedDotsMatchReferenceExactlyUpToFloatRounding) {
  auto w = random_vec(512, 6), x = random_vec(512, 7);
  std::vector<Q8_0Block> xq(16), wq8(16);
  std::vector<Q4_0Block> wq4(16);
  ref().quantize_q8_0(x.data(), xq.data(), 512);
  ref().quantize_q8_0(w.data(), wq8.data(), 512);
  std::mt19937 rng(8);
  for (auto& blk : wq4) {
    blk.d = fp32_to_fp16(0.05f);
    for (auto& q : blk.qs) q = static_cast<uint8_t>(rng() & 0xFF);
  }
  float r8 = ref().q8_0_q8_0(wq8.data(), xq.data(), 16), o8 = opt().q8_0_q8_0(wq8.data(), xq.data(), 16);
  float r4 = ref().q4_0_q8_0(wq4.data(), xq.data(), 16), o4 = opt().q4_0_q8_0(wq4.data(), xq.data(), 16);
  EXPECT_NEAR(o8, r8, 1e-3f * std::fabs(r8) + 1e-4f);
  EXPECT_NEAR(o4, r4, 1e-3f * std::fabs(r4) + 1e-4f);
  // And the quantized dot approximates the float dot (Q8_0 error bound, loose).
  float exact = ref().f32(w.data(), x.data(), 512);
  EXPECT_NEAR(r8, exact, 0.02f * std::sqrt(512.0f));
}

TEST_P(DotKernelTest, AxpyMatchesReference) {
  auto x = random_vec(77, 9);
  auto y1 = random_vec(77, 10), y2 = y1;
  ref().axpy(0.37f, x.data(), y1.data(), 77);
  opt().axpy(0.37f, x.data(), y2.data(), 77);
  for (int i = 0; i < 77; ++i) EXPECT_NEAR(y1[i], y2[i], 1e-6f);
}

TEST_P(DotKernelTest, ThreadedMatmulMatchesSingleThreadedReferenceForEveryDtype) {
  const int64_t rows = 96, cols = 128, T = 3;
  auto w = random_vec(rows * cols, 11), x = random_vec(T * cols, 12);
  std::vector<uint16_t> w16(rows * cols);
  for (size_t i = 0; i < w16.size(); ++i) w16[i] = fp32_to_fp16(w[i]);
  std::vector<Q8_0Block> w8(rows * cols / 32);
  kScalarDot.quantize_q8_0(w.data(), w8.data(), rows * cols);
  ThreadPool pool(2);
  struct Case { DType dt; const void* data; float tol; };
  for (Case c : {Case{DType::F32, w.data(), 1e-4f}, Case{DType::F16, w16.data(), 1e-4f},
                 Case{DType::Q8_0, w8.data(), 1e-3f}}) {
    WeightView wv{c.dt, rows, cols, c.data};
    std::vector<float> y_ref(T * rows), y_opt(T * rows);
    matmul(wv, x.data(), T, y_ref.data(), nullptr, Isa::Scalar);
    matmul(wv, x.data(), T, y_opt.data(), &pool, GetParam());
    for (int64_t i = 0; i < T * rows; ++i) {
      ASSERT_NEAR(y_opt[i], y_ref[i], c.tol * (1 + std::fabs(y_ref[i]))) << dtype_name(c.dt) << " i=" << i;
    }
  }
}

TEST_P(DotKernelTest, PagedAttentionMatchesReferenceForHeadDimsBlockSizesAndContexts) {
  for (int32_t hd : {8, 16, 64, 128, 6}) {
    for (int32_t bs : {1, 8, 16}) {
      for (int64_t ctx : {1, 7, 9, 33, 300}) {
        const int64_t stride = hd * 3;  // a token's row holds 3 KV heads; this head is the second
        const int32_t pages = static_cast<int32_t>((ctx + bs - 1) / bs);
        std::vector<int32_t> ids(pages);  // pages scattered over a larger pool, in shuffled order
        for (int32_t i = 0; i < pages; ++i) ids[i] = (i * 7 + 3) % (pages * 2 + 1);
        const int64_t pool_rows = static_cast<int64_t>(pages * 2 + 1) * bs;
        auto q = random_vec(hd, 13), k = random_vec(pool_rows * stride, 14, 2.0f), v = random_vec(pool_rows * stride, 15);
        PagedKv kv{reinterpret_cast<const uint8_t*>(k.data() + hd), reinterpret_cast<const uint8_t*>(v.data() + hd),
                   ids.data(), bs, stride * 4, stride * 4, KvDtype::F32, hd, hd};
        std::vector<float> s1(ctx), s2(ctx), o1(hd), o2(hd), o3(hd, 0.0f);
        const float scale = 1.0f / std::sqrt(static_cast<float>(hd));
        ref().attend(q.data(), kv, ctx, scale, s1.data(), o1.data());
        opt().attend(q.data(), kv, ctx, scale, s2.data(), o2.data());
        // Independent check: gather the rows and do softmax-weighted sum in double.
        std::vector<double> sc(ctx);
        double mx = -1e30, sum = 0;
        for (int64_t t = 0; t < ctx; ++t) {
          const float* kr = k.data() + (static_cast<int64_t>(ids[t / bs]) * bs + t % bs) * stride + hd;
          double d = 0;
          for (int32_t j = 0; j < hd; ++j) d += double(q[j]) * kr[j];
          sc[t] = d * scale;
          mx = std::max(mx, sc[t]);
        }
        for (auto& x : sc) { x = std::exp(x - mx); sum += x; }
        for (int64_t t = 0; t < ctx; ++t) {
          const float* vr = v.data() + (static_cast<int64_t>(ids[t / bs]) * bs + t % bs) * stride + hd;
          for (int32_t j = 0; j < hd; ++j) o3[j] += static_cast<float>(sc[t] / sum * vr[j]);
        }
        for (int32_t d = 0; d < hd; ++d) {
          ASSERT_NEAR(o2[d], o1[d], 2e-5f) << "hd=" << hd << " bs=" << bs << " ctx=" << ctx;
          ASSERT_NEAR(o1[d], o3[d], 1e-4f) << "hd=" << hd << " bs=" << bs << " ctx=" << ctx;
        }
      }
    }
  }
}

TEST_P(DotKernelTest, BatchedMatmulRowsAreBitIdenticalToSingleTokenRows) {
  // Batched output must equal single-request output: each (row, token) is summed in the same order
  // whatever the number of tokens in the batch.
  const int64_t rows = 37, cols = 200;
  auto w = random_vec(rows * cols, 21), x = random_vec(9 * cols, 22);
  std::vector<Q8_0Block> w8(rows * 224 / 32);
  auto w224 = random_vec(rows * 224, 23), x224 = random_vec(9 * 224, 24);
  kScalarDot.quantize_q8_0(w224.data(), w8.data(), rows * 224);
  for (auto c : {std::pair<WeightView, const float*>{WeightView{DType::F32, rows, cols, w.data()}, x.data()},
                 std::pair<WeightView, const float*>{WeightView{DType::Q8_0, rows, 224, w8.data()}, x224.data()}}) {
    const WeightView& wv = c.first;
    std::vector<float> all(9 * rows), one(rows);
    matmul(wv, c.second, 9, all.data(), nullptr, GetParam());
    for (int64_t t = 0; t < 9; ++t) {
      matmul(wv, c.second + t * wv.cols, 1, one.data(), nullptr, GetParam());
      for (int64_t r = 0; r < rows; ++r) ASSERT_EQ(one[r], all[t * rows + r]) << dtype_name(wv.dtype) << " t=" << t;
    }
  }
}

// Row-major tiles (AVX2: up to 3 F32 / 6 F16 / 8 Q8_0 or Q4_0 tokens a weight row, in blocks of 64 tokens): every
// batch size and ragged widths, threaded, still equal one token at a time, bit for bit.
TEST_P(DotKernelTest, RowMajorTilesOfEveryBatchSizeEqualSingleTokens) {
  ThreadPool pool(2);
  const int64_t rows = 45;
  for (DType dt : {DType::F32, DType::F16, DType::Q8_0, DType::Q4_0}) {
    const bool quant = dt == DType::Q8_0 || dt == DType::Q4_0;
    for (int64_t cols : quant ? std::vector<int64_t>{224, 96} : std::vector<int64_t>{203, 216, 40}) {
      const auto wf = random_vec(rows * cols, 41);
      std::vector<uint8_t> wb(static_cast<size_t>(rows * dtype_row_bytes(dt, cols)));
      for (int64_t r = 0; r < rows; ++r) {
        type_traits(dt).from_float(wf.data() + r * cols, wb.data() + r * dtype_row_bytes(dt, cols), cols);
      }
      const WeightView wv{dt, rows, cols, wb.data()};
      for (int64_t T : {1, 2, 3, 5, 6, 7, 8, 9, 64, 65, 130}) {
        const auto x = random_vec(T * cols, 42 + T);
        std::vector<float> all(T * rows), one(rows);
        matmul(wv, x.data(), T, all.data(), &pool, GetParam());
        for (int64_t t = 0; t < T; ++t) {
          matmul(wv, x.data() + t * cols, 1, one.data(), nullptr, GetParam());
          for (int64_t r = 0; r < rows; ++r) {
            ASSERT_EQ(one[r], all[t * rows + r]) << dtype_name(dt) << " cols " << cols << " T " << T << " t " << t;
          }
        }
      }
    }
  }
}

TEST_P(DotKernelTest, PanelMatmulIsBitIdenticalToScalarFmaChainAndBatchInvariant) {
  // The last shape is 8.4 MB in F32: decode walks a matrix that large as one stream (gemm_panels_avx512.cpp).
  // 27 tokens: whole prefill tiles (6 tokens F32, 12 F16) and a remainder.
  for (DType dt : {DType::F32, DType::F16})
  for (auto [rows, cols] : {std::pair<int64_t, int64_t>{1, 70}, {16, 70}, {37, 70}, {100, 70}, {4100, 512}}) {
    const int64_t T = 27;
    auto w = random_vec(rows * cols, 31), x = random_vec(T * cols, 32);
    std::vector<uint16_t> half(w.size());
    if (dt == DType::F16) {  // the weights the product is checked against are the halves' values
      for (size_t i = 0; i < w.size(); ++i) {
        half[i] = fp32_to_fp16(w[i]);
        w[i] = fp16_to_fp32(half[i]);
      }
    }
    const WeightView wr{dt, rows, cols, dt == DType::F16 ? static_cast<const void*>(half.data()) : w.data()};
    std::vector<float> packed(panel_elems(wr));
    WeightView wp = pack_panels(wr, packed.data());
    std::vector<float> ref(T * rows), opt(T * rows), one(rows);
    matmul(wp, x.data(), T, ref.data(), nullptr, Isa::Scalar);
    ThreadPool pool(2);
    matmul(wp, x.data(), T, opt.data(), &pool, GetParam());
    for (int64_t i = 0; i < T * rows; ++i) ASSERT_EQ(opt[i], ref[i]) << dtype_name(dt) << " rows=" << rows << " i=" << i;
    for (int64_t t = 0; t < T; ++t) {
      matmul(wp, x.data() + t * cols, 1, one.data(), nullptr, GetParam());
      for (int64_t r = 0; r < rows; ++r) ASSERT_EQ(one[r], ref[t * rows + r]) << dtype_name(dt);
    }
    std::vector<float> row(cols);
    dequantize_row(wp, rows - 1, row.data());
    ASSERT_EQ(row, std::vector<float>(w.end() - cols, w.end()));
    // And it is the product it claims to be.
    double d = 0;
    for (int64_t k = 0; k < cols; ++k) d += double(w[(rows - 1) * cols + k]) * x[k];
    EXPECT_NEAR(ref[rows - 1], d, 1e-4);
  }
}

// What every repacked quantized layout satisfies beside its kernel's direct call: through the dispatcher the panel
// matmul equals the scalar reference (ref) bit for bit with 2 threads and token by token, is the row-major product
// to rounding, and its rows dequantize back exactly to the file's.
void expect_panels_agree(const WeightView& wr, const WeightView& wp, const std::vector<float>& x, int64_t T,
                         const std::vector<float>& ref, Isa isa) {
  const int64_t rows = wr.rows, cols = wr.cols;
  const std::string_view name = dtype_name(wr.dtype);
  std::vector<float> opt(T * rows), one(rows), plain(T * rows);
  ThreadPool pool(2);
  matmul(wp, x.data(), T, opt.data(), &pool, isa);
  for (int64_t i = 0; i < T * rows; ++i) ASSERT_EQ(opt[i], ref[i]) << name << " rows=" << rows << " i=" << i;
  for (int64_t t = 0; t < T; ++t) {
    matmul(wp, x.data() + t * cols, 1, one.data(), nullptr, isa);
    for (int64_t r = 0; r < rows; ++r) ASSERT_EQ(one[r], ref[t * rows + r]) << name << " t=" << t;
  }
  matmul(wr, x.data(), T, plain.data(), nullptr, Isa::Scalar);
  for (int64_t i = 0; i < T * rows; ++i) {
    ASSERT_NEAR(ref[i], plain[i], 1e-4f * (1 + std::fabs(plain[i]))) << name << " i=" << i;
  }
  std::vector<float> a(cols), b(cols);
  for (int64_t r : {int64_t{0}, rows / 2, rows - 1}) {
    dequantize_row(wp, r, a.data());
    dequantize_row(wr, r, b.data());
    ASSERT_EQ(a, b) << name << " row " << r;
  }
}

// A 64-byte aligned buffer of panel_view_bytes(w), as the load-time arena gives every view.
uint8_t* aligned_panel_buffer(const WeightView& w, std::vector<uint8_t>& storage) {
  storage.assign(static_cast<size_t>(panel_view_bytes(w) + 64), 0);
  return storage.data() + (64 - reinterpret_cast<uintptr_t>(storage.data()) % 64) % 64;
}

// Q4_0 / Q8_0 interleaved 16 rows a panel (issue P): the AVX-512 VNNI kernel equals the scalar reference bit for
// bit (the same integer dot, the same float multiply and fma per block), whatever the batch or the threads.
TEST_P(DotKernelTest, QuantPanelsEqualTheirReferenceAndTheRowMajorProduct) {
  for (DType dt : {DType::Q4_0, DType::Q8_0})
  for (auto [rows, cols] : {std::pair<int64_t, int64_t>{1, 64}, {16, 32}, {37, 96}, {100, 256}, {520, 2048}}) {
    const int64_t T = 9;
    auto wf = random_vec(rows * cols, 41), x = random_vec(T * cols, 42);
    std::vector<uint8_t> q(static_cast<size_t>(rows * cols / kQuantBlock * dtype_block_bytes(dt))), packed;
    type_traits(dt).from_float(wf.data(), q.data(), rows * cols);
    const WeightView wr{dt, rows, cols, q.data()};
    const WeightView wp = pack_quant_panels(wr, aligned_panel_buffer(wr, packed));
    std::vector<float> ref(T * rows), opt(T * rows);
    matmul(wp, x.data(), T, ref.data(), nullptr, Isa::Scalar);
    if (GetParam() == Isa::Avx512 && cols % 64 == 0) {  // the VNNI kernel itself takes it (odd block counts do not)
      std::vector<Q8_0Block> xq(static_cast<size_t>(T * cols / kQuantBlock));
      for (int64_t t = 0; t < T; ++t) {
        quantize_activations(DType::Q8_0, x.data() + t * cols, xq.data() + t * cols / kQuantBlock, cols, Isa::Scalar);
      }
      std::vector<int32_t> xcorr(xq.size());
      quant_panel_terms(dt, xq.data(), static_cast<int64_t>(xq.size()), xcorr.data());
      ASSERT_TRUE(dot_kernels(Isa::Avx512).gemm_quant_panels(wp, xq.data(), xcorr.data(), T, opt.data(), 0, rows));
      for (int64_t i = 0; i < T * rows; ++i) ASSERT_EQ(opt[i], ref[i]) << dtype_name(dt) << " direct, i=" << i;
    }
    ASSERT_NO_FATAL_FAILURE(expect_panels_agree(wr, wp, x, T, ref, GetParam()));
  }
}

// Q4_K / Q5_K / Q6_K / IQ4_XS in 16-row panels of 256-value super-blocks: the same, with Q8_K activations.
TEST_P(DotKernelTest, KQuantPanelsEqualTheirReferenceAndTheRowMajorProduct) {
  for (DType dt : {DType::Q4_K, DType::Q5_K, DType::Q6_K, DType::IQ4_XS})
  for (auto [rows, cols] : {std::pair<int64_t, int64_t>{1, 256}, {16, 512}, {37, 256}, {100, 768}, {520, 2048}})
  for (int64_t T : {1, 9}) {  // decode's one-token walk, prefill's tiles
    const int64_t nsb = cols / 256;
    auto wf = random_vec(rows * cols, 43), x = random_vec(T * cols, 44);
    std::vector<uint8_t> q(static_cast<size_t>(rows * nsb * dtype_block_bytes(dt))), packed;
    type_traits(dt).from_float(wf.data(), q.data(), rows * cols);
    const WeightView wr{dt, rows, cols, q.data()};
    const WeightView wp = pack_kquant_panels(wr, aligned_panel_buffer(wr, packed));
    std::vector<float> ref(T * rows), opt(T * rows);
    matmul(wp, x.data(), T, ref.data(), nullptr, Isa::Scalar);
    if (GetParam() == Isa::Avx512) {  // the VNNI kernel itself takes it
      std::vector<Q8_KBlock> xk(static_cast<size_t>(T * nsb));
      std::vector<int32_t> terms(static_cast<size_t>(T * nsb * 16));
      for (int64_t t = 0; t < T; ++t) quantize_activations(DType::Q8_K, x.data() + t * cols, xk.data() + t * nsb, cols, Isa::Scalar);
      kquant_panel_terms(dt, xk.data(), T, nsb, terms.data());
      ASSERT_TRUE(dot_kernels(Isa::Avx512).gemm_kquant_panels(wp, xk.data(), terms.data(), T, opt.data(), 0, rows));
      for (int64_t i = 0; i < T * rows; ++i) ASSERT_EQ(opt[i], ref[i]) << dtype_name(dt) << " direct, i=" << i;
    }
    ASSERT_NO_FATAL_FAILURE(expect_panels_agree(wr, wp, x, T, ref, GetParam()));
  }
}

// Q / K / V and gate / up in one dispatch (matmul_same_input): K-quant panels of mixed types share one quantization
// of x and one split of the threads, a row-major matrix among them falls back to one matmul each; either way each
// output equals its own matmul call, bit for bit, for decode's one token and a prefill batch.
TEST_P(DotKernelTest, MatmulsOfOneInputEqualSeparateCalls) {
  ThreadPool pool(2);
  const int64_t cols = 512;
  const DType types[] = {DType::Q4_K, DType::Q6_K, DType::Q4_K, DType::Q5_K};
  const int64_t rows[] = {520, 37, 100, 256};
  std::vector<std::vector<uint8_t>> raw(4), packed(4);
  std::vector<WeightView> ws;
  for (int i = 0; i < 4; ++i) {
    auto wf = random_vec(rows[i] * cols, 50 + i);
    raw[i].resize(static_cast<size_t>(rows[i] * cols / 256 * dtype_block_bytes(types[i])));
    type_traits(types[i]).from_float(wf.data(), raw[i].data(), rows[i] * cols);
    const WeightView wr{types[i], rows[i], cols, raw[i].data()};
    ws.push_back(pack_kquant_panels(wr, aligned_panel_buffer(wr, packed[i])));
  }
  auto f32 = random_vec(64 * cols, 60);
  for (bool with_row_major : {false, true}) {
    if (with_row_major) ws[3] = WeightView{DType::F32, 64, cols, f32.data()};
    for (int64_t T : {1, 9}) {
      auto x = random_vec(T * cols, 61);
      std::vector<std::vector<float>> sep(4), fused(4);
      MatmulOut outs[4];
      for (int i = 0; i < 4; ++i) {
        sep[i].resize(T * ws[i].rows);
        fused[i].assign(T * ws[i].rows, -1.0f);
        matmul(ws[i], x.data(), T, sep[i].data(), &pool, GetParam());
        outs[i] = {&ws[i], fused[i].data()};
      }
      matmul_same_input(outs, 4, x.data(), T, &pool, GetParam());
      for (int i = 0; i < 4; ++i) {
        for (size_t j = 0; j < sep[i].size(); ++j) {
          ASSERT_EQ(fused[i][j], sep[i][j]) << "matrix " << i << " T=" << T << " row-major " << with_row_major;
        }
      }
    }
  }
}

INSTANTIATE_TEST_SUITE_P(AllIsas, DotKernelTest, ::testing::Values(Isa::Scalar, Isa::Avx2, Isa::Avx512),
                         [](const auto& info) { return std::string(isa_name(info.param)); });

TEST(OpsTest, RopeLayoutsRotatePairsAndPreserveNorm) {
  RopeTable inter, half;
  inter.init(16, 8, 8, 10000.0f, RopeLayout::Interleaved);
  half.init(16, 8, 8, 10000.0f, RopeLayout::RotateHalf);
  std::vector<float> a = {1, 2, 3, 4, 5, 6, 7, 8};
  // Interleaved at pos p rotates (x0, x1) by p * 1 radian.
  auto b = a;
  inter.apply(b.data(), 1, 3);
  EXPECT_NEAR(b[0], std::cos(3.0f) * 1 - std::sin(3.0f) * 2, 1e-5f);
  EXPECT_NEAR(b[1], std::sin(3.0f) * 1 + std::cos(3.0f) * 2, 1e-5f);
  // Rotate-half pairs x0 with x4.
  auto c = a;
  half.apply(c.data(), 1, 3);
  EXPECT_NEAR(c[0], std::cos(3.0f) * 1 - std::sin(3.0f) * 5, 1e-5f);
  EXPECT_NEAR(c[4], std::cos(3.0f) * 5 + std::sin(3.0f) * 1, 1e-5f);
  float na = 0, nb = 0, nc = 0;
  for (int i = 0; i < 8; ++i) { na += a[i] * a[i]; nb += b[i] * b[i]; nc += c[i] * c[i]; }
  EXPECT_NEAR(na, nb, 1e-3f);
  EXPECT_NEAR(na, nc, 1e-3f);
}

TEST(OpsTest, RmsnormAndSoftmaxReference) {
  std::vector<float> x = {3, 4}, w = {1, 2}, out(2);
  rmsnorm(out.data(), x.data(), w.data(), 2, 0.0f);
  float s = 1.0f / std::sqrt(12.5f);
  EXPECT_NEAR(out[0], 3 * s, 1e-6f);
  EXPECT_NEAR(out[1], 8 * s, 1e-6f);
  std::vector<float> l = {1, 2, 3};
  softmax(l.data(), 3);
  EXPECT_NEAR(l[0] + l[1] + l[2], 1.0f, 1e-6f);
  EXPECT_NEAR(l[2] / l[1], std::exp(1.0f), 1e-4f);
}

TEST(HalfTest, RoundTripsAndRoundsToNearestEven) {
  for (float f : {0.0f, 1.0f, -2.5f, 65504.0f, 6.1e-5f, 1e-7f}) {
    EXPECT_NEAR(fp16_to_fp32(fp32_to_fp16(f)), f, std::fabs(f) * 1e-3f + 6e-8f) << f;
  }
  EXPECT_EQ(fp32_to_fp16(1.0f), 0x3C00);
  EXPECT_EQ(fp32_to_fp16(1.0f + 1.0f / 2048), 0x3C00);  // tie -> even
  EXPECT_TRUE(std::isinf(fp16_to_fp32(fp32_to_fp16(1e6f))));
}

}  // namespace
}  // namespace slimkv
