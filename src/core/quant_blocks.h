// GGML's quantized block layouts, byte for byte (ggml-common.h), for every type in core/dtype.h beyond Q8_0 / Q4_0.
// Scales are fp16 bit patterns unless said. Must not know: how blocks are made or multiplied (kernels/quant_*).
#pragma once
#include <cstdint>

#include "core/dtype.h"

namespace slimkv {

struct Q4_1Block {  // 20 bytes: x = d * q + m, q in [0, 15]; low nibbles = elements 0..15, high = 16..31
  uint16_t d, m;
  uint8_t qs[16];
};
struct Q5_0Block {  // 22 bytes: x = d * (q - 16); q = nibble | bit j of qh (little-endian u32) << 4
  uint16_t d;
  uint8_t qh[4];
  uint8_t qs[16];
};
struct Q5_1Block {  // 24 bytes: x = d * q + m, q as Q5_0's without the offset
  uint16_t d, m;
  uint8_t qh[4];
  uint8_t qs[16];
};
struct Q8_1Block {  // 36 bytes (activations): s = d * sum(qs)
  uint16_t d, s;
  int8_t qs[32];
};
struct Q2_KBlock {  // 84 bytes: 16 sub-blocks of 16; scales[i] = 4-bit scale | 4-bit min << 4; x = d*sc*q - dmin*m
  uint8_t scales[16];
  uint8_t qs[64];  // 2-bit values: byte l of a 32-byte group holds elements l, l+32, l+64, l+96 of its 128
  uint16_t d, dmin;
};
struct Q3_KBlock {  // 110 bytes: 16 sub-blocks of 16, 6-bit signed scales (packed in 12 bytes), x = d*(sc-32)*q
  uint8_t hmask[32];  // the high bit of each value (set = no -4)
  uint8_t qs[64];     // low 2 bits, laid out as Q2_K's
  uint8_t scales[12];
  uint16_t d;
};
struct Q4_KBlock {  // 144 bytes: 8 sub-blocks of 32 with 6-bit scale and min (packed in 12 bytes)
  uint16_t d, dmin;
  uint8_t scales[12];
  uint8_t qs[128];  // 32-byte groups: low nibbles = sub-block 2g, high = 2g+1
};
struct Q5_KBlock {  // 176 bytes: Q4_K plus a fifth bit per value
  uint16_t d, dmin;
  uint8_t scales[12];
  uint8_t qh[32];  // bit 2g / 2g+1 of byte l = high bit of element l of sub-block 2g / 2g+1
  uint8_t qs[128];
};
struct Q6_KBlock {  // 210 bytes: 16 sub-blocks of 16, int8 scales, x = d * sc * (q - 32)
  uint8_t ql[128];
  uint8_t qh[64];
  int8_t scales[16];
  uint16_t d;
};
struct Q8_KBlock {  // 292 bytes (activations): float scale, bsums = sums of each 16 values
  float d;
  int8_t qs[256];
  int16_t bsums[16];
};
struct IQ4_NLBlock {  // 18 bytes: x = d * kIq4nlValues[nibble]
  uint16_t d;
  uint8_t qs[16];
};
struct IQ4_XSBlock {  // 136 bytes: 8 sub-blocks of 32 with 6-bit scales (low 4 bits in scales_l, high 2 in scales_h)
  uint16_t d;
  uint16_t scales_h;
  uint8_t scales_l[4];
  uint8_t qs[128];
};
struct MXFP4Block {  // 17 bytes: E8M0 shared exponent, x = 2^(e-128) * kMxfp4Values[nibble] (values doubled e2m1)
  uint8_t e;
  uint8_t qs[16];
};

static_assert(sizeof(Q4_1Block) == 20 && sizeof(Q5_0Block) == 22 && sizeof(Q5_1Block) == 24 &&
              sizeof(Q8_1Block) == 36 && sizeof(Q2_KBlock) == 84 && sizeof(Q3_KBlock) == 110 &&
              sizeof(Q4_KBlock) == 144 && sizeof(Q5_KBlock) == 176 && sizeof(Q6_KBlock) == 210 &&
              sizeof(Q8_KBlock) == 292 && sizeof(IQ4_NLBlock) == 18 && sizeof(IQ4_XSBlock) == 136 &&
              sizeof(MXFP4Block) == 17);

inline constexpr int8_t kIq4nlValues[16] = {-127, -104, -83, -65, -49, -35, -22, -10, 1, 13, 25, 38, 53, 69, 89, 113};
inline constexpr int8_t kMxfp4Values[16] = {0, 1, 2, 3, 4, 6, 8, 12, 0, -1, -2, -3, -4, -6, -8, -12};

// A row's bytes as blocks of type B (the kernels' view of a weight or activation row).
template <typename B>
const B* as_blocks(const void* p) { return static_cast<const B*>(p); }
template <typename B>
B* as_blocks(void* p) { return static_cast<B*>(p); }

// K-quants' 12-byte scale fields: sub-block j's 6-bit scale and min (Q4_K / Q5_K).
inline void k_scale_min(int j, const uint8_t* q, uint8_t* sc, uint8_t* m) {
  if (j < 4) {
    *sc = q[j] & 63;
    *m = q[j + 4] & 63;
  } else {
    *sc = (q[j + 4] & 0xF) | ((q[j - 4] >> 6) << 4);
    *m = (q[j + 4] >> 4) | ((q[j] >> 6) << 4);
  }
}

// 2^(e - 128) as a float (GGML's E8M0 "half" conversion; e < 2 gives a denormal).
inline float e8m0_half(uint8_t e) {
  uint32_t bits = e < 2 ? (0x00200000u << e) : (static_cast<uint32_t>(e - 1) << 23);
  float f;
  __builtin_memcpy(&f, &bits, 4);
  return f;
}

}  // namespace slimkv
