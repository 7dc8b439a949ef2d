// Select mode's sketch scores in AVX-512 VNNI over index pages stored by columns (index_page.h): a chunk of up to 16
// rows of one page is one vector per 4-byte code column, scored against a query head by VPDPBUSD (unsigned codes x
// signed query bytes: the query on kv_codec.h's 12-bit grid split as 128 x hi + lo, so the integer dot product is
// exact — the one the row-wise attention kernels compute), then scaled once by the rows' fp16 scales x the grid
// step. Reference: row_select.h's score_sketch_rows (float decode: equal to 1e-5 relative, tested).
#include <immintrin.h>

#include <algorithm>
#include <cmath>
#include <cstdint>

#include "kernels/dot.h"
#include "kernels/index_page.h"
#include "kernels/kv_codec.h"

namespace slimkv {
namespace {

constexpr int32_t kMaxColumns = 64;  // rank 256 at int8

// One query head as VPDPBUSD operands: per code column, 4 signed query bytes packed in a dword — the grid
// integer's high part (q >> 7) and low part (q & 127); int4 columns twice, for the low nibbles (even dims) and the
// high nibbles (odd dims).
struct SketchQuery {
  int32_t hi[2][kMaxColumns], lo[2][kMaxColumns];  // [nibble half][column]
  int32_t offset = 0;  // the codes' bias times the query's sum, negated: int8 codes read +128, int4 nibbles +8
  float step = 0;      // the grid step
};

inline uint32_t pack_byte(int32_t v, int k) { return static_cast<uint32_t>(static_cast<uint8_t>(v)) << (8 * k); }

// As the attention kernels' int_query: the same grid, step and integers.
void make_query(const float* q, int32_t rank, bool int4, SketchQuery* out) {
  float amax = 0;
  for (int32_t i = 0; i < rank; ++i) amax = std::max(amax, std::fabs(q[i]));
  const float id = amax > 0 ? static_cast<float>(kQueryGridMax) / amax : 0.0f;
  int32_t qi[256];
  int32_t sum = 0;
  for (int32_t i = 0; i < rank; ++i) sum += qi[i] = static_cast<int32_t>(std::nearbyint(q[i] * id));
  out->step = amax / static_cast<float>(kQueryGridMax);
  out->offset = -(int4 ? 8 : 128) * sum;
  const int32_t columns = int4 ? rank / 8 : rank / 4;
  for (int32_t c = 0; c < columns; ++c) {
    for (int half = 0; half < (int4 ? 2 : 1); ++half) {
      uint32_t hi = 0, lo = 0;
      for (int k = 0; k < 4; ++k) {  // byte k of the column: dim 4c + k (int8); 8c + 2k + half (int4)
        const int32_t v = qi[int4 ? 8 * c + 2 * k + half : 4 * c + k];
        hi |= pack_byte(v >> 7, k);  // floor(v / 128) in [-32, 31]
        lo |= pack_byte(v & 127, k);
      }
      out->hi[half][c] = static_cast<int32_t>(hi);
      out->lo[half][c] = static_cast<int32_t>(lo);
    }
  }
}

// Up to 16 rows' codes of column c as one vector (lane i: row i's 4 code bytes) and their fp16 scales, from one
// page (block_size >= 16: rows [r0, r0 + 16) of it) or two (block_size 8: all of each). Plain loads where every lane
// is wanted: on Zen 5 a masked load missing L1 cost 4x a plain one here (3.0 vs 0.8 ms a 16K x 64 scan).
struct Rows16 {
  const uint8_t* page[2];  // page[1]: the second page of 8 rows, or null
  int32_t bs, r0;
  __mmask16 m;             // the lanes in [begin, end)
  __m512i column(int32_t c) const {
    const int64_t off = 2 * static_cast<int64_t>(bs) + 4 * static_cast<int64_t>(bs) * c + 4 * static_cast<int64_t>(r0);
    if (page[1] == nullptr) {
      return m == 0xFFFF ? _mm512_loadu_si512(page[0] + off) : _mm512_maskz_loadu_epi32(m, page[0] + off);
    }
    if (m == 0xFFFF) {
      const __m256i a = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(page[0] + off));
      const __m256i b = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(page[1] + off));
      return _mm512_inserti64x4(_mm512_castsi256_si512(a), b, 1);
    }
    const __m256i a = _mm256_maskz_loadu_epi32(static_cast<__mmask8>(m), page[0] + off);
    const __m256i b = _mm256_maskz_loadu_epi32(static_cast<__mmask8>(m >> 8), page[1] + off);
    return _mm512_inserti64x4(_mm512_castsi256_si512(a), b, 1);
  }
  __m512 scales() const {
    const uint8_t* p0 = page[0] + 2 * static_cast<int64_t>(r0);
    if (page[1] == nullptr) {
      return _mm512_cvtph_ps(m == 0xFFFF ? _mm256_loadu_si256(reinterpret_cast<const __m256i*>(p0))
                                         : _mm256_maskz_loadu_epi16(m, p0));
    }
    const __m128i a = m == 0xFFFF ? _mm_loadu_si128(reinterpret_cast<const __m128i*>(page[0]))
                                  : _mm_maskz_loadu_epi16(static_cast<__mmask8>(m), page[0]);
    const __m128i b = m == 0xFFFF ? _mm_loadu_si128(reinterpret_cast<const __m128i*>(page[1]))
                                  : _mm_maskz_loadu_epi16(static_cast<__mmask8>(m >> 8), page[1]);
    return _mm512_cvtph_ps(_mm256_inserti128_si256(_mm256_castsi128_si256(a), b, 1));
  }
};

// The chunk's scores for HQ heads: out[h][i] = the head's score of the chunk's row i (lanes of m only).
template <bool kInt4, int HQ>
void score_chunk(const Rows16& rows, int32_t columns, const SketchQuery* q, float* const* out) {
  __m512i ah[HQ], al[HQ];
#pragma GCC unroll 4
  for (int h = 0; h < HQ; ++h) ah[h] = al[h] = _mm512_setzero_si512();
  for (int32_t c = 0; c < columns; ++c) {
    const __m512i v = rows.column(c);
    if constexpr (kInt4) {
      const __m512i low4 = _mm512_set1_epi8(0x0F);
      const __m512i even = _mm512_and_si512(v, low4), odd = _mm512_and_si512(_mm512_srli_epi16(v, 4), low4);
#pragma GCC unroll 4
      for (int h = 0; h < HQ; ++h) {
        ah[h] = _mm512_dpbusd_epi32(_mm512_dpbusd_epi32(ah[h], even, _mm512_set1_epi32(q[h].hi[0][c])), odd,
                                    _mm512_set1_epi32(q[h].hi[1][c]));
        al[h] = _mm512_dpbusd_epi32(_mm512_dpbusd_epi32(al[h], even, _mm512_set1_epi32(q[h].lo[0][c])), odd,
                                    _mm512_set1_epi32(q[h].lo[1][c]));
      }
    } else {
      const __m512i u = _mm512_xor_si512(v, _mm512_set1_epi8(static_cast<char>(0x80)));  // int8 + 128
#pragma GCC unroll 4
      for (int h = 0; h < HQ; ++h) {
        ah[h] = _mm512_dpbusd_epi32(ah[h], u, _mm512_set1_epi32(q[h].hi[0][c]));
        al[h] = _mm512_dpbusd_epi32(al[h], u, _mm512_set1_epi32(q[h].lo[0][c]));
      }
    }
  }
  const __m512 scale = rows.scales();
#pragma GCC unroll 4
  for (int h = 0; h < HQ; ++h) {
    const __m512i dot = _mm512_add_epi32(_mm512_add_epi32(_mm512_slli_epi32(ah[h], 7), al[h]),
                                         _mm512_set1_epi32(q[h].offset));
    const __m512 d = _mm512_mul_ps(scale, _mm512_set1_ps(q[h].step));  // as the row kernels: scale x step first
    _mm512_mask_storeu_ps(out[h], rows.m, _mm512_mul_ps(_mm512_cvtepi32_ps(dot), d));
  }
}

inline __mmask16 lanes(int64_t from, int64_t to) {  // bits [from, to) of 16 (0 <= from <= to <= 16)
  return static_cast<__mmask16>(((1u << to) - 1) & ~((1u << from) - 1));
}

// Rows [begin, end) for HQ heads: chunks of 16 rows aligned to 16 positions (block_size 8: two pages a chunk;
// >= 16: a part of one), or, for smaller pages, one page's rows at a time. (No software prefetch: 256 rows ahead
// changed a 64 x 16K scan by less than run-to-run noise, pages in order or shuffled.)
template <bool kInt4, int HQ>
void score_rows_of_heads(const SketchQuery* q, int32_t columns, const PagedKv& index, int64_t begin, int64_t end,
                         float* scores, int64_t s_stride) {
  const int32_t bs = index.block_size;
  const bool wide = bs % 16 == 0 || bs == 8;
  for (int64_t t = begin; t < end;) {
    Rows16 rows;
    rows.bs = bs;
    int64_t t0 = t, next = 0;
    if (wide) {
      t0 = t & ~int64_t{15};
      next = std::min(end, t0 + 16);
      rows.m = lanes(t - t0, next - t0);
      int32_t r0 = 0;
      rows.page[0] = index.k_page(t0, &r0);
      rows.r0 = r0;
      rows.page[1] = nullptr;
      if (bs == 8) rows.page[1] = next > t0 + 8 ? index.k_page(t0 + 8, &r0) : rows.page[0];  // else masked off
    } else {
      int32_t r0 = 0;
      rows.page[0] = index.k_page(t, &r0);
      rows.page[1] = nullptr;
      rows.r0 = r0;
      next = std::min<int64_t>(end, t + std::min<int64_t>(16, bs - r0));
      rows.m = lanes(0, next - t);
    }
    float* out[HQ];
    for (int32_t h = 0; h < HQ; ++h) out[h] = scores + h * s_stride + (wide ? t0 : t);
    score_chunk<kInt4, HQ>(rows, columns, q, out);
    t = next;
  }
}

template <bool kInt4>
void score_pages(const SketchQuery* q, int32_t num_q, int32_t columns, const PagedKv& index, int64_t begin,
                 int64_t end, float* scores, int64_t s_stride) {
  for (int32_t h0 = 0; h0 < num_q; h0 += 4) {  // heads four at a time (their accumulators in registers)
    const SketchQuery* qh = q + h0;
    float* sh = scores + h0 * s_stride;
    switch (std::min(4, num_q - h0)) {
      case 1: score_rows_of_heads<kInt4, 1>(qh, columns, index, begin, end, sh, s_stride); break;
      case 2: score_rows_of_heads<kInt4, 2>(qh, columns, index, begin, end, sh, s_stride); break;
      case 3: score_rows_of_heads<kInt4, 3>(qh, columns, index, begin, end, sh, s_stride); break;
      default: score_rows_of_heads<kInt4, 4>(qh, columns, index, begin, end, sh, s_stride); break;
    }
  }
}

}  // namespace

bool score_index_avx512(const float* q_lat, int32_t num_q, int32_t rank, const PagedKv& index, int64_t begin,
                        int64_t end, float* scores, int64_t s_stride) {
  const bool int4 = index.dtype == KvDtype::Int4;
  if ((!int4 && index.dtype != KvDtype::Int8) || rank < 1 || rank > 256 || num_q < 1 || num_q > kMaxAttendGroup) {
    return false;
  }
  const int64_t codes = index.k_row_bytes - 2;
  if (codes % kIndexColumnBytes != 0 || codes != (int4 ? rank / 2 : rank)) return false;  // (int4: rank % 8 == 0)
  SketchQuery q[kMaxAttendGroup];  // [num_q]
  for (int32_t h = 0; h < num_q; ++h) make_query(q_lat + static_cast<int64_t>(h) * rank, rank, int4, &q[h]);
  const int32_t columns = static_cast<int32_t>(codes / kIndexColumnBytes);
  if (int4) {
    score_pages<true>(q, num_q, columns, index, begin, end, scores, s_stride);
  } else {
    score_pages<false>(q, num_q, columns, index, begin, end, scores, s_stride);
  }
  return true;
}

}  // namespace slimkv
