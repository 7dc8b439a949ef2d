// PagedAttention::run with per-layer dims: query/key heads of 16 values and value heads of 8 (K and V head sizes
// differ, as DeepSeek's and some others'), GQA 4/2, an explicit softmax scale, two sequences in one batch over
// scattered pages — against a plain double-precision softmax attention.
#include <gtest/gtest.h>

#include <cmath>
#include <random>

#include "kernels/paged_attention.h"

namespace slimkv {
namespace {

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
      const int32_t s = m.token_seq[t];
      for (int32_t h = 0; h < H; ++h) {
        const int32_t kvh = h / (H / KVH);
        std::vector<double> p(m.token_pos[t] + 1);
        double mx = -1e300, z = 0;
        for (int32_t j = 0; j <= m.token_pos[t]; ++j) {
          const int64_t slot = static_cast<int64_t>(m.kv_indices[m.kv_indptr[s] + j / bs]) * bs + j % bs;
          const float* kr = k.data() + (static_cast<int64_t>(kvh) * slots + slot) * DK;
          double d = 0;
          for (int32_t i = 0; i < DK; ++i) d += double(q[(static_cast<size_t>(t) * H + h) * DK + i]) * kr[i];
          mx = std::max(mx, p[j] = d * scale);
        }
        for (auto& x : p) z += (x = std::exp(x - mx));
        for (int32_t i = 0; i < DV; ++i) {
          double o = 0;
          for (int32_t j = 0; j <= m.token_pos[t]; ++j) {
            const int64_t slot = static_cast<int64_t>(m.kv_indices[m.kv_indptr[s] + j / bs]) * bs + j % bs;
            o += p[j] / z * v[(static_cast<int64_t>(kvh) * slots + slot) * DV + i];
          }
          ASSERT_NEAR(out[(static_cast<size_t>(t) * H + h) * DV + i], o, 1e-5) << "isa " << static_cast<int>(isa);
        }
      }
    }
  }
}

}  // namespace
}  // namespace slimkv
