#include "model/weight_packing.h"

namespace slimkv {

void pack_weights_for_kernels(Model& m, Isa isa) {
  if (isa != Isa::Avx512) return;  // the panel kernel exists for AVX-512; other ISAs use row-major dots
  std::vector<WeightView*> views;
  for (auto& l : m.layers) {
    for (WeightView* w : l.matrices()) views.push_back(w);
  }
  views.push_back(&m.output);  // a tied classifier gets its own packed copy; tok_embd stays row-major for lookups
  if (m.hc_head_fn.data) views.push_back(&m.hc_head_fn);
  int64_t total = 0;
  for (WeightView* w : views) {
    if (w->dtype == DType::F32 && !w->panel) total += panel_floats(*w);
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
    const int64_t n = panel_floats(*w);
    *w = pack_panels(*w, dst);
    dst += n;
  }
  m.owned_f32.push_back(std::move(arena));
}

}  // namespace slimkv
