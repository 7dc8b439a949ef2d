#include "kernels/isa.h"

#include <algorithm>
#include <atomic>
#include <cpuid.h>

namespace slimkv {
namespace {
std::atomic<int> g_override{-1};
}

Isa detected_isa() {
  static const Isa isa = [] {
    __builtin_cpu_init();
    unsigned eax = 0, ebx = 0, ecx = 0, edx = 0;
    bool f16c = __get_cpuid(1, &eax, &ebx, &ecx, &edx) && (ecx & (1u << 29));  // clang 14 lacks "f16c" here
    bool avx2 = __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma") && f16c;
    bool avx512 = avx2 && __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
                  __builtin_cpu_supports("avx512vl") && __builtin_cpu_supports("avx512dq") &&
                  __builtin_cpu_supports("avx512vnni");
    return avx512 ? Isa::Avx512 : avx2 ? Isa::Avx2 : Isa::Scalar;
  }();
  return isa;
}

Isa active_isa() {
  int o = g_override.load(std::memory_order_relaxed);
  return o < 0 ? detected_isa() : static_cast<Isa>(o);
}

void set_isa_override(Isa isa) {
  g_override.store(std::min(static_cast<int>(isa), static_cast<int>(detected_isa())));
}

std::string_view isa_name(Isa isa) {
  switch (isa) {
    case Isa::Scalar: return "scalar";
    case Isa::Avx2: return "avx2";
    case Isa::Avx512: return "avx512";
  }
  return "?";
}

}  // namespace slimkv
