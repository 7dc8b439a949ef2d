// The tile kernels' scalar reference and shared helpers (attention_tile.h): plain loops, one row at a time.
#include "kernels/attention_tile.h"

#include <algorithm>
#include <cmath>
#include <vector>

#include "kernels/kv_codec.h"

namespace slimkv {

int64_t tile_scratch_floats(int32_t k_dim, int32_t v_dim, int32_t block_size) {
  const int64_t n = kv_tile_rows(block_size);
  // keys transposed [k_dim, n], values [n, v_dim], scores / probabilities [kMaxTileQueryRows, n], per-row factors.
  return static_cast<int64_t>(k_dim) * n + n * v_dim + static_cast<int64_t>(kMaxTileQueryRows) * n +
         2 * kMaxTileQueryRows + 64;
}

void tile_state_reset(TileState& st, int32_t num_rows, int32_t v_dim) {
  for (int32_t r = 0; r < num_rows; ++r) {
    st.m[r] = -INFINITY;
    st.l[r] = 0.0f;
    std::fill(st.acc + r * st.acc_stride, st.acc + r * st.acc_stride + v_dim, 0.0f);
  }
}

void attend_tile_ref(const AttendTile& tile, const PagedKv& kv, int64_t begin, int64_t end, float scale,
                     TileState& st) {
  const int64_t n = kv_tile_rows(kv.block_size);
  std::vector<float> key(kv.k_dim), val(kv.v_dim), s(n);
  for (int32_t r = 0; r < tile.num_rows; ++r) {
    const float* q = tile.q + r * tile.q_stride;
    float* acc = st.acc + r * st.acc_stride;
    const int64_t sink = tile.sink ? tile.sink[r] : 0;
    auto visible = [&](int64_t p) { return p >= begin && p < end && (p < sink || (p >= tile.lo[r] && p < tile.hi[r])); };
    for (int64_t a = begin / n * n; a < end; a += n) {
      bool any = false;
      float mx = st.m[r];
      for (int64_t j = 0; j < n; ++j) {
        if (!visible(a + j)) continue;
        decode_kv_record(kv.k_row(a + j), kv.k_dim, kv.k_split, kv.dtype, key.data());
        float d = 0;
        for (int32_t i = 0; i < kv.k_dim; ++i) d += q[i] * key[i];
        s[j] = d * scale;
        mx = std::max(mx, s[j]);
        any = true;
      }
      if (!any) continue;
      const float alpha = std::exp(st.m[r] - mx);  // exp(-inf) = 0 for a row's first kv tile
      st.l[r] *= alpha;
      for (int32_t i = 0; i < kv.v_dim; ++i) acc[i] *= alpha;
      for (int64_t j = 0; j < n; ++j) {
        if (!visible(a + j)) continue;
        const float e = std::exp(s[j] - mx);
        st.l[r] += e;
        decode_kv_head(kv.v_row(a + j), kv.v_dim, kv.value_dtype(), val.data());
        for (int32_t i = 0; i < kv.v_dim; ++i) acc[i] += e * val[i];
      }
      st.m[r] = mx;
    }
  }
}

}  // namespace slimkv
