// Every weight type of the type traits table, per ISA this CPU has: the reference quantizer and dequantizer agree
// (round-trip error within the type's precision), the reference dot product equals the dot of the dequantized rows,
// every SIMD dot equals the reference, and matmul is batch-invariant. (Bit-exactness with GGML's layouts is checked
// end to end against llama.cpp's files: tests/reference/llamacpp_reference_test.cpp, dequant_max_abs_logit.)
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <random>
#include <set>

#include "core/thread_pool.h"
#include "kernels/matmul.h"
#include "kernels/type_traits.h"
#include "random_data.h"

namespace slimkv {
namespace {

std::vector<uint8_t> quantize(DType t, const std::vector<float>& x) {
  std::vector<uint8_t> q(static_cast<size_t>(dtype_row_bytes(t, static_cast<int64_t>(x.size()))));
  type_traits(t).from_float(x.data(), q.data(), static_cast<int64_t>(x.size()));
  return q;
}
std::vector<float> dequantize(DType t, const std::vector<uint8_t>& q, int64_t n) {
  std::vector<float> y(n);
  type_traits(t).to_float(q.data(), y.data(), n);
  return y;
}

// Largest relative RMS round-trip error per type (random normal rows).
double round_trip_tolerance(DType t) {
  switch (t) {
    case DType::F32: return 1e-7;
    case DType::F16: return 1e-3;
    case DType::Q8_0: return 0.01;
    case DType::Q6_K: return 0.05;
    case DType::Q5_0: case DType::Q5_1: case DType::Q5_K: return 0.08;
    case DType::Q4_0: case DType::Q4_1: case DType::Q4_K: case DType::IQ4_NL: case DType::IQ4_XS: return 0.15;
    case DType::MXFP4: return 0.25;
    case DType::Q3_K: return 0.3;
    case DType::Q2_K: return 0.5;
    default: return 0;
  }
}

std::vector<DType> weight_types() {
  std::vector<DType> v;
  for (const DTypeInfo& i : kDTypeInfo) {
    if (i.weight) v.push_back(i.type);
  }
  return v;
}

constexpr int64_t kCols = 1024;  // four super-blocks

class QuantType : public ::testing::TestWithParam<DType> {};

TEST_P(QuantType, QuantizeThenDequantizeIsWithinTheTypesPrecision) {
  const DType t = GetParam();
  for (float scale : {1.0f, 1e-3f, 40.0f}) {
    const auto x = random_vec(kCols, 7, scale);
    const auto y = dequantize(t, quantize(t, x), kCols);
    double err = 0, ref = 0;
    for (int64_t i = 0; i < kCols; ++i) {
      err += (x[i] - y[i]) * (x[i] - y[i]);
      ref += x[i] * x[i];
    }
    EXPECT_LE(std::sqrt(err / ref), round_trip_tolerance(t)) << dtype_name(t) << " scale " << scale;
  }
  // An all-zero row stays zero.
  const auto z = dequantize(t, quantize(t, std::vector<float>(kCols, 0.0f)), kCols);
  for (float v : z) ASSERT_EQ(v, 0.0f) << dtype_name(t);
}

TEST_P(QuantType, ReferenceDotEqualsTheDotOfDequantizedRows) {
  const DType t = GetParam();
  const DType act = dtype_info(t).act;
  const auto w = random_vec(kCols, 11), x = random_vec(kCols, 12);
  const auto wq = quantize(t, w);
  std::vector<uint8_t> xq(static_cast<size_t>(act == DType::F32 ? kCols * 4 : dtype_row_bytes(act, kCols)));
  if (act == DType::F32) std::memcpy(xq.data(), x.data(), xq.size());
  else type_traits(act).from_float(x.data(), xq.data(), kCols);
  const auto wd = dequantize(t, wq, kCols);
  const auto xd = act == DType::F32 ? x : dequantize(act, xq, kCols);
  double want = 0, mag = 0;
  for (int64_t i = 0; i < kCols; ++i) {
    want += static_cast<double>(wd[i]) * xd[i];
    mag += std::fabs(static_cast<double>(wd[i]) * xd[i]);
  }
  const float got = type_traits(t).dot[0](wq.data(), xq.data(), kCols);
  // Q8_1 carries each block's sum as an fp16 (d * sum(q)), as GGML does: the min term is rounded to 2^-11.
  const double tol = act == DType::Q8_1 ? 1e-3 * mag : 1e-5 * mag + 1e-6;
  EXPECT_NEAR(got, want, tol) << dtype_name(t);
}

TEST_P(QuantType, EveryIsaMatchesTheReferenceDot) {
  const DType t = GetParam();
  const DType act = dtype_info(t).act;
  for (int64_t n : {kCols, dtype_block_elems(t) == 1 ? int64_t{40} : dtype_block_elems(t)}) {
    const auto w = random_vec(n, 21), x = random_vec(n, 22, 3.0f);
    const auto wq = quantize(t, w);
    std::vector<uint8_t> xq(static_cast<size_t>(act == DType::F32 ? n * 4 : dtype_row_bytes(act, n)));
    if (act == DType::F32) std::memcpy(xq.data(), x.data(), xq.size());
    else type_traits(act).from_float(x.data(), xq.data(), n);
    double mag = 0;
    const auto wd = dequantize(t, wq, n);
    for (int64_t i = 0; i < n; ++i) mag += std::fabs(wd[i] * x[i]);
    const float ref = type_traits(t).dot[0](wq.data(), xq.data(), n);
    for (Isa isa : {Isa::Avx2, Isa::Avx512}) {
      if (static_cast<int>(isa) > static_cast<int>(detected_isa())) continue;
      const float got = type_traits(t).dot[static_cast<int>(isa)](wq.data(), xq.data(), n);
      EXPECT_NEAR(got, ref, 2e-5 * mag + 1e-6) << dtype_name(t) << " " << isa_name(isa) << " n=" << n;
    }
  }
}

TEST_P(QuantType, MatmulIsBatchInvariantAndMatchesTheReferencePerIsa) {
  const DType t = GetParam();
  constexpr int64_t rows = 37, T = 5;
  const auto wf = random_vec(rows * kCols, 31);
  const auto wq = quantize(t, wf);
  const WeightView w{t, rows, kCols, wq.data()};
  const auto x = random_vec(T * kCols, 32);
  ThreadPool pool(2);
  std::vector<float> ref(rows * T);
  matmul(w, x.data(), T, ref.data(), nullptr, Isa::Scalar);
  for (Isa isa : {Isa::Scalar, Isa::Avx2, Isa::Avx512}) {
    if (static_cast<int>(isa) > static_cast<int>(detected_isa())) continue;
    std::vector<float> batched(rows * T), single(rows);
    matmul(w, x.data(), T, batched.data(), &pool, isa);
    for (int64_t tok = 0; tok < T; ++tok) {
      matmul(w, x.data() + tok * kCols, 1, single.data(), nullptr, isa);
      for (int64_t r = 0; r < rows; ++r) {
        ASSERT_EQ(batched[tok * rows + r], single[r]) << dtype_name(t) << " " << isa_name(isa) << " token " << tok;
        EXPECT_NEAR(batched[tok * rows + r], ref[tok * rows + r], 1e-3f + 1e-4f * std::fabs(ref[tok * rows + r]))
            << dtype_name(t) << " " << isa_name(isa);
      }
    }
  }
}

TEST(TypeTraits, EveryRowIsCompleteAndGgmlIdsAreUnique) {
  std::set<int32_t> ids;
  for (int i = 0; i < kNumDTypes; ++i) {
    const TypeTraits& t = type_traits(static_cast<DType>(i));
    EXPECT_NE(t.to_float, nullptr) << t.info->name;
    if (t.info->ggml_id >= 0) {  // -1: none
      EXPECT_TRUE(ids.insert(t.info->ggml_id).second) << t.info->name;
    }
    if (t.info->weight) {
      EXPECT_NE(t.from_float, nullptr) << t.info->name;
      for (int isa = 0; isa < kNumIsa; ++isa) EXPECT_NE(t.dot[isa], nullptr) << t.info->name;
    }
  }
}

std::string type_name(const ::testing::TestParamInfo<DType>& info) { return std::string(dtype_name(info.param)); }

INSTANTIATE_TEST_SUITE_P(AllWeightTypes, QuantType, ::testing::ValuesIn(weight_types()), type_name);

}  // namespace
}  // namespace slimkv
