// Overflow-checked size arithmetic for parsers: every count read from a file goes through these.
// Must not know: file formats.
#pragma once
#include <cstdint>
#include <initializer_list>
#include "core/check.h"

namespace slimkv {

inline uint64_t checked_mul(uint64_t a, uint64_t b, const char* what) {
  uint64_t out = 0;
  SLIMKV_CHECK(!__builtin_mul_overflow(a, b, &out), "size overflow computing {}", what);
  return out;
}

inline uint64_t checked_add(uint64_t a, uint64_t b, const char* what) {
  uint64_t out = 0;
  SLIMKV_CHECK(!__builtin_add_overflow(a, b, &out), "size overflow computing {}", what);
  return out;
}

constexpr bool is_power_of_two(int64_t n) { return n > 0 && (n & (n - 1)) == 0; }

inline uint64_t checked_product(std::initializer_list<uint64_t> xs, const char* what) {
  uint64_t out = 1;
  for (uint64_t x : xs) out = checked_mul(out, x, what);
  return out;
}

}  // namespace slimkv
