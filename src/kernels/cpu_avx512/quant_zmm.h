// 512-bit block kernels for the super-block types people run most (Q4_K, Q5_K, Q6_K, IQ4_XS): the same scheme as
// cpu_avx2/quant_dot_impl.h (a block kernel K — unpack a 64-value chunk, integer products, the block's float scale
// and min term — tiled R rows x TT tokens, the dot product being the 1 x 1 tile, so batched == single bit for bit),
// with twice the values per instruction. Sub-block scales are spread over the chunk's 16-bit lanes by one permute.
// Include only inside an anonymous namespace of cpu_avx512/quant_dot_avx512.cpp, after quant_dot_impl.h.

inline __m512i load64(const void* p) { return _mm512_loadu_si512(p); }
inline __m512i join(__m256i lo, __m256i hi) { return _mm512_inserti64x4(_mm512_castsi256_si512(lo), hi, 1); }

// 16-bit lane index vectors for _mm512_permutexvar_epi16: kSpread2[j] puts scale 2j on lanes 0..15 and 2j + 1 on
// 16..31 (K45, IQ4_XS: two 32-value sub-blocks per chunk); kSpread4[c] puts scale 4c + k on lanes [8k, 8k + 8)
// (Q6_K: four 16-value sub-blocks per chunk).
struct SpreadTables {
  alignas(64) int16_t two[4][32];
  alignas(64) int16_t four[4][32];
};
constexpr SpreadTables make_spread() {
  SpreadTables t{};
  for (int c = 0; c < 4; ++c) {
    for (int i = 0; i < 32; ++i) {
      t.two[c][i] = static_cast<int16_t>(2 * c + i / 16);
      t.four[c][i] = static_cast<int16_t>(4 * c + i / 8);
    }
  }
  return t;
}
alignas(64) constexpr SpreadTables kSpread = make_spread();
inline __m512i spread2(int c) { return _mm512_load_si512(kSpread.two[c]); }
inline __m512i spread4(int c) { return _mm512_load_si512(kSpread.four[c]); }

template <bool kFive>
struct ZQ45_K {
  using W = std::conditional_t<kFive, slimkv::Q5_KBlock, slimkv::Q4_KBlock>;
  using X = slimkv::Q8_KBlock;
  static constexpr int kChunks = 4, kBlock = 256;
  static constexpr bool kMin = true;
  struct Prep {
    uint8_t sm[16];
    __m512i scales;  // 8 scales as 16-bit lanes 0..7
  };
  static Prep prep(const W& w) {
    Prep p;
    k4_unpack(w.scales, p.sm);
    p.scales = _mm512_castsi256_si512(_mm256_cvtepu8_epi16(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p.sm))));
    return p;
  }
  static __m512i chunk(const W& w, const Prep&, int j) {
    const __m256i q = load32(w.qs + 32 * j), m4 = _mm256_set1_epi8(0x0F);
    __m256i lo = _mm256_and_si256(q, m4), hi = _mm256_and_si256(_mm256_srli_epi16(q, 4), m4);
    if constexpr (kFive) {
      const __m256i hb = load32(w.qh), one = _mm256_set1_epi8(1);
      lo = _mm256_or_si256(lo, _mm256_slli_epi16(_mm256_and_si256(_mm256_srli_epi16(hb, 2 * j), one), 4));
      hi = _mm256_or_si256(hi, _mm256_slli_epi16(_mm256_and_si256(_mm256_srli_epi16(hb, 2 * j + 1), one), 4));
    }
    return join(lo, hi);
  }
  static __m512i idot(__m512i v, __m512i y, const Prep& p, int j) {
    return _mm512_madd_epi16(_mm512_maddubs_epi16(v, y), _mm512_permutexvar_epi16(spread2(j), p.scales));
  }
  static float scale(const W& w, const X& x) { return x.d * h2f(w.d); }
  static float min_term(const W& w, const Prep& p, const X& x) {
    return x.d * h2f(w.dmin) * static_cast<float>(mins_dot(p.sm + 8, x.bsums));
  }
};

struct ZQ6_K : SuperBlockKernel<slimkv::Q6_KBlock> {
  static constexpr int kChunks = 4;  // 64-value chunks
  struct Prep {
    __m512i scales;  // 16 signed scales as 16-bit lanes 0..15
  };
  static Prep prep(const W& w) {
    return {_mm512_castsi256_si512(_mm256_cvtepi8_epi16(_mm_loadu_si128(reinterpret_cast<const __m128i*>(w.scales))))};
  }
  // Chunk c = values [64c, 64c + 64): half h = c / 2, the low (c even) or high nibbles of ql[64h, 64h + 64), with
  // qh[32h, 32h + 32) shifted by 0 / 2 (c even) or 4 / 6 for the two 32-value halves.
  static __m512i chunk(const W& w, const Prep&, int c) {
    const int h = c / 2, s = 4 * (c % 2);
    const __m512i ql = load64(w.ql + 64 * h);
    const __m512i lo = _mm512_and_si512(c % 2 ? _mm512_srli_epi16(ql, 4) : ql, _mm512_set1_epi8(0x0F));
    const __m256i qh = load32(w.qh + 32 * h), m3 = _mm256_set1_epi8(0x03);
    const __m512i hi = join(_mm256_and_si256(_mm256_srli_epi16(qh, s), m3), _mm256_and_si256(_mm256_srli_epi16(qh, s + 2), m3));
    return _mm512_or_si512(lo, _mm512_slli_epi16(hi, 4));  // value + 32, in [0, 63]
  }
  static __m512i idot(__m512i v, __m512i y, const Prep& p, int c) {
    const __m512i d = _mm512_sub_epi16(_mm512_maddubs_epi16(v, y), _mm512_maddubs_epi16(_mm512_set1_epi8(32), y));
    return _mm512_madd_epi16(d, _mm512_permutexvar_epi16(spread4(c), p.scales));
  }
};

struct ZIQ4_XS : SuperBlockKernel<slimkv::IQ4_XSBlock> {
  static constexpr int kChunks = 4;  // 64-value chunks
  struct Prep {
    __m512i scales;  // 8 signed sub-block scales as 16-bit lanes 0..7
  };
  static Prep prep(const W& w) {
    const __m128i ls = _mm_sub_epi16(_mm_cvtepu8_epi16(_mm_cvtsi64_si128(static_cast<long long>(iq4xs_scale_bytes(w)))),
                                     _mm_set1_epi16(32));
    return {_mm512_castsi128_si512(ls)};
  }
  static __m512i chunk(const W& w, const Prep&, int c) {
    const __m512i lut = _mm512_broadcast_i32x4(_mm_loadu_si128(reinterpret_cast<const __m128i*>(slimkv::kIq4nlValues)));
    return _mm512_shuffle_epi8(lut, join(nibbles(w.qs + 32 * c), nibbles(w.qs + 32 * c + 16)));
  }
  static __m512i idot(__m512i v, __m512i y, const Prep& p, int c) {
    const __m512i sy = _mm512_mask_sub_epi8(y, _mm512_movepi8_mask(v), _mm512_setzero_si512(), y);  // sign(y, v)
    const __m512i p16 = _mm512_maddubs_epi16(_mm512_abs_epi8(v), sy);
    return _mm512_madd_epi16(p16, _mm512_permutexvar_epi16(spread2(c), p.scales));
  }
};

template <class K, int R, int TT>
__attribute__((always_inline)) inline void ztile(const typename K::W* w, int64_t nb, const typename K::X* x, float* y,
                                                 int64_t ldy) {
  __m512 acc[R][TT];
  float accm[R][TT];
  _Pragma("GCC unroll 8") for (int r = 0; r < R; ++r) {
    _Pragma("GCC unroll 8") for (int t = 0; t < TT; ++t) {
      acc[r][t] = _mm512_setzero_ps();
      accm[r][t] = 0;
    }
  }
  for (int64_t i = 0; i < nb; ++i) {
    typename K::Prep p[R];
    _Pragma("GCC unroll 8") for (int r = 0; r < R; ++r) p[r] = K::prep(w[r * nb + i]);
    __m512i sumi[R][TT];
    _Pragma("GCC unroll 8") for (int r = 0; r < R; ++r) {
      _Pragma("GCC unroll 8") for (int t = 0; t < TT; ++t) sumi[r][t] = _mm512_setzero_si512();
    }
    _Pragma("GCC unroll 4") for (int c = 0; c < K::kChunks; ++c) {
      __m512i xv[TT];
      _Pragma("GCC unroll 8") for (int t = 0; t < TT; ++t) xv[t] = load64(x[t * nb + i].qs + 64 * c);
      _Pragma("GCC unroll 8") for (int r = 0; r < R; ++r) {
        const __m512i v = K::chunk(w[r * nb + i], p[r], c);
        _Pragma("GCC unroll 8") for (int t = 0; t < TT; ++t) {
          sumi[r][t] = _mm512_add_epi32(sumi[r][t], K::idot(v, xv[t], p[r], c));
        }
      }
    }
    _Pragma("GCC unroll 8") for (int r = 0; r < R; ++r) {
      _Pragma("GCC unroll 8") for (int t = 0; t < TT; ++t) {
        const typename K::W& wb = w[r * nb + i];
        const typename K::X& xb = x[t * nb + i];
        acc[r][t] = _mm512_fmadd_ps(_mm512_set1_ps(K::scale(wb, xb)), _mm512_cvtepi32_ps(sumi[r][t]), acc[r][t]);
        if constexpr (K::kMin) accm[r][t] += K::min_term(wb, p[r], xb);
      }
    }
  }
  _Pragma("GCC unroll 8") for (int r = 0; r < R; ++r) {
    _Pragma("GCC unroll 8") for (int t = 0; t < TT; ++t) y[t * ldy + r] = _mm512_reduce_add_ps(acc[r][t]) - accm[r][t];
  }
}

template <class K>
float zdot(const void* w, const void* x, int64_t n) {
  float y;
  ztile<K, 1, 1>(static_cast<const typename K::W*>(w), n / K::kBlock, static_cast<const typename K::X*>(x), &y, 1);
  return y;
}

template <class K>
void zgemm(const void* vw, int64_t rows, int64_t cols, const void* vx, int64_t T, float* y, int64_t ldy) {
  const auto* w = static_cast<const typename K::W*>(vw);
  const auto* x = static_cast<const typename K::X*>(vx);
  const int64_t nb = cols / K::kBlock;
  int64_t r = 0;
  if (T == 1) {  // decode: one row at a time, a single sequential stream (measured faster than 2, 4 or 8 in flight)
    for (; r < rows; ++r) ztile<K, 1, 1>(w + r * nb, nb, x, y + r, ldy);
    return;
  }
  for (; r < rows; ++r) {
    int64_t t = 0;
    for (; t + 8 <= T; t += 8) ztile<K, 1, 8>(w + r * nb, nb, x + t * nb, y + t * ldy + r, ldy);
    for (; t < T; ++t) ztile<K, 1, 1>(w + r * nb, nb, x + t * nb, y + t * ldy + r, ldy);
  }
}

inline void override_with_zmm(slimkv::IsaTypeKernels* rows) {
  using slimkv::DType;
  auto set = [&](DType t, slimkv::VecDotFn d, slimkv::GemmFn g) { rows[static_cast<int>(t)] = {d, g}; };
  set(DType::Q4_K, zdot<ZQ45_K<false>>, zgemm<ZQ45_K<false>>);
  set(DType::Q5_K, zdot<ZQ45_K<true>>, zgemm<ZQ45_K<true>>);
  set(DType::Q6_K, zdot<ZQ6_K>, zgemm<ZQ6_K>);
  set(DType::IQ4_XS, zdot<ZIQ4_XS>, zgemm<ZIQ4_XS>);
}

