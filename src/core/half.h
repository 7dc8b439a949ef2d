// Scalar fp16 / bf16 <-> fp32 conversions (IEEE binary16, bfloat16), and the decoding of two 8-bit formats of
// released checkpoints (OCP FP8 e4m3fn, E8M0 exponents). Reference code for kernels and loaders.
// Must not know: tensors.
#pragma once
#include <cstdint>
#include <cstring>

namespace slimkv {

inline float fp16_to_fp32(uint16_t h) {
  uint32_t sign = static_cast<uint32_t>(h & 0x8000) << 16;
  uint32_t exp = (h >> 10) & 0x1f;
  uint32_t mant = h & 0x3ff;
  uint32_t bits;
  if (exp == 0) {
    if (mant == 0) {
      bits = sign;
    } else {  // subnormal: normalise
      exp = 127 - 15 + 1;
      while ((mant & 0x400) == 0) {
        mant <<= 1;
        --exp;
      }
      mant &= 0x3ff;
      bits = sign | (exp << 23) | (mant << 13);
    }
  } else if (exp == 31) {
    bits = sign | 0x7f800000u | (mant << 13);
  } else {
    bits = sign | ((exp + 127 - 15) << 23) | (mant << 13);
  }
  float f;
  std::memcpy(&f, &bits, 4);
  return f;
}

inline uint16_t fp32_to_fp16(float f) {  // round to nearest even
  uint32_t x;
  std::memcpy(&x, &f, 4);
  uint32_t sign = (x >> 16) & 0x8000;
  int32_t exp = static_cast<int32_t>((x >> 23) & 0xff) - 127 + 15;
  uint32_t mant = x & 0x7fffff;
  if (((x >> 23) & 0xff) == 0xff) return static_cast<uint16_t>(sign | 0x7c00 | (mant ? 0x200 : 0));
  if (exp >= 31) return static_cast<uint16_t>(sign | 0x7c00);
  if (exp <= 0) {
    if (exp < -10) return static_cast<uint16_t>(sign);
    mant |= 0x800000;
    uint32_t shift = static_cast<uint32_t>(14 - exp);
    uint32_t half_mant = mant >> shift;
    uint32_t rem = mant & ((1u << shift) - 1);
    uint32_t halfway = 1u << (shift - 1);
    if (rem > halfway || (rem == halfway && (half_mant & 1))) ++half_mant;
    return static_cast<uint16_t>(sign | half_mant);
  }
  uint32_t h = sign | (static_cast<uint32_t>(exp) << 10) | (mant >> 13);
  uint32_t rem = mant & 0x1fff;
  if (rem > 0x1000 || (rem == 0x1000 && (h & 1))) ++h;
  return static_cast<uint16_t>(h);
}

inline float bf16_to_fp32(uint16_t b) {
  uint32_t bits = static_cast<uint32_t>(b) << 16;
  float f;
  std::memcpy(&f, &bits, 4);
  return f;
}

inline uint16_t fp32_to_bf16(float f) {  // round to nearest even; NaN stays NaN
  uint32_t x;
  std::memcpy(&x, &f, 4);
  if ((x & 0x7fffffffu) > 0x7f800000u) return static_cast<uint16_t>((x >> 16) | 64);
  return static_cast<uint16_t>((x + (0x7fffu + ((x >> 16) & 1))) >> 16);
}

// OCP FP8 e4m3fn (torch.float8_e4m3fn): sign, 4 exponent bits (bias 7), 3 mantissa bits; no infinities,
// S.1111.111 is NaN; largest 448, smallest subnormal 2^-9.
inline float fp8_e4m3_to_fp32(uint8_t b) {
  const uint32_t e = (b >> 3) & 0xf, m = b & 7;
  float v;
  if (e == 15 && m == 7) {
    v = __builtin_nanf("");
  } else if (e == 0) {
    v = static_cast<float>(m) * 0x1p-9f;  // subnormal: m/8 * 2^-6
  } else {
    const uint32_t bits = ((e + 120) << 23) | (m << 20);  // (1 + m/8) * 2^(e-7)
    std::memcpy(&v, &bits, 4);
  }
  return (b & 0x80) ? -v : v;
}

// OCP E8M0 (torch.float8_e8m0fnu): 2^(e - 127); 255 is NaN. e = 0 gives 2^-127 (an fp32 subnormal).
inline float e8m0_to_fp32(uint8_t e) {
  if (e == 255) return __builtin_nanf("");
  const uint32_t bits = e == 0 ? 0x00400000u : static_cast<uint32_t>(e) << 23;
  float f;
  std::memcpy(&f, &bits, 4);
  return f;
}

}  // namespace slimkv
