// Fuzz target: model metadata -> ModelConfig, structure-aware. The input picks a family and a list of its
// hyper-parameter keys with typed values (any key of the table, any of six GGUF types, edge values likely); they
// are written as a GGUF (general.architecture + "<arch>.<key>") and as a config.json (the HF names), and each goes
// through the family's reader, finalize() and validate(). Any input must end in success or Error; a config that
// validates must have positive sizes and one LayerConfig per layer.
#include <cmath>
#include <cstring>
#include <limits>

#include <nlohmann/json.hpp>

#include "core/check.h"
#include "formats/gguf_file.h"
#include "formats/gguf_writer.h"
#include "model/family.h"
#include "model/hparams.h"

namespace {

struct Reader {
  const uint8_t* p;
  size_t n;
  uint8_t byte() { return n ? (--n, *p++) : 0; }
  uint32_t u32() { return byte() | byte() << 8 | byte() << 16 | static_cast<uint32_t>(byte()) << 24; }
  // Edge values half the time (0, 1, -1, 2^31-1, a layer-ish count, ...), else raw bits.
  int32_t int_value() {
    static const int32_t edges[] = {0, 1, 2, 4, 8, 64, 128, 512, -1, 2147483647, -2147483647 - 1, 1 << 20, 3, 7};
    const uint8_t b = byte();
    return b & 1 ? edges[(b >> 1) % std::size(edges)] : static_cast<int32_t>(u32());
  }
  float real_value() {
    static const float edges[] = {0.f, 1e-6f, 0.5f, 1.f, 1e4f, -1.f, 1e30f, std::numeric_limits<float>::infinity(),
                                  std::numeric_limits<float>::quiet_NaN()};
    const uint8_t b = byte();
    if (b & 1) return edges[(b >> 1) % std::size(edges)];
    const uint32_t bits = u32();
    float f;
    std::memcpy(&f, &bits, 4);
    return f;
  }
};

// config.json paths are dotted ("rope_scaling.factor" = nested objects).
nlohmann::json::json_pointer ptr(const char* dotted) {
  std::string p = std::string("/") + dotted;
  for (char& ch : p) ch = ch == '.' ? '/' : ch;
  return nlohmann::json::json_pointer(p);
}

void check_config(const slimkv::ModelConfig& c) {
  if (c.num_layers <= 0 || c.dim <= 0 || static_cast<int32_t>(c.layers.size()) != c.num_layers) __builtin_trap();
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  Reader in{data, size};
  const auto& families = slimkv::model_families();
  const slimkv::ModelFamily& family = *families[in.byte() % families.size()];
  const auto& names = slimkv::hparam_names();
  slimkv::GgufWriter w;
  w.add_string("general.architecture", family.gguf_arch);
  nlohmann::json hf = nlohmann::json::object();
  auto put_hf = [&](const char* path, nlohmann::json v) {
    if (!path) return;
    try {
      hf[ptr(path)] = std::move(v);
    } catch (const nlohmann::json::exception&) {  // "a.b" where "a" already holds a value: skip it
    }
  };
  for (int keys = 0; in.n > 0 && keys < 64; ++keys) {
    const slimkv::HpName& k = names[in.byte() % names.size()];
    const std::string key = family.gguf_arch + "." + k.gguf;
    const char* hf_key = k.hf.empty() ? nullptr : k.hf[0];
    switch (in.byte() % 6) {
      case 0: {
        const int32_t v = in.int_value();
        w.add_u32(key, static_cast<uint32_t>(v));
        put_hf(hf_key, static_cast<uint32_t>(v));
        break;
      }
      case 1: {
        const int32_t v = in.int_value();
        w.add_i32(key, v);
        put_hf(hf_key, v);
        break;
      }
      case 2: {
        const float v = in.real_value();
        w.add_f32(key, v);
        if (std::isfinite(v)) put_hf(hf_key, v);
        break;
      }
      case 3: {
        const bool v = in.byte() & 1;
        w.add_bool(key, v);
        put_hf(hf_key, v);
        break;
      }
      case 4: {
        std::string v(in.byte() % 12, 'a');
        for (char& ch : v) ch = static_cast<char>(in.byte());
        w.add_string(key, v);
        put_hf(hf_key, v);
        break;
      }
      default: {
        std::vector<int32_t> v(in.byte() % 70);
        for (int32_t& x : v) x = in.int_value();
        w.add_i32s(key, v);
        put_hf(hf_key, v);
        break;
      }
    }
  }
  try {
    const std::vector<uint8_t> bytes = w.bytes();
    auto g = slimkv::GgufFile::from_bytes({bytes.data(), bytes.size()}, "fuzz.gguf");
    slimkv::ModelConfig c;
    family.read_hparams(*slimkv::gguf_hparams(*g, family.gguf_arch), c);
    c.finalize();
    c.validate();
    check_config(c);
    (void)c.summary();
  } catch (const slimkv::Error&) {
  }
  try {
    std::string text;
    try {
      text = hf.dump();
    } catch (const nlohmann::json::exception&) {
      return 0;  // a string that is not UTF-8: not a config.json
    }
    slimkv::ModelConfig c;
    family.read_hparams(*slimkv::hf_hparams(text, "config.json"), c);
    c.finalize();
    c.validate();
    check_config(c);
    (void)c.summary();
  } catch (const slimkv::Error&) {
  }
  return 0;
}
