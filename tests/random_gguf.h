// Test helper: a random-weight GGUF of any architecture written by slimkv's own writer — the input of reference
// fixtures made with llama.cpp (`slimkv-ref`) for families that ../shared/models/synthetic does not carry. Seeded and
// deterministic (std::mt19937_64 + a Box-Muller normal: the same bytes on every machine and compiler), with the
// 512-token SentencePiece vocabulary of the shared synthetic files copied in.
// Must not know: any family's semantics (callers name the keys and tensors).
#pragma once
#include <cmath>
#include <random>

#include "formats/gguf_file.h"
#include "formats/gguf_writer.h"
#include "test_paths.h"

namespace slimkv::test {

class RandomGguf {
 public:
  // copy_vocabulary false: the caller writes its own tokenizer.* keys (writer()).
  RandomGguf(const std::string& arch, uint64_t seed, bool copy_vocabulary = true) : arch_(arch), rng_(seed) {
    w_.add_string("general.architecture", arch);
    w_.add_string("general.name", "slimkv random " + arch);
    if (!copy_vocabulary) return;
    // The vocabulary (tokenizer.* keys) of the shared synthetic files.
    const auto src = std::make_unique<GgufFile>(models_dir() + "/synthetic/llama/llama-f32.gguf");
    for (const auto& [key, v] : src->metadata()) {
      if (key.rfind("tokenizer.", 0) != 0) continue;
      if (v.is_array() && v.elem_type == GgufType::STRING) w_.add_strings(key, v.strings);
      else if (v.is_array() && (v.elem_type == GgufType::F32 || v.elem_type == GgufType::F64)) {
        w_.add_f32s(key, std::vector<float>(v.floats.begin(), v.floats.end()));
      } else if (v.is_array()) {
        w_.add_i32s(key, std::vector<int32_t>(v.ints.begin(), v.ints.end()));
      } else if (v.type == GgufType::STRING) {
        w_.add_string(key, v.s);
      } else if (v.type == GgufType::BOOL) {
        w_.add_bool(key, v.i != 0);
      } else {
        w_.add_u32(key, static_cast<uint32_t>(v.i));
      }
    }
  }
  // "<arch>.key" = v
  void u32(const std::string& key, uint32_t v) { w_.add_u32(arch_ + "." + key, v); }
  void f32(const std::string& key, float v) { w_.add_f32(arch_ + "." + key, v); }
  void str(const std::string& key, const std::string& v) { w_.add_string(arch_ + "." + key, v); }
  // A tensor of N(mean, stddev) values; dims in ggml order (innermost first); stored as dtype (rows of the innermost
  // dimension must then hold whole blocks).
  void normal(const std::string& name, const std::vector<int64_t>& dims, float stddev, float mean = 0.0f,
              DType dtype = DType::F32) {
    int64_t n = 1;
    for (int64_t d : dims) n *= d;
    std::vector<float> v(static_cast<size_t>(n));
    for (float& x : v) x = mean + stddev * gaussian();
    const std::vector<uint8_t> bytes = quantize_rows(dtype, v.data(), n);
    w_.add_tensor(name, dtype, dims, bytes.data(), bytes.size());
  }
  void write(const std::string& path) const { w_.write(path); }
  GgufWriter& writer() { return w_; }

 private:
  float gaussian() {  // Box-Muller on 53-bit uniforms: no library distribution, so identical everywhere
    const double u1 = (static_cast<double>(rng_() >> 11) + 1.0) / 9007199254740993.0;
    const double u2 = static_cast<double>(rng_() >> 11) / 9007199254740992.0;
    return static_cast<float>(std::sqrt(-2.0 * std::log(u1)) * std::cos(6.283185307179586 * u2));
  }
  std::string arch_;
  std::mt19937_64 rng_;
  GgufWriter w_;
};

}  // namespace slimkv::test
