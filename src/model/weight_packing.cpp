#include "model/weight_packing.h"

namespace slimkv {

void pack_weights_for_kernels(Model& m, Isa isa) {
  if (isa != Isa::Avx512) return;  // the panel kernel exists for AVX-512; other ISAs use row-major dots
  auto pack = [&](WeightView& w) {
    if (w.dtype != DType::F32 || w.panel) return;
    auto storage = std::make_unique<std::vector<float>>();
    w = pack_panels(w, *storage);
    m.owned_f32.push_back(std::move(storage));
  };
  for (auto& l : m.layers) {
    for (WeightView* w : {&l.wq, &l.wk, &l.wv, &l.wo, &l.w1, &l.w2, &l.w3}) pack(*w);
  }
  pack(m.output);  // a tied classifier gets its own packed copy; tok_embd stays row-major for lookups
}

}  // namespace slimkv
