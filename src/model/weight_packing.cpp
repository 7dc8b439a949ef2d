#include "model/weight_packing.h"

#include <algorithm>
#include <atomic>
#include <memory>
#include <thread>
#include <vector>

#include "kernels/kquant_panels.h"

namespace slimkv {
namespace {

bool packs_quantized(const WeightView& w) {
  return (quant_panels_fit(w) || has_kquant_panels(w.dtype) || w.dtype == DType::F16) && !w.panel &&
         w.data != nullptr;
}
int64_t quantized_panel_bytes(const WeightView& w) {  // rounded up to 64: every view starts 64-byte aligned
  return (panel_view_bytes(w) + 63) / 64 * 64;
}
WeightView pack_quantized(const WeightView& w, uint8_t* dst) {
  if (has_quant_panels(w.dtype)) return pack_quant_panels(w, dst);
  return w.dtype == DType::F16 ? pack_panels(w, dst) : pack_kquant_panels(w, dst);
}

}  // namespace

void pack_weights_for_kernels(Model& m, Isa isa) {
  if (isa != Isa::Avx512) return;  // the panel kernel exists for AVX-512; other ISAs use row-major dots
  std::vector<WeightView*> views;
  for (auto& l : m.layers) {
    for (WeightView* w : l.matrices()) views.push_back(w);
  }
  for (auto& h : m.mtp) {
    for (WeightView* w : h.layer.matrices()) views.push_back(w);
    for (WeightView* w : {&h.eh_proj, &h.head}) {
      if (w->data) views.push_back(w);  // an empty head: the trunk's output
    }
  }
  views.push_back(&m.output);  // a tied classifier gets its own packed copy; tok_embd stays row-major for lookups
  if (m.hc_head_fn.data) views.push_back(&m.hc_head_fn);
  // F16 / Q4_0 / Q8_0 / Q4_K / Q5_K / Q6_K / IQ4_XS: interleaved 16-row panels (matmul.h, kquant_panels.h: one
  // FMA or VNNI instruction serves 16 rows), one byte arena; every panel view starts 64-byte aligned.
  int64_t quant_bytes = 0;
  for (WeightView* w : views) {
    if (packs_quantized(*w)) quant_bytes += quantized_panel_bytes(*w);
  }
  if (quant_bytes > 0) {
    auto bytes = std::make_shared<std::vector<uint8_t>>();
    bytes->reserve(static_cast<size_t>(quant_bytes + 64));
    advise_huge_pages(bytes->data(), static_cast<size_t>(quant_bytes + 64));
    bytes->resize(static_cast<size_t>(quant_bytes + 64));
    uint8_t* dst = bytes->data() + (64 - reinterpret_cast<uintptr_t>(bytes->data()) % 64) % 64;  // 64-byte aligned
    std::vector<std::pair<WeightView*, uint8_t*>> jobs;  // disjoint destinations, packed on every core
    for (WeightView* w : views) {
      if (!packs_quantized(*w)) continue;
      jobs.emplace_back(w, dst);
      dst += quantized_panel_bytes(*w);
    }
    std::atomic<size_t> next{0};
    auto worker = [&] {
      for (size_t i = next++; i < jobs.size(); i = next++) *jobs[i].first = pack_quantized(*jobs[i].first, jobs[i].second);
    };
    std::vector<std::thread> threads;
    const size_t workers = std::min<size_t>(std::max(1u, std::thread::hardware_concurrency()), jobs.size());
    const size_t extra = workers > 0 ? workers - 1 : 0;
    for (size_t t = 0; t < extra; ++t) threads.emplace_back(worker);
    worker();
    for (auto& t : threads) t.join();
    m.keepalive.push_back(bytes);
  }
  int64_t total = 0;
  for (WeightView* w : views) {
    if (w->dtype == DType::F32 && !w->panel) total += panel_elems(*w);
  }
  if (total == 0) return;
  // One arena in decode order, on huge pages: a decode step streams it from end to end.
  auto arena = std::make_unique<std::vector<float>>();
  arena->reserve(static_cast<size_t>(total));  // fresh, untouched memory
  advise_huge_pages(arena->data(), static_cast<size_t>(total) * sizeof(float));
  arena->resize(static_cast<size_t>(total));
  float* dst = arena->data();
  for (WeightView* w : views) {
    if (w->dtype != DType::F32 || w->panel) continue;
    const int64_t n = panel_elems(*w);
    *w = pack_panels(*w, dst);
    dst += n;
  }
  m.owned_f32.push_back(std::move(arena));
}

int64_t dequantize_weights(Model& m, Isa isa) {
  std::vector<WeightView*> views;
  for (auto& l : m.layers) {
    for (WeightView* w : l.matrices()) views.push_back(w);
  }
  for (WeightView* w : {&m.tok_embd, &m.output, &m.hc_head_fn}) views.push_back(w);
  for (auto& h : m.mtp) {
    for (WeightView* w : h.layer.matrices()) views.push_back(w);
    for (WeightView* w : {&h.eh_proj, &h.embed, &h.head}) views.push_back(w);  // empty ones are skipped
  }
  int64_t converted = 0;
  for (WeightView* w : views) {
    if (w->data == nullptr || w->dtype == DType::F32) continue;
    std::vector<float> f(static_cast<size_t>(w->rows * w->cols));
    for (int64_t r = 0; r < w->rows; ++r) dequantize_row(*w, r, f.data() + r * w->cols);
    *w = WeightView{DType::F32, w->rows, w->cols, m.own_f32(std::move(f))};
    ++converted;
  }
  pack_weights_for_kernels(m, isa);
  return converted;
}

}  // namespace slimkv
