// Load-time repacking packs only what a panel kernel will take: Q8_0 rows of an odd number of blocks (stories15M's
// 288 columns: 9) stay row-major for the AVX-512 row kernels — packed, the VNNI panel kernel refuses them and the
// scalar reference runs (that made llama-15m Q8_0 decode 67 tokens/s against llama.cpp's 675) — while even ones
// are packed; and both compute the product of the rows they hold.
#include <gtest/gtest.h>

#include <cmath>

#include "kernels/matmul.h"
#include "model/synthetic_model.h"

namespace slimkv::test {
namespace {

TEST(WeightPacking, OddBlockQuantRowsStayRowMajorEvenOnesArePacked) {
  if (active_isa() != Isa::Avx512) GTEST_SKIP() << "panels are packed on AVX-512 machines only";
  auto m = make_synthetic_model("llama-15m", DType::Q8_0);
  const LayerWeights& l = m->layers[0];
  EXPECT_EQ(l.wq.cols / 32 % 2, 1);  // 288 columns
  EXPECT_FALSE(l.wq.panel);
  EXPECT_EQ(l.w2.cols / 32 % 2, 0);  // 768 columns
  EXPECT_TRUE(l.w2.panel);
  for (const WeightView* w : {&l.wq, &l.w2}) {
    std::vector<float> x(w->cols), y(w->rows), row(w->cols);
    for (int64_t i = 0; i < w->cols; ++i) x[i] = std::sin(0.1f * static_cast<float>(i));
    matmul(*w, x.data(), 1, y.data(), nullptr);
    for (int64_t r : {int64_t{0}, w->rows - 1}) {
      dequantize_row(*w, r, row.data());
      double d = 0;
      for (int64_t k = 0; k < w->cols; ++k) d += double(row[k]) * x[k];
      EXPECT_NEAR(y[r], d, 0.02 + 0.01 * std::fabs(d)) << "cols " << w->cols << " row " << r;  // Q8_0 activations
    }
  }
}

}  // namespace
}  // namespace slimkv::test
