// Fuzz target: safetensors header and tensor-range validation, then DeepSeek's block-scaled storage: every FP8
// (F8_E4M3) or FP4 (I8) matrix the file holds is decoded with its scale sibling (model/block_scaled.h), at the
// shape the file claims.
#include "core/check.h"
#include "formats/safetensors_file.h"
#include "model/block_scaled.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  try {
    auto f = slimkv::SafetensorsFile::from_bytes({data, size}, "fuzz.safetensors");
    auto ref = [](const slimkv::SafetensorsTensor& t) {
      return slimkv::TensorRef{t.name, t.dtype, t.shape, t.data, t.size_bytes};
    };
    for (const auto& [name, t] : f->tensors()) {
      if (!slimkv::is_block_scaled(t.dtype) || t.shape.size() != 2) continue;
      const int64_t cols = t.dtype == slimkv::DType::I8 ? t.shape[1] * 2 : t.shape[1];  // FP4: two values a byte
      for (const std::string& sn : slimkv::scale_names_for(name)) {
        const slimkv::SafetensorsTensor* s = f->find(sn);
        if (!s) continue;
        try {
          slimkv::decode_block_scaled(ref(t), ref(*s), t.shape[0], cols);
        } catch (const slimkv::Error&) {
        }
      }
    }
  } catch (const slimkv::Error&) {
  }
  return 0;
}
