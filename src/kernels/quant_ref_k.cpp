// Scalar references of the 256-value super-block types: Q2_K..Q6_K, IQ4_XS and the Q8_K activations.
// Dequantization follows GGML's dequantize_row_* exactly; dot products sum exact integers per sub-block and apply
// the block's float scales once. Quantizers are plain round-to-nearest (scales from each sub-block's range), enough
// for fixtures; llama-quantize makes the production files.
#include <algorithm>
#include <cmath>
#include <cstring>

#include "core/half.h"
#include "core/quant_blocks.h"
#include "kernels/quant_ref.h"

namespace slimkv::quant_ref {
namespace {


// Round to nearest, ties to even, for |x| < 2^22 (GGML's nearest_int: one add, vectorizable, no libm call).
int nearest(float x) {
  const float v = x + 12582912.0f;
  int32_t i;
  std::memcpy(&i, &v, 4);
  return (i & 0x007fffff) - 0x00400000;
}

// Sub-block ranges: the most negative value (or 0) and the span above it.
void sub_ranges(const float* x, int sub, int count, float* scale, float* neg_min, int levels) {
  for (int s = 0; s < count; ++s) {
    float lo = 0, hi = 0;
    for (int j = 0; j < sub; ++j) {
      lo = std::min(lo, x[s * sub + j]);
      hi = std::max(hi, x[s * sub + j]);
    }
    scale[s] = (hi - lo) / static_cast<float>(levels);
    neg_min[s] = -lo;
  }
}

// Signed absmax scale per sub-block: the largest |x| maps to -top.
void sub_absmax(const float* x, int sub, int count, float* scale, float top) {
  for (int s = 0; s < count; ++s) {
    float amax = 0, mx = 0;
    for (int j = 0; j < sub; ++j) {
      if (std::fabs(x[s * sub + j]) > amax) { amax = std::fabs(x[s * sub + j]); mx = x[s * sub + j]; }
    }
    scale[s] = mx / -top;
  }
}

float max_abs(const float* v, int n) {
  float m = 0;
  for (int i = 0; i < n; ++i) m = std::max(m, std::fabs(v[i]));
  return m;
}

// Packs 8 six-bit scales and mins as Q4_K / Q5_K store them.
void pack_k4_scales(const uint8_t* ls, const uint8_t* lm, uint8_t* out) {
  std::memset(out, 0, 12);
  for (int j = 0; j < 8; ++j) {
    if (j < 4) {
      out[j] = ls[j];
      out[j + 4] = lm[j];
    } else {
      out[j + 4] = static_cast<uint8_t>((ls[j] & 0xF) | ((lm[j] & 0xF) << 4));
      out[j - 4] |= static_cast<uint8_t>((ls[j] >> 4) << 6);
      out[j] |= static_cast<uint8_t>((lm[j] >> 4) << 6);
    }
  }
}

// Shared by Q4_K (levels 15) and Q5_K (31): per 32-value sub-block a 6-bit scale and min; q = round((x + m) / s).
void quantize_k45(const float* x, int levels, uint16_t* d_out, uint16_t* dmin_out, uint8_t* scales, uint8_t* L) {
  float sc[8], mn[8];
  sub_ranges(x, 32, 8, sc, mn, levels);
  const float d = max_abs(sc, 8) / 63.0f, dmin = max_abs(mn, 8) / 63.0f;
  uint8_t ls[8], lm[8];
  for (int s = 0; s < 8; ++s) {
    ls[s] = static_cast<uint8_t>(std::clamp(d ? nearest(sc[s] / d) : 0, 0, 63));
    lm[s] = static_cast<uint8_t>(std::clamp(dmin ? nearest(mn[s] / dmin) : 0, 0, 63));
  }
  pack_k4_scales(ls, lm, scales);
  *d_out = fp32_to_fp16(d);
  *dmin_out = fp32_to_fp16(dmin);
  const float dq = fp16_to_fp32(*d_out), mq = fp16_to_fp32(*dmin_out);
  for (int s = 0; s < 8; ++s) {
    const float step = dq * ls[s], off = mq * lm[s];
    for (int j = 0; j < 32; ++j) {
      L[s * 32 + j] = static_cast<uint8_t>(std::clamp(step ? nearest((x[s * 32 + j] + off) / step) : 0, 0, levels));
    }
  }
}

// Q2_K / Q3_K value layout: element e's 2 bits at qs[32 * (e / 128) + e % 32] >> (2 * ((e % 128) / 32)).
void pack_2bit(const uint8_t* L, uint8_t* qs) {
  for (int j = 0; j < 256; j += 128) {
    for (int l = 0; l < 32; ++l) {
      qs[j / 4 + l] = static_cast<uint8_t>((L[j + l] & 3) | ((L[j + l + 32] & 3) << 2) | ((L[j + l + 64] & 3) << 4) |
                                           ((L[j + l + 96] & 3) << 6));
    }
  }
}
int get_2bit(const uint8_t* qs, int e) { return (qs[32 * (e / 128) + e % 32] >> (2 * ((e % 128) / 32))) & 3; }

}  // namespace

void q3_k_scales(const uint8_t* packed, int8_t out[16]) {
  constexpr uint32_t kmask1 = 0x03030303, kmask2 = 0x0f0f0f0f;
  uint32_t aux[4];
  std::memcpy(aux, packed, 12);
  const uint32_t tmp = aux[2];
  aux[2] = ((aux[0] >> 4) & kmask2) | (((tmp >> 4) & kmask1) << 4);
  aux[3] = ((aux[1] >> 4) & kmask2) | (((tmp >> 6) & kmask1) << 4);
  aux[0] = (aux[0] & kmask2) | (((tmp >> 0) & kmask1) << 4);
  aux[1] = (aux[1] & kmask2) | (((tmp >> 2) & kmask1) << 4);
  std::memcpy(out, aux, 16);
}

void k4_scales(const uint8_t* packed, uint8_t sc[8], uint8_t mn[8]) {
  for (int j = 0; j < 8; ++j) k_scale_min(j, packed, &sc[j], &mn[j]);
}

void dequant_q2_k(const void* w, float* y, int64_t n) {
  for (int64_t i = 0; i < n / 256; ++i) {
    const Q2_KBlock& b = as_blocks<Q2_KBlock>(w)[i];
    const float d = fp16_to_fp32(b.d), mn = fp16_to_fp32(b.dmin);
    const uint8_t* q = b.qs;
    int is = 0;
    for (int half = 0; half < 2; ++half, q += 32) {
      for (int shift = 0; shift < 8; shift += 2) {
        for (int part = 0; part < 2; ++part) {
          const uint8_t sc = b.scales[is++];
          const float dl = d * (sc & 0xF), ml = mn * (sc >> 4);
          for (int l = 0; l < 16; ++l) *y++ = dl * static_cast<int8_t>((q[l + 16 * part] >> shift) & 3) - ml;
        }
      }
    }
  }
}

void dequant_q3_k(const void* w, float* y, int64_t n) {
  for (int64_t i = 0; i < n / 256; ++i) {
    const Q3_KBlock& b = as_blocks<Q3_KBlock>(w)[i];
    const float d = fp16_to_fp32(b.d);
    int8_t scales[16];
    q3_k_scales(b.scales, scales);
    const uint8_t* q = b.qs;
    uint8_t m = 1;
    int is = 0;
    for (int half = 0; half < 2; ++half, q += 32) {
      for (int shift = 0; shift < 8; shift += 2, m <<= 1) {
        for (int part = 0; part < 2; ++part) {
          const float dl = d * (scales[is++] - 32);
          for (int l = 0; l < 16; ++l) {
            const int k = l + 16 * part;
            *y++ = dl * (static_cast<int8_t>((q[k] >> shift) & 3) - ((b.hmask[k] & m) ? 0 : 4));
          }
        }
      }
    }
  }
}

void dequant_q4_k(const void* w, float* y, int64_t n) {
  for (int64_t i = 0; i < n / 256; ++i) {
    const Q4_KBlock& b = as_blocks<Q4_KBlock>(w)[i];
    const float d = fp16_to_fp32(b.d), mn = fp16_to_fp32(b.dmin);
    const uint8_t* q = b.qs;
    for (int j = 0; j < 8; j += 2, q += 32) {
      uint8_t sc, m;
      k_scale_min(j, b.scales, &sc, &m);
      const float d1 = d * sc, m1 = mn * m;
      k_scale_min(j + 1, b.scales, &sc, &m);
      const float d2 = d * sc, m2 = mn * m;
      for (int l = 0; l < 32; ++l) *y++ = d1 * (q[l] & 0xF) - m1;
      for (int l = 0; l < 32; ++l) *y++ = d2 * (q[l] >> 4) - m2;
    }
  }
}

void dequant_q5_k(const void* w, float* y, int64_t n) {
  for (int64_t i = 0; i < n / 256; ++i) {
    const Q5_KBlock& b = as_blocks<Q5_KBlock>(w)[i];
    const float d = fp16_to_fp32(b.d), mn = fp16_to_fp32(b.dmin);
    const uint8_t* ql = b.qs;
    uint8_t u1 = 1, u2 = 2;
    for (int j = 0; j < 8; j += 2, ql += 32, u1 <<= 2, u2 <<= 2) {
      uint8_t sc, m;
      k_scale_min(j, b.scales, &sc, &m);
      const float d1 = d * sc, m1 = mn * m;
      k_scale_min(j + 1, b.scales, &sc, &m);
      const float d2 = d * sc, m2 = mn * m;
      for (int l = 0; l < 32; ++l) *y++ = d1 * ((ql[l] & 0xF) + (b.qh[l] & u1 ? 16 : 0)) - m1;
      for (int l = 0; l < 32; ++l) *y++ = d2 * ((ql[l] >> 4) + (b.qh[l] & u2 ? 16 : 0)) - m2;
    }
  }
}

void dequant_q6_k(const void* w, float* y, int64_t n) {
  for (int64_t i = 0; i < n / 256; ++i) {
    const Q6_KBlock& b = as_blocks<Q6_KBlock>(w)[i];
    const float d = fp16_to_fp32(b.d);
    const uint8_t* ql = b.ql;
    const uint8_t* qh = b.qh;
    const int8_t* sc = b.scales;
    for (int half = 0; half < 2; ++half, y += 128, ql += 64, qh += 32, sc += 8) {
      for (int l = 0; l < 32; ++l) {
        const int is = l / 16;
        const int8_t q1 = static_cast<int8_t>((ql[l] & 0xF) | (((qh[l] >> 0) & 3) << 4)) - 32;
        const int8_t q2 = static_cast<int8_t>((ql[l + 32] & 0xF) | (((qh[l] >> 2) & 3) << 4)) - 32;
        const int8_t q3 = static_cast<int8_t>((ql[l] >> 4) | (((qh[l] >> 4) & 3) << 4)) - 32;
        const int8_t q4 = static_cast<int8_t>((ql[l + 32] >> 4) | (((qh[l] >> 6) & 3) << 4)) - 32;
        y[l] = d * sc[is + 0] * q1;
        y[l + 32] = d * sc[is + 2] * q2;
        y[l + 64] = d * sc[is + 4] * q3;
        y[l + 96] = d * sc[is + 6] * q4;
      }
    }
  }
}

void dequant_iq4_xs(const void* w, float* y, int64_t n) {
  for (int64_t i = 0; i < n / 256; ++i) {
    const IQ4_XSBlock& b = as_blocks<IQ4_XSBlock>(w)[i];
    const float d = fp16_to_fp32(b.d);
    const uint8_t* qs = b.qs;
    for (int ib = 0; ib < 8; ++ib, y += 32, qs += 16) {
      const int ls = ((b.scales_l[ib / 2] >> 4 * (ib % 2)) & 0xf) | (((b.scales_h >> 2 * ib) & 3) << 4);
      const float dl = d * (ls - 32);
      for (int j = 0; j < 16; ++j) {
        y[j] = dl * kIq4nlValues[qs[j] & 0xf];
        y[j + 16] = dl * kIq4nlValues[qs[j] >> 4];
      }
    }
  }
}

void dequant_q8_k(const void* w, float* y, int64_t n) {
  for (int64_t i = 0; i < n / 256; ++i) {
    const Q8_KBlock& b = as_blocks<Q8_KBlock>(w)[i];
    for (int j = 0; j < 256; ++j) *y++ = b.d * b.qs[j];
  }
}

void quantize_q2_k(const float* x, void* w, int64_t n) {
  for (int64_t i = 0; i < n / 256; ++i, x += 256) {
    Q2_KBlock& b = as_blocks<Q2_KBlock>(w)[i];
    float sc[16], mn[16];
    sub_ranges(x, 16, 16, sc, mn, 3);
    const float d = max_abs(sc, 16) / 15.0f, dmin = max_abs(mn, 16) / 15.0f;
    b.d = fp32_to_fp16(d);
    b.dmin = fp32_to_fp16(dmin);
    const float dq = fp16_to_fp32(b.d), mq = fp16_to_fp32(b.dmin);
    uint8_t L[256];
    for (int s = 0; s < 16; ++s) {
      const int ls = std::clamp(d ? nearest(sc[s] / d) : 0, 0, 15), lm = std::clamp(dmin ? nearest(mn[s] / dmin) : 0, 0, 15);
      b.scales[s] = static_cast<uint8_t>(ls | (lm << 4));
      const float step = dq * ls, off = mq * lm;
      for (int j = 0; j < 16; ++j) {
        L[s * 16 + j] = static_cast<uint8_t>(std::clamp(step ? nearest((x[s * 16 + j] + off) / step) : 0, 0, 3));
      }
    }
    pack_2bit(L, b.qs);
  }
}

void quantize_q3_k(const float* x, void* w, int64_t n) {
  for (int64_t i = 0; i < n / 256; ++i, x += 256) {
    Q3_KBlock& b = as_blocks<Q3_KBlock>(w)[i];
    float sc[16];
    sub_absmax(x, 16, 16, sc, 4.0f);
    const float d = max_abs(sc, 16) / 31.0f;
    b.d = fp32_to_fp16(d);
    const float dq = fp16_to_fp32(b.d);
    std::memset(b.scales, 0, 12);
    std::memset(b.hmask, 0, 32);
    uint8_t L[256];
    for (int s = 0; s < 16; ++s) {
      const int l = std::clamp(d ? nearest(sc[s] / d) : 0, -32, 31) + 32;
      if (s < 8) b.scales[s] = static_cast<uint8_t>(l & 0xF);
      else b.scales[s - 8] |= static_cast<uint8_t>((l & 0xF) << 4);
      b.scales[s % 4 + 8] |= static_cast<uint8_t>((l >> 4) << (2 * (s / 4)));
      const float step = dq * (l - 32);
      for (int j = 0; j < 16; ++j) {
        L[s * 16 + j] = static_cast<uint8_t>(std::clamp(step ? nearest(x[s * 16 + j] / step) : 0, -4, 3) + 4);
      }
    }
    for (int e = 0; e < 256; ++e) {
      if (L[e] > 3) {
        b.hmask[e % 32] |= static_cast<uint8_t>(1 << (e / 32));
        L[e] -= 4;
      }
    }
    pack_2bit(L, b.qs);
  }
}

void quantize_q4_k(const float* x, void* w, int64_t n) {
  for (int64_t i = 0; i < n / 256; ++i, x += 256) {
    Q4_KBlock& b = as_blocks<Q4_KBlock>(w)[i];
    uint8_t L[256];
    quantize_k45(x, 15, &b.d, &b.dmin, b.scales, L);
    for (int j = 0; j < 4; ++j) {
      for (int l = 0; l < 32; ++l) b.qs[32 * j + l] = static_cast<uint8_t>(L[64 * j + l] | (L[64 * j + 32 + l] << 4));
    }
  }
}

void quantize_q5_k(const float* x, void* w, int64_t n) {
  for (int64_t i = 0; i < n / 256; ++i, x += 256) {
    Q5_KBlock& b = as_blocks<Q5_KBlock>(w)[i];
    uint8_t L[256];
    quantize_k45(x, 31, &b.d, &b.dmin, b.scales, L);
    std::memset(b.qh, 0, 32);
    for (int j = 0; j < 4; ++j) {
      for (int l = 0; l < 32; ++l) {
        const uint8_t lo = L[64 * j + l], hi = L[64 * j + 32 + l];
        b.qs[32 * j + l] = static_cast<uint8_t>((lo & 0xF) | ((hi & 0xF) << 4));
        b.qh[l] |= static_cast<uint8_t>(((lo >> 4) << (2 * j)) | ((hi >> 4) << (2 * j + 1)));
      }
    }
  }
}

void quantize_q6_k(const float* x, void* w, int64_t n) {
  for (int64_t i = 0; i < n / 256; ++i, x += 256) {
    Q6_KBlock& b = as_blocks<Q6_KBlock>(w)[i];
    float sc[16];
    sub_absmax(x, 16, 16, sc, 32.0f);
    const float d = max_abs(sc, 16) / 127.0f;
    b.d = fp32_to_fp16(d);
    const float dq = fp16_to_fp32(b.d);
    uint8_t L[256];
    for (int s = 0; s < 16; ++s) {
      const int l = std::clamp(d ? nearest(sc[s] / d) : 0, -128, 127);
      b.scales[s] = static_cast<int8_t>(l);
      const float step = dq * l;
      for (int j = 0; j < 16; ++j) {
        L[s * 16 + j] = static_cast<uint8_t>(std::clamp(step ? nearest(x[s * 16 + j] / step) : 0, -32, 31) + 32);
      }
    }
    for (int h = 0; h < 2; ++h) {
      const uint8_t* Lh = L + 128 * h;
      for (int l = 0; l < 32; ++l) {
        b.ql[64 * h + l] = static_cast<uint8_t>((Lh[l] & 0xF) | ((Lh[l + 64] & 0xF) << 4));
        b.ql[64 * h + l + 32] = static_cast<uint8_t>((Lh[l + 32] & 0xF) | ((Lh[l + 96] & 0xF) << 4));
        b.qh[32 * h + l] = static_cast<uint8_t>((Lh[l] >> 4) | ((Lh[l + 32] >> 4) << 2) | ((Lh[l + 64] >> 4) << 4) |
                                                ((Lh[l + 96] >> 4) << 6));
      }
    }
  }
}

void quantize_iq4_xs(const float* x, void* w, int64_t n) {
  for (int64_t i = 0; i < n / 256; ++i, x += 256) {
    IQ4_XSBlock& b = as_blocks<IQ4_XSBlock>(w)[i];
    float sc[8];
    sub_absmax(x, 32, 8, sc, 127.0f);
    const float d = max_abs(sc, 8) / 31.0f;
    b.d = fp32_to_fp16(d);
    const float dq = fp16_to_fp32(b.d);
    b.scales_h = 0;
    std::memset(b.scales_l, 0, 4);
    for (int s = 0; s < 8; ++s) {
      const int ls = std::clamp(d ? nearest(sc[s] / d) : 0, -32, 31) + 32;
      b.scales_l[s / 2] |= static_cast<uint8_t>((ls & 0xF) << (4 * (s % 2)));
      b.scales_h |= static_cast<uint16_t>((ls >> 4) << (2 * s));
      const float dl = dq * (ls - 32), id = dl ? 1.0f / dl : 0.0f;
      for (int j = 0; j < 16; ++j) {
        int best[2] = {8, 8};
        for (int h = 0; h < 2; ++h) {
          float err = INFINITY;
          const float v = x[s * 32 + j + 16 * h] * id;
          for (int k = 0; k < 16; ++k) {
            if (std::fabs(v - kIq4nlValues[k]) < err) { err = std::fabs(v - kIq4nlValues[k]); best[h] = k; }
          }
        }
        b.qs[16 * s + j] = static_cast<uint8_t>(best[0] | (best[1] << 4));
      }
    }
  }
}

void quantize_q8_k(const float* x, void* w, int64_t n) {
  for (int64_t i = 0; i < n / 256; ++i, x += 256) {
    Q8_KBlock& b = as_blocks<Q8_KBlock>(w)[i];
    float amax = 0, mx = 0;
    for (int j = 0; j < 256; ++j) {
      if (std::fabs(x[j]) > amax) { amax = std::fabs(x[j]); mx = x[j]; }
    }
    if (amax == 0) {
      std::memset(&b, 0, sizeof(b));
      continue;
    }
    const float iscale = -127.0f / mx;
    for (int j = 0; j < 256; ++j) b.qs[j] = static_cast<int8_t>(std::min(127, nearest(iscale * x[j])));
    for (int j = 0; j < 16; ++j) {
      int sum = 0;
      for (int k = 0; k < 16; ++k) sum += b.qs[j * 16 + k];
      b.bsums[j] = static_cast<int16_t>(sum);
    }
    b.d = 1 / iscale;
  }
}

float dot_q2_k(const void* w, const void* x, int64_t n) {
  float s = 0;
  for (int64_t i = 0; i < n / 256; ++i) {
    const Q2_KBlock& a = as_blocks<Q2_KBlock>(w)[i];
    const Q8_KBlock& b = as_blocks<Q8_KBlock>(x)[i];
    int32_t sumi = 0, summ = 0;
    for (int sb = 0; sb < 16; ++sb) {
      int32_t acc = 0;
      for (int j = 0; j < 16; ++j) acc += get_2bit(a.qs, sb * 16 + j) * b.qs[sb * 16 + j];
      sumi += (a.scales[sb] & 0xF) * acc;
      summ += (a.scales[sb] >> 4) * b.bsums[sb];
    }
    s += b.d * (fp16_to_fp32(a.d) * sumi - fp16_to_fp32(a.dmin) * summ);
  }
  return s;
}

float dot_q3_k(const void* w, const void* x, int64_t n) {
  float s = 0;
  for (int64_t i = 0; i < n / 256; ++i) {
    const Q3_KBlock& a = as_blocks<Q3_KBlock>(w)[i];
    const Q8_KBlock& b = as_blocks<Q8_KBlock>(x)[i];
    int8_t scales[16];
    q3_k_scales(a.scales, scales);
    int32_t sumi = 0;
    for (int sb = 0; sb < 16; ++sb) {
      int32_t acc = 0;
      for (int j = 0; j < 16; ++j) {
        const int e = sb * 16 + j;
        const int q = get_2bit(a.qs, e) - ((a.hmask[e % 32] >> (e / 32)) & 1 ? 0 : 4);
        acc += q * b.qs[e];
      }
      sumi += (scales[sb] - 32) * acc;
    }
    s += b.d * fp16_to_fp32(a.d) * static_cast<float>(sumi);
  }
  return s;
}

namespace {
// Q4_K / Q5_K: value e of the block (0..255), 4 or 5 bits.
template <bool kFive, typename B>
int k45_value(const B& a, int e) {
  const int chunk = e / 64, l = e % 32;
  const bool high = (e % 64) >= 32;
  int q = high ? (a.qs[32 * chunk + l] >> 4) : (a.qs[32 * chunk + l] & 0xF);
  if constexpr (kFive) q |= ((a.qh[l] >> (2 * chunk + (high ? 1 : 0))) & 1) << 4;
  return q;
}
template <bool kFive, typename B>
float dot_k45(const void* w, const void* x, int64_t n) {
  float s = 0;
  for (int64_t i = 0; i < n / 256; ++i) {
    const B& a = as_blocks<B>(w)[i];
    const Q8_KBlock& b = as_blocks<Q8_KBlock>(x)[i];
    uint8_t sc[8], mn[8];
    k4_scales(a.scales, sc, mn);
    int32_t sumi = 0, summ = 0;
    for (int sb = 0; sb < 8; ++sb) {
      int32_t acc = 0;
      for (int j = 0; j < 32; ++j) acc += k45_value<kFive>(a, sb * 32 + j) * b.qs[sb * 32 + j];
      sumi += sc[sb] * acc;
      summ += mn[sb] * (b.bsums[2 * sb] + b.bsums[2 * sb + 1]);
    }
    s += b.d * (fp16_to_fp32(a.d) * sumi - fp16_to_fp32(a.dmin) * summ);
  }
  return s;
}
}  // namespace

float dot_q4_k(const void* w, const void* x, int64_t n) { return dot_k45<false, Q4_KBlock>(w, x, n); }
float dot_q5_k(const void* w, const void* x, int64_t n) { return dot_k45<true, Q5_KBlock>(w, x, n); }

float dot_q6_k(const void* w, const void* x, int64_t n) {
  float s = 0;
  for (int64_t i = 0; i < n / 256; ++i) {
    const Q6_KBlock& a = as_blocks<Q6_KBlock>(w)[i];
    const Q8_KBlock& b = as_blocks<Q8_KBlock>(x)[i];
    int32_t sumi = 0;
    for (int sb = 0; sb < 16; ++sb) {
      int32_t acc = 0;
      for (int j = 0; j < 16; ++j) {
        const int e = sb * 16 + j, h = e / 128, r = e % 128, k = r / 32, l = r % 32;
        const uint8_t lo = a.ql[64 * h + l + 32 * (k & 1)];
        const int q = ((k < 2 ? lo & 0xF : lo >> 4) | (((a.qh[32 * h + l] >> (2 * k)) & 3) << 4)) - 32;
        acc += q * b.qs[e];
      }
      sumi += a.scales[sb] * acc;
    }
    s += b.d * fp16_to_fp32(a.d) * static_cast<float>(sumi);
  }
  return s;
}

float dot_iq4_xs(const void* w, const void* x, int64_t n) {
  float s = 0;
  for (int64_t i = 0; i < n / 256; ++i) {
    const IQ4_XSBlock& a = as_blocks<IQ4_XSBlock>(w)[i];
    const Q8_KBlock& b = as_blocks<Q8_KBlock>(x)[i];
    int32_t sumi = 0;
    for (int ib = 0; ib < 8; ++ib) {
      const int ls = ((a.scales_l[ib / 2] >> 4 * (ib % 2)) & 0xf) | (((a.scales_h >> 2 * ib) & 3) << 4);
      int32_t acc = 0;
      for (int j = 0; j < 16; ++j) {
        acc += kIq4nlValues[a.qs[16 * ib + j] & 0xF] * b.qs[32 * ib + j];
        acc += kIq4nlValues[a.qs[16 * ib + j] >> 4] * b.qs[32 * ib + j + 16];
      }
      sumi += (ls - 32) * acc;
    }
    s += b.d * fp16_to_fp32(a.d) * static_cast<float>(sumi);
  }
  return s;
}

}  // namespace slimkv::quant_ref
