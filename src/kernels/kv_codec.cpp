#include "kernels/kv_codec.h"

#include <cmath>
#include <algorithm>
#include <cstring>

#include "core/check.h"
#include "core/checked_math.h"
#include "core/half.h"

namespace slimkv {
namespace {

void fwht(float* x, int32_t n) {  // unnormalised fast Walsh-Hadamard transform
  for (int32_t len = 1; len < n; len <<= 1) {
    for (int32_t i = 0; i < n; i += 2 * len) {
      for (int32_t j = i; j < i + len; ++j) {
        float a = x[j], b = x[j + len];
        x[j] = a + b;
        x[j + len] = a - b;
      }
    }
  }
}

float sign_of(int32_t i) {  // fixed pseudo-random signs (splitmix64 of the index)
  uint64_t z = static_cast<uint64_t>(i) + 0x9E3779B97F4A7C15ull;
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return ((z ^ (z >> 31)) & 1) ? -1.0f : 1.0f;
}

// Lloyd-Max quantizers of the unit normal (the MSE-optimal levels for N(0, 1)), ascending, snapped to integers on
// a grid where the outermost level is 127: a row is stored as d = RMS * unit (fp16) and each value's level index,
// and decodes to d * level, so attention can score its codes in integer dot products (int8 VNNI) exactly.
// tq4: ±{0.1284, 0.3881, 0.6568, 0.9424, 1.2562, 1.6181, 2.0690, 2.7326} * 127 / 2.7326 -> ±{6, 18, 31, 44, 58,
// 75, 96, 127} (the largest shift 0.010 in units of the normal: under a tenth of tq4's own RMS error); tq3:
// ±{0.2451, 0.7560, 1.3439, 2.1520} * 127 / 2.1520 -> ±{14, 45, 79, 127}.
constexpr int8_t kTq4Levels[16] = {-127, -96, -75, -58, -44, -31, -18, -6, 6, 18, 31, 44, 58, 75, 96, 127};
constexpr int8_t kTq3Levels[8] = {-127, -79, -45, -14, 14, 45, 79, 127};
constexpr float kTq4Unit = 2.7326f / 127.0f, kTq3Unit = 2.1520f / 127.0f;  // the normal's units per grid step

int nearest_level(float v, const int8_t* levels, int n) {  // levels ascending: the first midpoint above v
  int i = 0;
  while (i + 1 < n && v > 0.5f * static_cast<float>(levels[i] + levels[i + 1])) ++i;
  return i;
}

// TurboQuant-style rows: d = the row's RMS in grid units (fp16), then each value / d as its nearest level's index.
void encode_tq(const float* x, int32_t hd, int bits, uint8_t* dst) {
  double ss = 0;
  for (int32_t i = 0; i < hd; ++i) ss += static_cast<double>(x[i]) * x[i];
  const float rms = static_cast<float>(std::sqrt(ss / std::max(1, hd)));
  const uint16_t d16 = fp32_to_fp16(rms * (bits == 4 ? kTq4Unit : kTq3Unit));
  const float d = fp16_to_fp32(d16);  // quantize against the scale actually stored
  const float inv = d > 0 ? 1.0f / d : 0.0f;
  std::memcpy(dst, &d16, 2);
  uint8_t* q = dst + 2;
  std::memset(q, 0, static_cast<size_t>(kv_head_record_bytes(bits == 4 ? KvDtype::Tq4 : KvDtype::Tq3, hd) - 2));
  for (int32_t i = 0; i < hd; ++i) {
    const int idx = bits == 4 ? nearest_level(x[i] * inv, kTq4Levels, 16) : nearest_level(x[i] * inv, kTq3Levels, 8);
    const int32_t bit = i * bits;  // little-endian bit stream
    q[bit / 8] |= static_cast<uint8_t>(idx << (bit % 8));
    if (bit % 8 + bits > 8) q[bit / 8 + 1] |= static_cast<uint8_t>(idx >> (8 - bit % 8));
  }
}

void decode_tq(const uint8_t* src, int32_t hd, int bits, float* out) {
  uint16_t d16;
  std::memcpy(&d16, src, 2);
  const float d = fp16_to_fp32(d16);
  const uint8_t* q = src + 2;
  const int8_t* levels = bits == 4 ? kTq4Levels : kTq3Levels;
  const int mask = (1 << bits) - 1;
  for (int32_t i = 0; i < hd; ++i) {
    const int32_t bit = i * bits;
    int v = q[bit / 8] >> (bit % 8);
    if (bit % 8 + bits > 8) v |= q[bit / 8 + 1] << (8 - bit % 8);
    out[i] = d * static_cast<float>(levels[v & mask]);
  }
}

}  // namespace

const int8_t* tq4_levels() { return kTq4Levels; }

float round_query_to_grid(float* q, int32_t n) {
  float amax = 0;
  for (int32_t i = 0; i < n; ++i) amax = std::max(amax, std::fabs(q[i]));
  if (amax == 0) return 0;
  const float d = amax / static_cast<float>(kQueryGridMax), id = static_cast<float>(kQueryGridMax) / amax;
  for (int32_t i = 0; i < n; ++i) q[i] = d * std::nearbyint(q[i] * id);
  return d;
}

void hadamard_rotate(float* x, int32_t n) {
  SLIMKV_CHECK(is_power_of_two(n), "Hadamard rotation needs a power-of-two head dim (got {})", n);
  for (int32_t i = 0; i < n; ++i) x[i] *= sign_of(i);
  fwht(x, n);
  const float s = 1.0f / std::sqrt(static_cast<float>(n));
  for (int32_t i = 0; i < n; ++i) x[i] *= s;
}

void hadamard_unrotate(float* x, int32_t n) {
  SLIMKV_CHECK(is_power_of_two(n), "Hadamard rotation needs a power-of-two head dim (got {})", n);
  fwht(x, n);
  const float s = 1.0f / std::sqrt(static_cast<float>(n));
  for (int32_t i = 0; i < n; ++i) x[i] *= s * sign_of(i);
}

void encode_kv_head(const float* x, int32_t hd, KvDtype dtype, uint8_t* dst) {
  switch (dtype) {
    case KvDtype::F32:
      std::memcpy(dst, x, sizeof(float) * hd);
      return;
    case KvDtype::F16:
      for (int32_t i = 0; i < hd; ++i) {
        uint16_t h = fp32_to_fp16(x[i]);
        std::memcpy(dst + 2 * i, &h, 2);
      }
      return;
    case KvDtype::Int8:
    case KvDtype::Int4: {
      const float qmax = dtype == KvDtype::Int8 ? 127.0f : 7.0f;
      float amax = 0;
      for (int32_t i = 0; i < hd; ++i) amax = std::max(amax, std::fabs(x[i]));
      const uint16_t d16 = fp32_to_fp16(amax / qmax);
      const float d = fp16_to_fp32(d16);  // quantize against the scale actually stored
      const float id = d > 0 ? 1.0f / d : 0.0f;
      std::memcpy(dst, &d16, 2);
      uint8_t* q = dst + 2;
      if (dtype == KvDtype::Int8) {
        for (int32_t i = 0; i < hd; ++i) {
          q[i] = static_cast<uint8_t>(static_cast<int8_t>(std::clamp(std::nearbyint(x[i] * id), -127.0f, 127.0f)));
        }
      } else {
        for (int32_t i = 0; i < hd; i += 2) {
          int lo = static_cast<int>(std::clamp(std::nearbyint(x[i] * id), -8.0f, 7.0f)) + 8;
          int hi = i + 1 < hd ? static_cast<int>(std::clamp(std::nearbyint(x[i + 1] * id), -8.0f, 7.0f)) + 8 : 8;
          q[i / 2] = static_cast<uint8_t>(lo | (hi << 4));
        }
      }
      return;
    }
    case KvDtype::Tq4: return encode_tq(x, hd, 4, dst);
    case KvDtype::Tq3: return encode_tq(x, hd, 3, dst);
  }
}

void decode_kv_head(const uint8_t* src, int32_t hd, KvDtype dtype, float* out) {
  switch (dtype) {
    case KvDtype::F32:
      std::memcpy(out, src, sizeof(float) * hd);
      return;
    case KvDtype::F16:
      for (int32_t i = 0; i < hd; ++i) {
        uint16_t h;
        std::memcpy(&h, src + 2 * i, 2);
        out[i] = fp16_to_fp32(h);
      }
      return;
    case KvDtype::Int8:
    case KvDtype::Int4: {
      uint16_t d16;
      std::memcpy(&d16, src, 2);
      const float d = fp16_to_fp32(d16);
      const uint8_t* q = src + 2;
      if (dtype == KvDtype::Int8) {
        for (int32_t i = 0; i < hd; ++i) out[i] = d * static_cast<float>(static_cast<int8_t>(q[i]));
      } else {
        for (int32_t i = 0; i < hd; ++i) {
          int v = (i % 2 == 0 ? (q[i / 2] & 0x0F) : (q[i / 2] >> 4)) - 8;
          out[i] = d * static_cast<float>(v);
        }
      }
      return;
    }
    case KvDtype::Tq4: return decode_tq(src, hd, 4, out);
    case KvDtype::Tq3: return decode_tq(src, hd, 3, out);
  }
}

void encode_kv_record(const float* x, int32_t hd, int32_t split, KvDtype dtype, uint8_t* dst) {
  if (split <= 0 || split >= hd) return encode_kv_head(x, hd, dtype, dst);
  encode_kv_head(x, split, dtype, dst);
  encode_kv_head(x + split, hd - split, dtype, dst + kv_head_record_bytes(dtype, split));
}

void decode_kv_record(const uint8_t* src, int32_t hd, int32_t split, KvDtype dtype, float* out) {
  if (split <= 0 || split >= hd) return decode_kv_head(src, hd, dtype, out);
  decode_kv_head(src, split, dtype, out);
  decode_kv_head(src + kv_head_record_bytes(dtype, split), hd - split, dtype, out + split);
}

void hadamard_rotate_record(float* x, int32_t hd, int32_t split) {
  if (split <= 0 || split >= hd) return hadamard_rotate(x, hd);
  hadamard_rotate(x, split);
  hadamard_rotate(x + split, hd - split);
}

void hadamard_unrotate_record(float* x, int32_t hd, int32_t split) {
  if (split <= 0 || split >= hd) return hadamard_unrotate(x, hd);
  hadamard_unrotate(x, split);
  hadamard_unrotate(x + split, hd - split);
}

}  // namespace slimkv
