#include "kernels/matmul.h"

#include <sys/mman.h>

#include <algorithm>
#include <cmath>
#include <vector>

#include "core/check.h"
#include "core/half.h"
#include "kernels/dot.h"

namespace slimkv {
namespace {

constexpr int64_t kInlineMacs = 1 << 16;  // below this much work a matmul runs on the calling thread

// One row of W against every token.
template <typename DotRow>
void run_rows(const WeightView& w, int64_t num_tokens, int64_t rows_out, float* y, ThreadPool* pool,
              DotRow dot_row) {
  auto body = [&](int64_t r0, int64_t r1, int32_t) {
    for (int64_t r = r0; r < r1; ++r) {
      for (int64_t t = 0; t < num_tokens; ++t) y[t * rows_out + r] = dot_row(r, t);
    }
  };
  int64_t macs = w.rows * w.cols * num_tokens;
  if (pool == nullptr || macs < kInlineMacs) {
    body(0, w.rows, 0);
  } else {
    pool->parallel_for(w.rows, 16, body);
  }
}

}  // namespace

void advise_huge_pages(void* p, size_t bytes) {
  constexpr uintptr_t kHuge = 2u << 20;
  const uintptr_t b = (reinterpret_cast<uintptr_t>(p) + kHuge - 1) & ~(kHuge - 1);
  const uintptr_t e = (reinterpret_cast<uintptr_t>(p) + bytes) & ~(kHuge - 1);
  if (e > b) ::madvise(reinterpret_cast<void*>(b), e - b, MADV_HUGEPAGE);
}

int64_t panel_floats(const WeightView& w) { return (w.rows + kPanelRows - 1) / kPanelRows * w.cols * kPanelRows; }

WeightView pack_panels(const WeightView& w, float* dst) {
  SLIMKV_CHECK(w.dtype == DType::F32 && !w.panel, "pack_panels: needs a row-major F32 view");
  std::fill(dst, dst + panel_floats(w), 0.0f);
  const float* src = static_cast<const float*>(w.data);
  for (int64_t r = 0; r < w.rows; ++r) {
    float* d = dst + (r / kPanelRows) * w.cols * kPanelRows + r % kPanelRows;
    for (int64_t k = 0; k < w.cols; ++k) d[k * kPanelRows] = src[r * w.cols + k];
  }
  WeightView out = w;
  out.data = dst;
  out.panel = true;
  return out;
}

namespace {

// Scalar reference for panel weights: y[t, r] = fma chain over k, in order.
void matmul_panels_ref(const WeightView& w, const float* x, int64_t T, float* y, int64_t r0, int64_t r1) {
  const float* p = static_cast<const float*>(w.data);
  for (int64_t r = r0; r < r1; ++r) {
    const float* col = p + (r / kPanelRows) * w.cols * kPanelRows + r % kPanelRows;
    for (int64_t t = 0; t < T; ++t) {
      float s = 0;
      for (int64_t k = 0; k < w.cols; ++k) s = std::fma(col[k * kPanelRows], x[t * w.cols + k], s);
      y[t * w.rows + r] = s;
    }
  }
}

}  // namespace

void matmul(const WeightView& w, const float* x, int64_t num_tokens, float* y, ThreadPool* pool, Isa isa) {
  SLIMKV_CHECK(w.dtype != DType::BF16, "matmul: BF16 weights must be converted to F32 at load time");
  const DotKernels& k = dot_kernels(isa);
  if (w.panel) {  // threads split whole panels
    const int64_t panels = (w.rows + kPanelRows - 1) / kPanelRows;
    auto body = [&](int64_t p0, int64_t p1, int32_t) {
      const int64_t r0 = p0 * kPanelRows, r1 = std::min(w.rows, p1 * kPanelRows);
      if (k.gemm_panels == nullptr || !k.gemm_panels(w, x, num_tokens, y, r0, r1)) {
        matmul_panels_ref(w, x, num_tokens, y, r0, r1);
      }
    };
    if (pool == nullptr || w.rows * w.cols * num_tokens < kInlineMacs) body(0, panels, 0);
    else pool->parallel_for(panels, 1, body);
    return;
  }
  const int64_t cols = w.cols;
  const void* xin = x;
  const int64_t nb = cols / kQuantBlock;
  if (w.dtype == DType::Q8_0 || w.dtype == DType::Q4_0) {
    thread_local std::vector<Q8_0Block> xq;  // [T, cols/32] quantized activations, reused across calls
    if (static_cast<int64_t>(xq.size()) < num_tokens * nb) xq.resize(num_tokens * nb);
    for (int64_t t = 0; t < num_tokens; ++t) k.quantize_q8_0(x + t * cols, xq.data() + t * nb, cols);
    xin = xq.data();
  }
  if (k.gemm != nullptr) {  // blocked kernel over a range of rows
    auto body = [&](int64_t r0, int64_t r1, int32_t) {
      k.gemm(w.dtype, w.row(r0), r1 - r0, cols, xin, num_tokens, y + r0, w.rows);
    };
    if (pool == nullptr || w.rows * cols * num_tokens < kInlineMacs) body(0, w.rows, 0);
    else pool->parallel_for(w.rows, 16, body);
    return;
  }
  const auto* xq = static_cast<const Q8_0Block*>(xin);
  switch (w.dtype) {
    case DType::F32:
      run_rows(w, num_tokens, w.rows, y, pool, [&](int64_t r, int64_t t) {
        return k.f32(static_cast<const float*>(w.data) + r * cols, x + t * cols, cols);
      });
      return;
    case DType::F16:
      run_rows(w, num_tokens, w.rows, y, pool, [&](int64_t r, int64_t t) {
        return k.f16_f32(static_cast<const uint16_t*>(w.data) + r * cols, x + t * cols, cols);
      });
      return;
    case DType::Q8_0:
      run_rows(w, num_tokens, w.rows, y, pool, [&](int64_t r, int64_t t) {
        return k.q8_0_q8_0(static_cast<const Q8_0Block*>(w.data) + r * nb, xq + t * nb, nb);
      });
      return;
    case DType::Q4_0:
      run_rows(w, num_tokens, w.rows, y, pool, [&](int64_t r, int64_t t) {
        return k.q4_0_q8_0(static_cast<const Q4_0Block*>(w.data) + r * nb, xq + t * nb, nb);
      });
      return;
    case DType::BF16:
    case DType::I32:  // integer tables never reach a matmul (make_weight refuses them)
      return;
  }
}

void dequantize_row(const WeightView& w, int64_t r, float* out) {
  if (w.panel) {  // F32 panels [rows / 16, cols, 16]: gather the row
    const float* base = static_cast<const float*>(w.data) + (r / kPanelRows) * w.cols * kPanelRows + r % kPanelRows;
    for (int64_t i = 0; i < w.cols; ++i) out[i] = base[i * kPanelRows];
    return;
  }
  const uint8_t* p = w.row(r);
  switch (w.dtype) {
    case DType::F32:
      for (int64_t i = 0; i < w.cols; ++i) out[i] = reinterpret_cast<const float*>(p)[i];
      return;
    case DType::F16:
      for (int64_t i = 0; i < w.cols; ++i) out[i] = fp16_to_fp32(reinterpret_cast<const uint16_t*>(p)[i]);
      return;
    case DType::BF16:
      for (int64_t i = 0; i < w.cols; ++i) out[i] = bf16_to_fp32(reinterpret_cast<const uint16_t*>(p)[i]);
      return;
    case DType::I32:
      for (int64_t i = 0; i < w.cols; ++i) out[i] = static_cast<float>(reinterpret_cast<const int32_t*>(p)[i]);
      return;
    case DType::Q8_0: {
      const auto* b = reinterpret_cast<const Q8_0Block*>(p);
      for (int64_t k = 0; k < w.cols / 32; ++k) {
        float d = fp16_to_fp32(b[k].d);
        for (int j = 0; j < 32; ++j) out[k * 32 + j] = d * b[k].qs[j];
      }
      return;
    }
    case DType::Q4_0: {
      const auto* b = reinterpret_cast<const Q4_0Block*>(p);
      for (int64_t k = 0; k < w.cols / 32; ++k) {
        float d = fp16_to_fp32(b[k].d);
        for (int j = 0; j < 16; ++j) {
          out[k * 32 + j] = d * (int(b[k].qs[j] & 0x0F) - 8);
          out[k * 32 + j + 16] = d * (int(b[k].qs[j] >> 4) - 8);
        }
      }
      return;
    }
  }
}

}  // namespace slimkv
