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

}  // namespace

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
