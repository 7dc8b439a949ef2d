#include "kernels/row_select.h"

#include <algorithm>
#include <cmath>
#include <cstring>

#include "kernels/index_page.h"
#include "kernels/kv_codec.h"

namespace slimkv {

int64_t select_budget(int64_t num_ctx, int32_t topk_tokens, double fraction, int32_t sink_tokens,
                      int32_t window_tokens) {
  int64_t b = fraction > 0 ? static_cast<int64_t>(std::ceil(fraction * static_cast<double>(num_ctx)))
              : topk_tokens > 0 ? topk_tokens
                                : num_ctx;
  b = std::max<int64_t>(b, static_cast<int64_t>(sink_tokens) + window_tokens);
  return std::min(b, num_ctx);
}

namespace {

// A float's order as an unsigned key: larger floats, larger keys (NaN never occurs: scores are finite).
inline uint32_t order_key(float f) {
  uint32_t u;
  std::memcpy(&u, &f, 4);
  return (u & 0x80000000u) ? ~u : (u | 0x80000000u);
}

// The key of the take-th largest of keys[0, n) (take in 1..n), by three passes of a radix histogram (11, 11, 10
// bits), and how many keys equal to it belong to the take largest.
uint32_t kth_largest_key(const uint32_t* keys, int64_t n, int64_t take, int64_t* equal_needed) {
  uint32_t prefix = 0, mask = 0;
  int64_t above = 0;  // keys known to be larger than every key matching the prefix
  for (int pass = 0; pass < 3; ++pass) {
    const int shift = pass == 0 ? 21 : pass == 1 ? 10 : 0, bits = pass == 2 ? 10 : 11;
    int64_t count[2048] = {};
    for (int64_t i = 0; i < n; ++i) {
      if ((keys[i] & mask) == prefix) ++count[(keys[i] >> shift) & ((1u << bits) - 1)];
    }
    int64_t b = (1 << bits) - 1;
    while (above + count[b] < take) above += count[b--];
    prefix |= static_cast<uint32_t>(b) << shift;
    mask |= ((1u << bits) - 1) << shift;
  }
  *equal_needed = take - above;
  return prefix;
}

}  // namespace

int64_t pick_rows(const float* scores, int64_t num_ctx, int64_t sinks, int64_t window_begin, int64_t budget,
                  int32_t* rows, int32_t* order) {
  const RowChoice c(num_ctx, sinks, window_begin, budget);
  int64_t n = append_rows(rows, 0, 0, c.sinks);
  if (c.all()) {
    n = append_rows(rows, n, c.sinks, c.window_begin);
  } else if (c.take > 0) {
    // The take highest scores, ties to the earlier row, in position order: a radix select of the threshold, then
    // one pass in order (every row above it, and the first rows equal to it).
    uint32_t* keys = reinterpret_cast<uint32_t*>(order);
    for (int64_t j = 0; j < c.between; ++j) keys[j] = order_key(scores[c.sinks + j]);
    int64_t equal_needed = 0;
    const uint32_t t = kth_largest_key(keys, c.between, c.take, &equal_needed);
    for (int64_t j = 0; j < c.between; ++j) {
      if (keys[j] > t || (keys[j] == t && equal_needed-- > 0)) rows[n++] = static_cast<int32_t>(c.sinks + j);
    }
  }
  return append_rows(rows, n, c.window_begin, num_ctx);
}

int64_t pick_rows_by_mass(const float* probs, int64_t num_ctx, int64_t sinks, int64_t window_begin, double mass,
                          int64_t max_budget, int32_t* rows, int32_t* order) {
  sinks = std::min(sinks, num_ctx);
  window_begin = std::clamp(window_begin, sinks, num_ctx);
  const int64_t between = window_begin - sinks, fixed = num_ctx - between;
  double have = 0;
  for (int64_t j = 0; j < num_ctx; ++j) {
    if (j < sinks || j >= window_begin) have += probs[j];
  }
  for (int64_t j = 0; j < between; ++j) order[j] = static_cast<int32_t>(sinks + j);
  auto better = [probs](int32_t a, int32_t b) { return probs[a] > probs[b] || (probs[a] == probs[b] && a < b); };
  std::sort(order, order + between, better);
  const int64_t cap = std::clamp<int64_t>(max_budget - fixed, 0, between);
  int64_t take = 0;
  while (take < cap && have < mass) have += probs[order[take++]];
  std::sort(order, order + take);
  int64_t n = 0;
  for (int64_t j = 0; j < sinks; ++j) rows[n++] = static_cast<int32_t>(j);
  for (int64_t j = 0; j < take; ++j) rows[n++] = order[j];
  for (int64_t j = window_begin; j < num_ctx; ++j) rows[n++] = static_cast<int32_t>(j);
  return n;
}

void combine_heads(const float* scores, int32_t num_q, int64_t s_stride, int64_t begin, int64_t end, float scale,
                   bool mean, float* out) {
  if (!mean) {  // a ranking: each head's logits against its own best row, the largest over heads (no exponentials)
    for (int64_t j = begin; j < end; ++j) out[j] = -INFINITY;
    for (int32_t h = 0; h < num_q; ++h) {
      const float* s = scores + h * s_stride;
      float top = -INFINITY;
      for (int64_t j = begin; j < end; ++j) top = std::max(top, s[j]);
      for (int64_t j = begin; j < end; ++j) out[j] = std::max(out[j], scale * (s[j] - top));
    }
    return;
  }
  for (int64_t j = begin; j < end; ++j) out[j] = 0;
  for (int32_t h = 0; h < num_q; ++h) {
    const float* s = scores + h * s_stride;
    float top = -INFINITY;
    for (int64_t j = begin; j < end; ++j) top = std::max(top, s[j]);
    double z = 0;
    for (int64_t j = begin; j < end; ++j) z += std::exp(static_cast<double>(scale) * (s[j] - top));
    const double inv = 1.0 / z;
    for (int64_t j = begin; j < end; ++j) {
      out[j] += static_cast<float>(std::exp(static_cast<double>(scale) * (s[j] - top)) * inv) / static_cast<float>(num_q);
    }
  }
}

void score_sketch_rows(const float* q_lat, int32_t num_q, int32_t rank, const PagedKv& index, int64_t begin,
                       int64_t end, float* scores, int64_t s_stride) {
  float x[256];      // one decoded sketch (rank <= 256: validated by the config)
  uint8_t rec[258];  // its record, gathered from the page's columns
  for (int64_t j = begin; j < end; ++j) {
    int32_t row = 0;
    const uint8_t* page = index.k_page(j, &row);
    load_index_record(page, index.block_size, index.k_row_bytes, row, rec);
    decode_kv_record(rec, rank, 0, index.dtype, x);
    for (int32_t h = 0; h < num_q; ++h) {
      const float* q = q_lat + static_cast<int64_t>(h) * rank;
      float s = 0;
      for (int32_t r = 0; r < rank; ++r) s += q[r] * x[r];
      scores[h * s_stride + j] = s;
    }
  }
}

void score_key_rows(const float* q, int32_t num_q, int64_t q_stride, const PagedKv& kv, int64_t begin, int64_t end,
                    float* scores, int64_t s_stride) {
  float key[1024];
  for (int64_t j = begin; j < end; ++j) {
    decode_kv_record(kv.k_row(j), kv.k_dim, kv.k_split, kv.dtype, key);
    for (int32_t h = 0; h < num_q; ++h) {
      const float* qh = q + h * q_stride;
      float s = 0;
      for (int32_t d = 0; d < kv.k_dim; ++d) s += qh[d] * key[d];
      scores[h * s_stride + j] = s;
    }
  }
}

void score_page_bounds(const float* q, int32_t num_q, int64_t q_stride, const PagedKv& kv, int64_t begin, int64_t end,
                       float* scores, int64_t s_stride) {
  const int32_t bs = kv.block_size, kd = kv.k_dim;
  float key[1024], lo[1024], hi[1024];
  for (int64_t p0 = begin; p0 < end;) {
    const int64_t p1 = std::min(end, (p0 / bs + 1) * bs);  // the rest of p0's page within [begin, end)
    std::fill(lo, lo + kd, INFINITY);
    std::fill(hi, hi + kd, -INFINITY);
    for (int64_t j = p0; j < p1; ++j) {
      decode_kv_record(kv.k_row(j), kd, kv.k_split, kv.dtype, key);
      for (int32_t d = 0; d < kd; ++d) lo[d] = std::min(lo[d], key[d]), hi[d] = std::max(hi[d], key[d]);
    }
    for (int32_t h = 0; h < num_q; ++h) {
      const float* qh = q + h * q_stride;
      float ub = 0;
      for (int32_t d = 0; d < kd; ++d) ub += std::max(qh[d] * lo[d], qh[d] * hi[d]);
      for (int64_t j = p0; j < p1; ++j) scores[h * s_stride + j] = ub;
    }
    p0 = p1;
  }
}

}  // namespace slimkv
