#include "kernels/matmul.h"

#include <sys/mman.h>

#include <algorithm>
#include <cmath>
#include <vector>

#include "core/check.h"
#include "core/half.h"
#include "kernels/dot.h"
#include "kernels/kquant_panels.h"
#include "kernels/type_traits.h"

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

// Q8_K activations [T, nsb] and, per distinct K-quant dtype among the matrices (at most 4), their terms
// [T, nsb, 16]: computed once on the calling thread, read by every thread.
struct KQuantActivations {
  const Q8_KBlock* x = nullptr;
  DType dtypes[4] = {};
  const int32_t* terms[4] = {};
  int num_dtypes = 0;
  const int32_t* terms_of(DType t) const {
    for (int i = 0; i < num_dtypes; ++i) {
      if (dtypes[i] == t) return terms[i];
    }
    return nullptr;
  }
};

KQuantActivations kquant_activations(const WeightView* const* ws, int n, const float* x, int64_t T, Isa isa) {
  const int64_t cols = ws[0]->cols, nsb = cols / 256;
  thread_local std::vector<Q8_KBlock> xk;
  thread_local std::vector<int32_t> terms[4];
  if (static_cast<int64_t>(xk.size()) < T * nsb) xk.resize(T * nsb);
  for (int64_t t = 0; t < T; ++t) quantize_activations(DType::Q8_K, x + t * cols, xk.data() + t * nsb, cols, isa);
  KQuantActivations a;
  a.x = xk.data();
  for (int i = 0; i < n; ++i) {
    if (a.terms_of(ws[i]->dtype) != nullptr) continue;
    std::vector<int32_t>& v = terms[a.num_dtypes];
    if (static_cast<int64_t>(v.size()) < T * nsb * 16) v.resize(T * nsb * 16);
    kquant_panel_terms(ws[i]->dtype, xk.data(), T, nsb, v.data());
    a.dtypes[a.num_dtypes] = ws[i]->dtype;
    a.terms[a.num_dtypes++] = v.data();
  }
  return a;
}

// Rows [r0, r1) of one K-quant panel matrix, every token; y [T, w.rows].
void kquant_rows(const WeightView& w, const KQuantActivations& a, int64_t T, float* y, int64_t r0, int64_t r1,
                 const DotKernels& k) {
  const int32_t* terms = a.terms_of(w.dtype);
  if (k.gemm_kquant_panels == nullptr || !k.gemm_kquant_panels(w, a.x, terms, T, y, r0, r1)) {
    matmul_kquant_panels_ref(w, a.x, terms, T, y, r0, r1);
  }
}

}  // namespace

void matmul_same_input(const MatmulOut* outs, int n, const float* x, int64_t num_tokens, ThreadPool* pool, Isa isa) {
  SLIMKV_CHECK(n >= 1 && n <= 4, "matmul_same_input: 1..4 matrices (got {})", n);
  const WeightView* ws[4];
  int64_t panels = 0, macs = 0;
  bool fused = true;
  for (int i = 0; i < n; ++i) {
    ws[i] = outs[i].w;
    fused = fused && ws[i]->panel && has_kquant_panels(ws[i]->dtype) && ws[i]->cols == ws[0]->cols;
    panels += (ws[i]->rows + kPanelRows - 1) / kPanelRows;
    macs += ws[i]->rows * ws[i]->cols * num_tokens;
  }
  if (!fused || pool == nullptr || macs < kInlineMacs) {  // one matmul each (the same kernels either way)
    for (int i = 0; i < n; ++i) matmul(*outs[i].w, x, num_tokens, outs[i].y, pool, isa);
    return;
  }
  const DotKernels& k = dot_kernels(isa);
  const KQuantActivations a = kquant_activations(ws, n, x, num_tokens, isa);
  // The matrices' panels as one range [0, panels): a chunk may end one matrix and start the next.
  pool->parallel_for(panels, 1, [&](int64_t g0, int64_t g1, int32_t) {
    int64_t base = 0;
    for (int i = 0; i < n && base < g1; ++i) {
      const WeightView& w = *ws[i];
      const int64_t np = (w.rows + kPanelRows - 1) / kPanelRows;
      const int64_t p0 = std::max<int64_t>(g0 - base, 0), p1 = std::min<int64_t>(g1 - base, np);
      if (p0 < p1) kquant_rows(w, a, num_tokens, outs[i].y, p0 * kPanelRows, std::min(w.rows, p1 * kPanelRows), k);
      base += np;
    }
  });
}

int64_t panel_view_bytes(const WeightView& w) {
  if (has_kquant_panels(w.dtype)) return kquant_panel_bytes(w);
  if (has_quant_panels(w.dtype)) return quant_panel_bytes(w);
  return panel_elems(w) * static_cast<int64_t>(w.dtype == DType::F16 ? 2 : 4);
}

int64_t weight_view_bytes(const WeightView& w) {
  if (w.data == nullptr) return 0;
  return w.panel ? panel_view_bytes(w) : w.rows * w.row_bytes();
}

void advise_huge_pages(void* p, size_t bytes) {
  constexpr uintptr_t kHuge = 2u << 20;
  const uintptr_t b = (reinterpret_cast<uintptr_t>(p) + kHuge - 1) & ~(kHuge - 1);
  const uintptr_t e = (reinterpret_cast<uintptr_t>(p) + bytes) & ~(kHuge - 1);
  if (e > b) ::madvise(reinterpret_cast<void*>(b), e - b, MADV_HUGEPAGE);
}

int64_t panel_elems(const WeightView& w) { return (w.rows + kPanelRows - 1) / kPanelRows * w.cols * kPanelRows; }

namespace {

template <typename T>
void pack_panels_of(const WeightView& w, T* dst) {
  std::fill(dst, dst + panel_elems(w), T{0});
  const T* src = static_cast<const T*>(w.data);
  for (int64_t r = 0; r < w.rows; ++r) {
    T* d = dst + (r / kPanelRows) * w.cols * kPanelRows + r % kPanelRows;
    for (int64_t k = 0; k < w.cols; ++k) d[k * kPanelRows] = src[r * w.cols + k];
  }
}

}  // namespace

WeightView pack_panels(const WeightView& w, void* dst) {
  SLIMKV_CHECK((w.dtype == DType::F32 || w.dtype == DType::F16) && !w.panel,
               "pack_panels: needs a row-major F32 or F16 view");
  if (w.dtype == DType::F32) pack_panels_of(w, static_cast<float*>(dst));
  else pack_panels_of(w, static_cast<uint16_t*>(dst));
  WeightView out = w;
  out.data = dst;
  out.panel = true;
  return out;
}

bool has_quant_panels(DType t) { return t == DType::Q4_0 || t == DType::Q8_0; }

bool quant_panels_fit(const WeightView& w) { return has_quant_panels(w.dtype) && (w.cols / kQuantBlock) % 2 == 0; }

QuantPanels quant_panels(const WeightView& w) {
  return {static_cast<const uint8_t*>(w.data), w.cols / kQuantBlock, w.dtype == DType::Q4_0 ? 4 : 8};
}

int64_t quant_panel_bytes(const WeightView& w) {
  QuantPanels q{nullptr, w.cols / kQuantBlock, w.dtype == DType::Q4_0 ? 4 : 8};
  return (w.rows + kPanelRows - 1) / kPanelRows * q.panel_bytes();
}

WeightView pack_quant_panels(const WeightView& w, uint8_t* dst) {
  SLIMKV_CHECK(has_quant_panels(w.dtype) && !w.panel, "pack_quant_panels: needs a row-major Q4_0 / Q8_0 view");
  const QuantPanels q{dst, w.cols / kQuantBlock, w.dtype == DType::Q4_0 ? 4 : 8};
  const int64_t panels = (w.rows + kPanelRows - 1) / kPanelRows;
  std::fill(dst, dst + quant_panel_bytes(w), uint8_t{0});
  for (int64_t p = 0; p < panels; ++p) {
    for (int64_t r = 0; r < kPanelRows && p * kPanelRows + r < w.rows; ++r) {
      const uint8_t* row = w.row(p * kPanelRows + r);
      for (int64_t k = 0; k < q.nb; ++k) {
        auto* d = const_cast<uint16_t*>(q.scales(p, k));
        auto* qs = const_cast<uint8_t*>(q.qs(p, k));
        if (w.dtype == DType::Q4_0) {
          const auto& src = reinterpret_cast<const Q4_0Block*>(row)[k];
          for (int j = 0; j < 4; ++j) std::copy_n(src.qs + 4 * j, 4, qs + (j * kPanelRows + r) * 4);
          d[r] = src.d;
        } else {
          const auto& src = reinterpret_cast<const Q8_0Block*>(row)[k];
          for (int j = 0; j < 8; ++j) {
            for (int b = 0; b < 4; ++b) qs[(j * kPanelRows + r) * 4 + b] = static_cast<uint8_t>(src.qs[4 * j + b] + 128);
          }
          d[r] = src.d;
        }
      }
    }
  }
  WeightView v = w;
  v.data = dst;
  v.panel = true;
  return v;
}

namespace {

// Row r's block k as a plain Q4_0 / Q8_0 block (the reference and dequantize_row read it so).
void unit_block(const WeightView& w, int64_t r, int64_t k, void* out) {
  const QuantPanels q = quant_panels(w);
  const int64_t p = r / kPanelRows, i = r % kPanelRows;
  const uint8_t* qs = q.qs(p, k);
  if (w.dtype == DType::Q4_0) {
    auto* b = static_cast<Q4_0Block*>(out);
    b->d = q.scales(p, k)[i];
    for (int j = 0; j < 4; ++j) std::copy_n(qs + (j * kPanelRows + i) * 4, 4, b->qs + 4 * j);
  } else {
    auto* b = static_cast<Q8_0Block*>(out);
    b->d = q.scales(p, k)[i];
    for (int j = 0; j < 8; ++j) {
      for (int c = 0; c < 4; ++c) b->qs[4 * j + c] = static_cast<int8_t>(qs[(j * kPanelRows + i) * 4 + c] - 128);
    }
  }
}

}  // namespace

void quant_panel_terms(DType t, const Q8_0Block* x, int64_t num_blocks, int32_t* xcorr) {
  const int32_t offset = t == DType::Q4_0 ? 8 : 128;
  for (int64_t i = 0; i < num_blocks; ++i) {
    int32_t s = 0;
    for (int8_t v : x[i].qs) s += v;
    xcorr[i] = offset * s;
  }
}

void matmul_quant_panels_ref(const WeightView& w, const void* x, int64_t T, float* y, int64_t r0, int64_t r1) {
  const int64_t nb = w.cols / kQuantBlock;
  const auto* xb = static_cast<const Q8_0Block*>(x);
  const bool q4 = w.dtype == DType::Q4_0;
  Q8_0Block b8;
  Q4_0Block b4;
  for (int64_t r = r0; r < r1; ++r) {
    for (int64_t t = 0; t < T; ++t) {
      float acc = 0;
      for (int64_t k = 0; k < nb; ++k) {
        const Q8_0Block& a = xb[t * nb + k];
        int32_t isum = 0;
        uint16_t d = 0;
        if (q4) {
          unit_block(w, r, k, &b4);
          for (int j = 0; j < 16; ++j) isum += ((b4.qs[j] & 0x0F) - 8) * a.qs[j] + ((b4.qs[j] >> 4) - 8) * a.qs[16 + j];
          d = b4.d;
        } else {
          unit_block(w, r, k, &b8);
          for (int j = 0; j < 32; ++j) isum += b8.qs[j] * a.qs[j];
          d = b8.d;
        }
        acc = std::fma(static_cast<float>(isum), fp16_to_fp32(d) * fp16_to_fp32(a.d), acc);
      }
      y[t * w.rows + r] = acc;
    }
  }
}

namespace {

inline float widen(float v) { return v; }
inline float widen(uint16_t v) { return fp16_to_fp32(v); }

// Scalar reference for F32 / F16 panel weights: y[t, r] = fma chain over k, in order.
template <typename T>
void matmul_panels_ref(const WeightView& w, const float* x, int64_t num_tokens, float* y, int64_t r0, int64_t r1) {
  const T* p = static_cast<const T*>(w.data);
  for (int64_t r = r0; r < r1; ++r) {
    const T* col = p + (r / kPanelRows) * w.cols * kPanelRows + r % kPanelRows;
    for (int64_t t = 0; t < num_tokens; ++t) {
      float s = 0;
      for (int64_t k = 0; k < w.cols; ++k) s = std::fma(widen(col[k * kPanelRows]), x[t * w.cols + k], s);
      y[t * w.rows + r] = s;
    }
  }
}

}  // namespace

void matmul(const WeightView& w, const float* x, int64_t num_tokens, float* y, ThreadPool* pool, Isa isa) {
  SLIMKV_CHECK(w.dtype != DType::BF16, "matmul: BF16 weights must be converted to F32 at load time");
  const DotKernels& k = dot_kernels(isa);
  if (w.panel) {  // threads split whole panels; rows(r0, r1) computes rows [r0, r1) for every token
    auto split = [&](auto rows) {
      const int64_t panels = (w.rows + kPanelRows - 1) / kPanelRows;
      auto body = [&](int64_t p0, int64_t p1, int32_t) { rows(p0 * kPanelRows, std::min(w.rows, p1 * kPanelRows)); };
      if (pool == nullptr || w.rows * w.cols * num_tokens < kInlineMacs) body(0, panels, 0);
      else pool->parallel_for(panels, 1, body);
    };
    if (has_kquant_panels(w.dtype)) {  // Q8_K activations and their per-sub-block terms, once for all threads
      const WeightView* ws[1] = {&w};
      const KQuantActivations a = kquant_activations(ws, 1, x, num_tokens, isa);
      split([&](int64_t r0, int64_t r1) { kquant_rows(w, a, num_tokens, y, r0, r1, k); });
      return;
    }
    if (!has_quant_panels(w.dtype)) {  // F32 / F16
      split([&](int64_t r0, int64_t r1) {
        if (k.gemm_panels != nullptr && k.gemm_panels(w, x, num_tokens, y, r0, r1)) return;
        if (w.dtype == DType::F16) matmul_panels_ref<uint16_t>(w, x, num_tokens, y, r0, r1);
        else matmul_panels_ref<float>(w, x, num_tokens, y, r0, r1);
      });
      return;
    }
    const int64_t nb = w.cols / kQuantBlock;  // Q4_0 / Q8_0: Q8_0 activations first
    thread_local std::vector<Q8_0Block> xq;
    if (static_cast<int64_t>(xq.size()) < num_tokens * nb) xq.resize(num_tokens * nb);
    for (int64_t t = 0; t < num_tokens; ++t) {
      quantize_activations(DType::Q8_0, x + t * w.cols, xq.data() + t * nb, w.cols, isa);
    }
    thread_local std::vector<int32_t> xcorr;  // [T, nb], once for all threads; the reference does not read it
    if (k.gemm_quant_panels != nullptr) {
      if (static_cast<int64_t>(xcorr.size()) < num_tokens * nb) xcorr.resize(num_tokens * nb);
      quant_panel_terms(w.dtype, xq.data(), num_tokens * nb, xcorr.data());
    }
    const Q8_0Block* xin = xq.data();
    const int32_t* cin = xcorr.data();
    split([&](int64_t r0, int64_t r1) {
      if (k.gemm_quant_panels == nullptr || !k.gemm_quant_panels(w, xin, cin, num_tokens, y, r0, r1)) {
        matmul_quant_panels_ref(w, xin, num_tokens, y, r0, r1);
      }
    });
    return;
  }
  const int64_t cols = w.cols;
  const TypeTraits& tt = type_traits(w.dtype);
  SLIMKV_CHECK(tt.info->weight, "matmul: {} is not a weight type", tt.info->name);
  SLIMKV_CHECK(cols % tt.info->block_elems == 0, "matmul: {} columns are not whole {} blocks", cols, tt.info->name);
  // Activations in the type's pairing (Q8_0 / Q8_1 / Q8_K), [T, x_row_bytes], reused across calls.
  const DType act = tt.info->act;
  const void* xin = x;
  int64_t x_row_bytes = cols * static_cast<int64_t>(sizeof(float));
  if (act != DType::F32) {
    x_row_bytes = dtype_row_bytes(act, cols);
    thread_local std::vector<uint8_t> xq;
    if (static_cast<int64_t>(xq.size()) < num_tokens * x_row_bytes) xq.resize(num_tokens * x_row_bytes);
    for (int64_t t = 0; t < num_tokens; ++t) quantize_activations(act, x + t * cols, xq.data() + t * x_row_bytes, cols, isa);
    xin = xq.data();
  }
  const bool inline_run = pool == nullptr || w.rows * cols * num_tokens < kInlineMacs;
  if (const GemmFn gemm = tt.gemm[static_cast<int>(isa)]) {  // blocked kernel over a range of rows
    auto body = [&](int64_t r0, int64_t r1, int32_t) { gemm(w.row(r0), r1 - r0, cols, xin, num_tokens, y + r0, w.rows); };
    if (inline_run) body(0, w.rows, 0);
    else pool->parallel_for(w.rows, 16, body);
    return;
  }
  const VecDotFn dot = tt.dot[static_cast<int>(isa)];
  const auto* xb = static_cast<const uint8_t*>(xin);
  run_rows(w, num_tokens, w.rows, y, pool,
           [&](int64_t r, int64_t t) { return dot(w.row(r), xb + t * x_row_bytes, cols); });
}

void dequantize_row(const WeightView& w, int64_t r, float* out) {
  if (w.panel && has_kquant_panels(w.dtype)) return dequantize_kquant_panel_row(w, r, out);
  if (w.panel && has_quant_panels(w.dtype)) {  // gather the row back into plain blocks
    alignas(8) uint8_t block[sizeof(Q8_0Block)];
    for (int64_t k = 0; k < w.cols / kQuantBlock; ++k) {
      unit_block(w, r, k, block);
      type_traits(w.dtype).to_float(block, out + k * kQuantBlock, kQuantBlock);
    }
    return;
  }
  if (w.panel && w.dtype == DType::F16) {  // F16 panels [rows / 16, cols, 16]: gather the row
    const auto* base = static_cast<const uint16_t*>(w.data) + (r / kPanelRows) * w.cols * kPanelRows + r % kPanelRows;
    for (int64_t i = 0; i < w.cols; ++i) out[i] = fp16_to_fp32(base[i * kPanelRows]);
    return;
  }
  if (w.panel) {  // F32 panels: gather the row
    const float* base = static_cast<const float*>(w.data) + (r / kPanelRows) * w.cols * kPanelRows + r % kPanelRows;
    for (int64_t i = 0; i < w.cols; ++i) out[i] = base[i * kPanelRows];
    return;
  }
  type_traits(w.dtype).to_float(w.row(r), out, w.cols);
}

}  // namespace slimkv
