// DeepSeek's released weight storage (model/block_scaled.h): FP8 e4m3 matrices with one scale per 128 x 128 block
// (E8M0, or F32 as older FP8 checkpoints), FP4 routed experts as int8 pairs with one E8M0 scale per 32 values.
// Checks: every code decodes as the OCP formats say; FP4 repacks into MXFP4 blocks holding the same numbers; the
// deepseek4 synthetic model written in that storage loads and gives, bit for bit, the logits of a GGUF that holds
// the same numbers in slimkv's types (F16 / F32 + MXFP4 experts, built here from the test's own codes), and that
// GGUF runs in llama.cpp within the MXFP4_MOE file's criteria (when the reference binary runs here).
#include <gtest/gtest.h>

#include <cmath>
#include <algorithm>
#include <random>

#include "core/half.h"
#include "core/quant_blocks.h"
#include "gguf_copy.h"
#include "hf_export.h"
#include "kernels/type_traits.h"
#include "model/block_scaled.h"
#include "reference_helpers.h"

namespace slimkv::test {
namespace release_storage {

// ---- the formats, written from their definitions (not from the loader's code) ----

float ocp_e4m3(uint8_t b) {  // S EEEE MMM, bias 7, no infinities, S.1111.111 = NaN
  const int e = (b >> 3) & 15, m = b & 7;
  const float mag = e == 15 && m == 7 ? NAN : e == 0 ? std::ldexp(static_cast<float>(m), -9)
                                                     : std::ldexp(static_cast<float>(8 + m), e - 10);
  return (b & 0x80) ? -mag : mag;
}

uint8_t encode_e4m3(float x) {  // nearest finite code (ties to the even code); codes 0..126 grow with the value
  static const std::vector<float> table = [] {
    std::vector<float> t;
    for (int c = 0; c <= 126; ++c) t.push_back(ocp_e4m3(static_cast<uint8_t>(c)));
    return t;
  }();
  const float a = std::fabs(x);
  const int hi = static_cast<int>(std::lower_bound(table.begin(), table.end(), a) - table.begin());
  int best = std::min(hi, 126);
  if (hi > 0 && hi <= 126) {
    const float dl = a - table[hi - 1], dh = table[hi] - a;
    best = dl < dh || (dl == dh && (hi - 1) % 2 == 0) ? hi - 1 : hi;
  }
  return static_cast<uint8_t>(best | (x < 0 ? 0x80 : 0));
}

constexpr float kE2m1[8] = {0, 0.5f, 1, 1.5f, 2, 3, 4, 6};

uint8_t encode_e2m1(float x) {
  const float a = std::fabs(x);
  int best = 0;
  for (int c = 1; c < 8; ++c) {
    if (std::fabs(kE2m1[c] - a) < std::fabs(kE2m1[best] - a)) best = c;
  }
  return static_cast<uint8_t>(best | (x < 0 ? 8 : 0));
}

float e2m1_value(uint8_t code) { return (code & 8 ? -1.0f : 1.0f) * kE2m1[code & 7]; }

// ---- the test's own encoders: DeepSeek's layouts ----

struct Fp8Matrix {
  StTensor weight, scale;
  std::vector<float> values;  // [rows, cols] what the codes mean
};

// One scale per 128 x 128 block: a power of two (E8M0) or amax / 448 (F32), the block's values / scale rounded.
Fp8Matrix to_fp8(const std::vector<float>& x, int64_t rows, int64_t cols, bool e8m0) {
  const int64_t br = (rows + 127) / 128, bc = (cols + 127) / 128;
  Fp8Matrix m;
  m.weight = {{rows, cols}, {}, "F8_E4M3", std::vector<uint8_t>(static_cast<size_t>(rows * cols))};
  m.scale = {{br, bc}, {}, e8m0 ? "F8_E8M0" : "F32", {}};
  m.values.resize(x.size());
  std::vector<float> scales(static_cast<size_t>(br * bc));
  for (int64_t bi = 0; bi < br; ++bi) {
    for (int64_t bj = 0; bj < bc; ++bj) {
      float amax = 0;
      for (int64_t r = bi * 128; r < std::min(rows, bi * 128 + 128); ++r) {
        for (int64_t c = bj * 128; c < std::min(cols, bj * 128 + 128); ++c) amax = std::max(amax, std::fabs(x[r * cols + c]));
      }
      float s = amax > 0 ? amax / 448.0f : 1.0f;
      if (e8m0) {
        const int k = amax > 0 ? static_cast<int>(std::ceil(std::log2(amax / 448.0f))) : 0;
        s = std::ldexp(1.0f, k);
        m.scale.raw.push_back(static_cast<uint8_t>(127 + k));
      } else {
        m.scale.data.push_back(s);
      }
      scales[bi * bc + bj] = s;
    }
  }
  for (int64_t r = 0; r < rows; ++r) {
    for (int64_t c = 0; c < cols; ++c) {
      const float s = scales[(r / 128) * bc + c / 128];
      const uint8_t code = encode_e4m3(x[r * cols + c] / s);
      m.weight.raw[r * cols + c] = code;
      m.values[r * cols + c] = ocp_e4m3(code) * s;
    }
  }
  return m;
}

struct Fp4Matrix {
  StTensor weight, scale;
  std::vector<MXFP4Block> mxfp4;  // the same numbers in GGML's block layout, built from the same codes
};

Fp4Matrix to_fp4(const std::vector<float>& x, int64_t rows, int64_t cols) {
  Fp4Matrix m;
  m.weight = {{rows, cols / 2}, {}, "I8", std::vector<uint8_t>(static_cast<size_t>(rows * cols / 2))};
  m.scale = {{rows, cols / 32}, {}, "F8_E8M0", {}};
  for (int64_t r = 0; r < rows; ++r) {
    for (int64_t b = 0; b < cols / 32; ++b) {
      const float* v = x.data() + r * cols + b * 32;
      float amax = 0;
      for (int j = 0; j < 32; ++j) amax = std::max(amax, std::fabs(v[j]));
      const int k = amax > 0 ? static_cast<int>(std::ceil(std::log2(amax / 6.0f))) : 0;
      uint8_t codes[32];
      for (int j = 0; j < 32; ++j) codes[j] = encode_e2m1(std::ldexp(v[j], -k));
      m.scale.raw.push_back(static_cast<uint8_t>(127 + k));
      for (int j = 0; j < 16; ++j) {
        m.weight.raw[r * cols / 2 + b * 16 + j] = static_cast<uint8_t>(codes[2 * j] | (codes[2 * j + 1] << 4));
      }
      MXFP4Block blk{static_cast<uint8_t>(127 + k), {}};
      for (int j = 0; j < 16; ++j) blk.qs[j] = static_cast<uint8_t>(codes[j] | (codes[j + 16] << 4));
      m.mxfp4.push_back(blk);
    }
  }
  return m;
}

TensorRef ref_of(const std::string& name, const StTensor& t, DType d) {
  return TensorRef{name, d, t.shape, t.raw.empty() ? reinterpret_cast<const uint8_t*>(t.data.data()) : t.raw.data(),
                   t.bytes()};
}

// ---- unit checks ----

TEST(ReleaseStorage, EveryFp8AndE8m0CodeDecodesAsTheOcpFormats) {
  for (int b = 0; b < 256; ++b) {
    const float want = ocp_e4m3(static_cast<uint8_t>(b)), got = fp8_e4m3_to_fp32(static_cast<uint8_t>(b));
    if (std::isnan(want)) {
      EXPECT_TRUE(std::isnan(got)) << b;
    } else {
      EXPECT_EQ(got, want) << "code " << b;
    }
    if (b == 255) EXPECT_TRUE(std::isnan(e8m0_to_fp32(255)));
    else EXPECT_EQ(e8m0_to_fp32(static_cast<uint8_t>(b)), std::ldexp(1.0f, b - 127)) << "e8m0 " << b;
  }
  EXPECT_EQ(fp8_e4m3_to_fp32(0x7E), 448.0f);
  EXPECT_EQ(fp8_e4m3_to_fp32(0x01), std::ldexp(1.0f, -9));
}

TEST(ReleaseStorage, Fp4RepacksIntoMxfp4BlocksOfTheSameNumbers) {
  std::mt19937 rng(7);
  const int64_t rows = 3, cols = 96;
  StTensor w{{rows, cols / 2}, {}, "I8", std::vector<uint8_t>(rows * cols / 2)}, s{{rows, cols / 32}, {}, "F8_E8M0", {}};
  for (auto& b : w.raw) b = static_cast<uint8_t>(rng());
  for (int64_t i = 0; i < rows * cols / 32; ++i) s.raw.push_back(static_cast<uint8_t>(i == 0 ? 0 : 100 + rng() % 50));
  const DecodedWeight d = repack_fp4_as_mxfp4(ref_of("w", w, DType::I8), ref_of("s", s, DType::E8M0), rows, cols);
  ASSERT_EQ(d.dtype, DType::MXFP4);
  std::vector<float> row(cols);
  for (int64_t r = 0; r < rows; ++r) {
    type_traits(DType::MXFP4).to_float(d.bytes.data() + r * dtype_row_bytes(DType::MXFP4, cols), row.data(), cols);
    for (int64_t c = 0; c < cols; ++c) {
      const uint8_t byte = w.raw[r * cols / 2 + c / 2], code = c % 2 ? byte >> 4 : byte & 15;
      const float want = e2m1_value(code) * std::ldexp(1.0f, s.raw[r * cols / 32 + c / 32] - 127);
      ASSERT_EQ(row[c], want) << "row " << r << " col " << c;
    }
  }
  // Shapes that do not fit are refused by name.
  StTensor bad_scale{{rows, 2}, {}, "F8_E8M0", std::vector<uint8_t>(rows * 2)};
  try {
    repack_fp4_as_mxfp4(ref_of("w", w, DType::I8), ref_of("w.scale", bad_scale, DType::E8M0), rows, cols);
    ADD_FAILURE() << "expected an error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("w.scale"), std::string::npos) << e.what();
  }
}

// ---- the model: a deepseek4 checkpoint in release storage ----

struct Written {
  std::map<std::string, std::vector<float>> fp8_values;  // HF name -> the numbers its FP8 codes mean
  std::map<std::string, std::vector<MXFP4Block>> fp4_blocks;
};

// Every 2-D F32 `x.weight` becomes FP8 (experts: FP4), its scale beside it as `x.scale` — F32 FP8 scales as
// `x.weight_scale_inv`, the older FP8 checkpoints' name (the hyper-connection matrices, named without `.weight`,
// stay F32 as in the release).
void to_release_storage(StTensors& tensors, bool e8m0, Written& out) {
  StTensors add;
  for (auto& [name, t] : tensors) {
    const bool weight = name.size() > 7 && name.compare(name.size() - 7, 7, ".weight") == 0;
    if (t.dtype != "F32" || t.shape.size() != 2 || !weight) continue;
    const std::string base = name.substr(0, name.size() - std::string(".weight").size());
    if (name.find(".ffn.experts.") != std::string::npos) {
      Fp4Matrix q = to_fp4(t.data, t.shape[0], t.shape[1]);
      out.fp4_blocks[name] = q.mxfp4;
      add[base + ".scale"] = std::move(q.scale);
      t = std::move(q.weight);
    } else {
      Fp8Matrix q = to_fp8(t.data, t.shape[0], t.shape[1], e8m0);
      out.fp8_values[name] = std::move(q.values);
      add[e8m0 ? base + ".scale" : name + "_scale_inv"] = std::move(q.scale);  // F32: DeepSeek-V3's spelling
      t = std::move(q.weight);
    }
  }
  for (auto& [name, t] : add) tensors[name] = std::move(t);
}

// The same numbers as a GGUF in slimkv's types: FP8 values as F16 where every one is exact in F16, else F32 (the
// loader's documented rule); the experts' MXFP4 blocks stacked [E, rows, cols].
void write_reference_gguf(const std::string& src, const Model& m, const Written& w, const std::string& dst) {
  GgufFile g(src);
  GgufWriter out;
  copy_gguf_metadata(g, out);
  std::map<std::string, std::string> hf_of;  // GGUF name -> HF name (expert tensors: expert 0's)
  for (const TensorName& tn : family_by_name(m.config.family).tensors) {
    if (tn.hf.empty() || tn.gguf.empty()) continue;
    for (int64_t l = 0; l < m.config.num_layers; ++l) hf_of[expand_name(tn.gguf, l, 0)] = expand_name(tn.hf, l, 0);
  }
  for (const GgufTensorInfo& t : g.tensors()) {
    const auto hf = hf_of.find(t.name);
    const auto f8 = hf == hf_of.end() ? w.fp8_values.end() : w.fp8_values.find(hf->second);
    const auto f4 = hf == hf_of.end() ? w.fp4_blocks.end() : w.fp4_blocks.find(hf->second);
    if (f8 != w.fp8_values.end()) {
      const std::vector<float>& v = f8->second;
      bool exact = true;
      for (float x : v) exact = exact && fp16_to_fp32(fp32_to_fp16(x)) == x;
      if (exact) {
        std::vector<uint16_t> h(v.size());
        for (size_t i = 0; i < v.size(); ++i) h[i] = fp32_to_fp16(v[i]);
        out.add_tensor(t.name, DType::F16, t.dims, h.data(), h.size() * 2);
      } else {
        out.add_tensor(t.name, DType::F32, t.dims, v.data(), v.size() * 4);
      }
    } else if (f4 != w.fp4_blocks.end()) {
      std::vector<MXFP4Block> all;
      const std::string pattern = hf->second;  // "...experts.0.w1.weight"
      const size_t at = pattern.find(".experts.0.");
      for (int64_t e = 0; e < t.dims[2]; ++e) {
        const std::string name = pattern.substr(0, at) + ".experts." + std::to_string(e) + pattern.substr(at + 10);
        const std::vector<MXFP4Block>& b = w.fp4_blocks.at(name);
        all.insert(all.end(), b.begin(), b.end());
      }
      out.add_tensor(t.name, DType::MXFP4, t.dims, all.data(), all.size() * sizeof(MXFP4Block));
    } else {
      out.add_tensor(t.name, t.dtype, t.dims, t.data, t.size_bytes);
    }
  }
  out.write(dst);
}

// Rewrites the exported config.json: the release's quantization_config, or another one.
void set_quantization_config(const std::string& dir, const nlohmann::json& q) {
  nlohmann::json cfg = nlohmann::json::parse(read_text_file(dir + "/config.json"));
  cfg["quantization_config"] = q;
  std::ofstream(dir + "/config.json") << cfg.dump(2);
}

const nlohmann::json kReleaseQuantConfig = {{"activation_scheme", "dynamic"}, {"fmt", "e4m3"}, {"quant_method", "fp8"},
                                            {"scale_fmt", "ue8m0"}, {"weight_block_size", {128, 128}}};

class ReleaseCheckpoint : public ::testing::TestWithParam<bool> {};  // E8M0 `.scale`, or F32 `.weight_scale_inv`

TEST_P(ReleaseCheckpoint, GivesTheLogitsOfTheSameNumbersInGguf) {
  const bool e8m0 = GetParam();
  const std::string gguf = synthetic_dir() + "/deepseek4/deepseek4-F32.gguf";
  SKIP_IF_MISSING(gguf);
  auto m = load(gguf);
  const std::string prefix = ::testing::TempDir() + "/release_" + (e8m0 ? "e8m0_" : "f32_") + std::to_string(::getpid());
  Written w;
  export_hf(gguf, *m, prefix + "_hf", 1, [&](StTensors& t) { to_release_storage(t, e8m0, w); });
  ASSERT_FALSE(w.fp8_values.empty());
  ASSERT_FALSE(w.fp4_blocks.empty());
  write_reference_gguf(gguf, *m, w, prefix + ".gguf");
  set_quantization_config(prefix + "_hf", kReleaseQuantConfig);
  auto h = load(prefix + "_hf");
  auto ref = load(prefix + ".gguf");
  // The loader's choice of storage: F16 for E8M0-scaled FP8 (exact), F32 where F32 scales break exactness.
  EXPECT_EQ(h->layers[0].wq_a.dtype, e8m0 ? DType::F16 : DType::F32);
  EXPECT_EQ(h->layers[0].exp_gate[0].dtype, DType::MXFP4);
  const std::vector<int32_t> ids = read_ids_file(synthetic_dir() + "/prompts/p320.ids");
  const std::vector<float> ours = all_logits(*h, ids, 0);
  const LogitsDiff same = compare_logits(ours, all_logits(*ref, ids, 0), m->config.vocab_size);
  const LogitsDiff vs_f32 = compare_logits(ours, all_logits(*m, ids, 0), m->config.vocab_size);
  std::printf("release storage (%s scales): vs the same numbers in GGUF max |dlogit| %.3g; vs the F32 model: mean KL "
              "%.3g, argmax agree %.3f, max |dlogit| %.3g\n",
              e8m0 ? "E8M0" : "F32", same.worst(), vs_f32.mean_kl, vs_f32.argmax_agree, vs_f32.worst());
  EXPECT_EQ(same.worst(), 0.0);
  // Rounding every matrix of this random-weight model to FP8 and its experts to FP4 is felt (measured: mean KL
  // 0.13-0.14, argmax 0.70-0.72); a wrong decode (nibble order, scale exponent) gives noise, far past these bounds.
  EXPECT_LE(vs_f32.mean_kl, 0.5);
  EXPECT_GE(vs_f32.argmax_agree, 0.5);
  // llama.cpp reads the reference GGUF (F16 / F32 + MXFP4) to the same logits within the MXFP4_MOE criteria.
  const std::string ref_bin = slimkv_ref_binary();
  if (!ref_bin.empty()) {
    const std::string cmd = ref_bin + " " + prefix + ".gguf " + synthetic_dir() + "/prompts/p320.ids " + prefix +
                            " >" + prefix + ".log 2>&1";
    ASSERT_EQ(std::system(cmd.c_str()), 0) << read_text_file(prefix + ".log");
    const LogitsDiff ll = compare_logits(ours, read_f32_file(prefix + ".logits.f32"), m->config.vocab_size);
    std::printf("  vs llama.cpp on that GGUF: mean KL %.3g, argmax agree %.3f, max |dlogit| %.3g\n", ll.mean_kl,
                ll.argmax_agree, ll.worst());
    EXPECT_LE(ll.mean_kl, 0.0125);
    EXPECT_GE(ll.argmax_agree, 0.9);
  }
  std::filesystem::remove_all(prefix + "_hf");
  for (const char* ext : {".gguf", ".logits.f32", ".log", ".greedy.json"}) std::remove((prefix + ext).c_str());
}

INSTANTIATE_TEST_SUITE_P(Scales, ReleaseCheckpoint, ::testing::Values(true, false),
                         [](const auto& info) { return std::string(info.param ? "E8M0" : "F32"); });

TEST(ReleaseStorage, AMissingScaleOrAnotherQuantizationIsRefusedByName) {
  const std::string gguf = synthetic_dir() + "/deepseek4/deepseek4-F32.gguf";
  SKIP_IF_MISSING(gguf);
  auto m = load(gguf);
  const std::string dir = ::testing::TempDir() + "/release_noscale_" + std::to_string(::getpid());
  Written w;
  export_hf(gguf, *m, dir, 1, [&](StTensors& t) {
    to_release_storage(t, true, w);
    t.erase("layers.0.attn.wq_a.scale");
  });
  auto refused = [&](const std::string& needle) {
    try {
      load(dir);
      ADD_FAILURE() << "expected an error naming " << needle;
    } catch (const Error& e) {
      EXPECT_NE(std::string(e.what()).find(needle), std::string::npos) << e.what();
    }
  };
  refused("layers.0.attn.wq_a.scale");
  // Other quantization methods and block sizes are refused by the config, not as missing tensors.
  nlohmann::json awq = {{"quant_method", "awq"}, {"bits", 4}};
  set_quantization_config(dir, awq);
  refused("quant_method 'awq' is not supported");
  nlohmann::json blocks = kReleaseQuantConfig;
  blocks["weight_block_size"] = {64, 64};
  set_quantization_config(dir, blocks);
  refused("weight_block_size [64,64]");
  std::filesystem::remove_all(dir);
}

}  // namespace release_storage
}  // namespace slimkv::test
