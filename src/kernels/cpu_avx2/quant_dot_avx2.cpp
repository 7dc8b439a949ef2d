// AVX2 dot kernels of the GGML block types (quant_dot_impl.h, maddubs products): this ISA's rows of the type
// traits table.
#include <immintrin.h>

#include <cstring>
#include <type_traits>

#include "core/quant_blocks.h"
#include "kernels/cpu_avx2/simd_avx2.h"
#include "kernels/quant_ref.h"
#include "kernels/type_traits.h"

namespace slimkv {
namespace {
#include "kernels/cpu_avx2/quant_dot_impl.h"
}  // namespace

const IsaTypeKernels* avx2_type_kernels() { return make_rows(); }

}  // namespace slimkv
