// AVX-512 VNNI build of the GGML block types' kernels (quant_dot_impl.h with dpbusd products; quant_zmm.h's 512-bit
// kernels for Q4_K, Q5_K, Q6_K, IQ4_XS): this ISA's rows of the type traits table. (Two 32-value blocks per
// 512-bit register for Q8_0 / Q4_0 / Q5_0 / IQ4_NL / MXFP4 measured slower than these 256-bit kernels: not kept.)
#include <immintrin.h>

#include <cstring>
#include <type_traits>

#include "core/quant_blocks.h"
#include "kernels/cpu_avx2/simd_avx2.h"
#include "kernels/quant_ref.h"
#include "kernels/type_traits.h"

#define SLIMKV_VNNI 1
namespace slimkv {
namespace {
#include "kernels/cpu_avx2/quant_dot_impl.h"
#include "kernels/cpu_avx512/quant_zmm.h"
}  // namespace

const IsaTypeKernels* avx512_type_kernels() {
  static const IsaTypeKernels* const rows = [] {
    auto* r = const_cast<IsaTypeKernels*>(make_rows());
    override_with_zmm(r);  // 512-bit kernels where they exist
    return r;
  }();
  return rows;
}

}  // namespace slimkv
