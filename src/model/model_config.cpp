#include "model/model_config.h"

#include "core/check.h"

namespace slimkv {

void ModelConfig::validate() const {
  auto in = [](int64_t v, int64_t lo, int64_t hi) { return v >= lo && v <= hi; };
  SLIMKV_CHECK(in(dim, 1, 1 << 16), "model: bad embedding width {}", dim);
  SLIMKV_CHECK(in(hidden_dim, 1, 1 << 18), "model: bad FFN width {}", hidden_dim);
  SLIMKV_CHECK(in(num_layers, 1, 1024), "model: bad layer count {}", num_layers);
  SLIMKV_CHECK(in(num_heads, 1, 1024), "model: bad head count {}", num_heads);
  SLIMKV_CHECK(in(num_kv_heads, 1, num_heads) && num_heads % num_kv_heads == 0,
               "model: {} KV heads do not divide {} heads", num_kv_heads, num_heads);
  SLIMKV_CHECK(in(head_dim, 2, 1024) && head_dim % 2 == 0, "model: bad head dim {}", head_dim);
  SLIMKV_CHECK(in(rotary_dim, 2, head_dim) && rotary_dim % 2 == 0, "model: bad rotary dim {}", rotary_dim);
  SLIMKV_CHECK(in(vocab_size, 1, 1 << 22), "model: bad vocabulary size {}", vocab_size);
  SLIMKV_CHECK(in(max_seq_len, 1, 1 << 24), "model: bad context length {}", max_seq_len);
  SLIMKV_CHECK(rope_theta > 0 && rope_theta < 1e12f, "model: bad rope theta {}", rope_theta);
  SLIMKV_CHECK(rms_eps > 0 && rms_eps < 1.0f, "model: bad rms eps {}", rms_eps);
}

std::string ModelConfig::summary() const {
  return fmt::format("{}: dim {}, hidden {}, layers {}, heads {}/{} kv, head dim {}, vocab {}, ctx {}, rope {} {}",
                     format, dim, hidden_dim, num_layers, num_heads, num_kv_heads, head_dim, vocab_size, max_seq_len,
                     rope_layout == RopeLayout::Interleaved ? "interleaved" : "rotate-half", rope_theta);
}

}  // namespace slimkv
