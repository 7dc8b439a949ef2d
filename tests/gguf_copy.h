// Test helper: copies every metadata key of a GGUF file into a writer (the tests that write variants of the
// synthetic files: other RoPE keys, other tensor storage).
#pragma once
#include "formats/gguf_file.h"
#include "formats/gguf_writer.h"

namespace slimkv::test {

inline void copy_gguf_metadata(const GgufFile& g, GgufWriter& w) {
  for (const auto& [key, v] : g.metadata()) {
    if (v.is_array()) {
      if (v.elem_type == GgufType::STRING) w.add_strings(key, v.strings);
      else if (v.elem_type == GgufType::F32 || v.elem_type == GgufType::F64) {
        w.add_f32s(key, std::vector<float>(v.floats.begin(), v.floats.end()));
      } else {
        w.add_i32s(key, std::vector<int32_t>(v.ints.begin(), v.ints.end()));
      }
    } else if (v.type == GgufType::STRING) {
      w.add_string(key, v.s);
    } else if (v.is_float()) {
      w.add_f32(key, static_cast<float>(v.f));
    } else if (v.type == GgufType::BOOL) {
      w.add_bool(key, v.i != 0);
    } else if (v.type == GgufType::I32) {
      w.add_i32(key, static_cast<int32_t>(v.i));
    } else {
      w.add_u32(key, static_cast<uint32_t>(v.i));
    }
  }
}

}  // namespace slimkv::test
