// stories260K re-encoded as F16 / Q8_0 / Q4_0 GGUF (v2 and v3) loads, validates, and generates close to F32.
#include <gtest/gtest.h>

#include <filesystem>
#include <cmath>
#include <cstring>
#include <fstream>

#include "core/half.h"
#include "formats/gguf_file.h"
#include "formats/gguf_writer.h"
#include "model_helpers.h"

namespace slimkv::test {
namespace {

// Copies every metadata entry needed and re-encodes 2-D weights whose rows fit the block size.
std::string requantize(const std::string& src, DType dtype, uint32_t version, const std::string& out_name) {
  GgufFile g(src);
  GgufWriter w;
  for (const auto& [k, v] : g.metadata()) {
    if (v.type == GgufType::STRING) w.add_string(k, v.s);
    else if (v.is_int() && k.find("token_id") != std::string::npos) w.add_u32(k, static_cast<uint32_t>(v.i));
    else if (v.is_int()) w.add_u32(k, static_cast<uint32_t>(v.i));
    else if (v.is_float()) w.add_f32(k, static_cast<float>(v.f));
    else if (v.is_array() && v.elem_type == GgufType::STRING) w.add_strings(k, v.strings);
    else if (v.is_array() && !v.floats.empty()) w.add_f32s(k, std::vector<float>(v.floats.begin(), v.floats.end()));
    else if (v.is_array()) w.add_i32s(k, std::vector<int32_t>(v.ints.begin(), v.ints.end()));
  }
  for (const auto& t : g.tensors()) {
    const float* f = reinterpret_cast<const float*>(t.data);
    bool matrix = t.dims.size() == 2 && t.dims[0] % dtype_block_elems(dtype) == 0;
    if (!matrix || dtype == DType::F32) {
      w.add_tensor(t.name, t.dtype, t.dims, t.data, t.size_bytes);
    } else if (dtype == DType::F16) {
      std::vector<uint16_t> h(t.num_elements());
      for (size_t i = 0; i < h.size(); ++i) h[i] = fp32_to_fp16(f[i]);
      w.add_tensor(t.name, dtype, t.dims, h.data(), h.size() * 2);
    } else {
      auto q = quantize_rows(dtype, f, t.num_elements());
      w.add_tensor(t.name, dtype, t.dims, q.data(), q.size());
    }
  }
  std::string path = ::testing::TempDir() + "/" + out_name;
  auto bytes = w.bytes(32, version);
  std::ofstream(path, std::ios::binary).write(reinterpret_cast<const char*>(bytes.data()), bytes.size());
  return path;
}

struct Case {
  DType dtype;
  uint32_t version;
  int32_t min_matching_prefix;  // greedy tokens that must equal the F32 golden path
};

class QuantizedGguf : public ::testing::TestWithParam<Case> {};

TEST_P(QuantizedGguf, LoadsAndTracksF32Greedy) {
  std::string src = models_dir() + "/stories260K/stories260K.gguf";
  SKIP_IF_MISSING(src);
  Case c = GetParam();
  std::string path = requantize(src, c.dtype, c.version, fmt::format("q_{}_v{}.gguf", dtype_name(c.dtype), c.version));
  auto m = load(path);
  EXPECT_EQ(m->config.format, fmt::format("gguf v{}", c.version));
  EXPECT_EQ(m->layers[0].wq.dtype, c.dtype);
  auto g = golden()["stories260K"];
  auto want = g["greedy_40_ids"].get<std::vector<int32_t>>();
  auto out = greedy(*m, g["prompt_ids"].get<std::vector<int32_t>>(), 40);
  int32_t same = 0;
  while (same < 40 && out[same] == want[same]) ++same;
  EXPECT_GE(same, c.min_matching_prefix) << dtype_name(c.dtype);
  std::filesystem::remove(path);
}

INSTANTIATE_TEST_SUITE_P(Dtypes, QuantizedGguf,
                         ::testing::Values(Case{DType::F16, 3, 40}, Case{DType::Q8_0, 2, 10}, Case{DType::Q4_0, 3, 3}),
                         [](const auto& info) { return std::string(dtype_name(info.param.dtype)); });

TEST(QuantizedGgufShapes, TensorShapeMismatchIsAClearError) {
  std::string src = models_dir() + "/stories260K/stories260K.gguf";
  SKIP_IF_MISSING(src);
  GgufFile g(src);
  GgufWriter w;
  for (const auto& [k, v] : g.metadata()) {
    if (k == "llama.feed_forward_length") w.add_u32(k, 160);  // lie about the FFN width
    else if (v.type == GgufType::STRING) w.add_string(k, v.s);
    else if (v.is_int()) w.add_u32(k, static_cast<uint32_t>(v.i));
    else if (v.is_float()) w.add_f32(k, static_cast<float>(v.f));
    else if (v.is_array() && v.elem_type == GgufType::STRING) w.add_strings(k, v.strings);
    else if (v.is_array() && !v.floats.empty()) w.add_f32s(k, std::vector<float>(v.floats.begin(), v.floats.end()));
    else if (v.is_array()) w.add_i32s(k, std::vector<int32_t>(v.ints.begin(), v.ints.end()));
  }
  for (const auto& t : g.tensors()) w.add_tensor(t.name, t.dtype, t.dims, t.data, t.size_bytes);
  std::string path = ::testing::TempDir() + "/bad_shape.gguf";
  w.write(path);
  try {
    load(path);
    FAIL() << "expected an error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("ffn_gate"), std::string::npos) << e.what();
  }
  std::filesystem::remove(path);
}

// The writer writes every weight type of the type traits table and the parser reads each back: same type, same
// bytes; a tensor whose rows are not whole blocks is a clear error naming it.
TEST(QuantizedGgufTypes, EveryTypeRoundTripsThroughTheWriterAndParser) {
  constexpr int64_t cols = 512, rows = 3;
  std::vector<float> x(cols * rows);
  for (size_t i = 0; i < x.size(); ++i) x[i] = std::sin(0.37f * static_cast<float>(i)) * (1.0f + (i % 7));
  GgufWriter w;
  w.add_string("general.architecture", "llama");
  std::vector<std::pair<std::string, std::vector<uint8_t>>> written;
  for (const DTypeInfo& i : kDTypeInfo) {
    if (!i.weight) continue;
    auto q = quantize_rows(i.type, x.data(), cols * rows);
    const std::string name = fmt::format("t.{}", i.name);
    w.add_tensor(name, i.type, {cols, rows}, q.data(), q.size());
    written.emplace_back(name, std::move(q));
  }
  const std::string path = ::testing::TempDir() + "/all_types.gguf";
  w.write(path);
  GgufFile g(path);
  for (const auto& [name, bytes] : written) {
    const GgufTensorInfo* t = g.find_tensor(name);
    ASSERT_NE(t, nullptr) << name;
    EXPECT_EQ(t->size_bytes, bytes.size()) << name;
    EXPECT_EQ(std::memcmp(t->data, bytes.data(), bytes.size()), 0) << name;
    EXPECT_EQ(fmt::format("t.{}", dtype_name(t->dtype)), name);
  }
  std::filesystem::remove(path);
  for (DType bad : {DType::Q4_K, DType::IQ4_XS}) {  // 96 values per row: not whole 256-value super-blocks
    GgufWriter b;
    b.add_string("general.architecture", "llama");
    std::vector<uint8_t> junk(4096, 0);
    b.add_tensor("t.bad", bad, {96, 1}, junk.data(), 4096);
    const std::string bp = ::testing::TempDir() + "/bad_type.gguf";
    b.write(bp);
    try {
      GgufFile gb(bp);
      ADD_FAILURE() << "expected an error for " << dtype_name(bad);
    } catch (const Error& e) {
      EXPECT_NE(std::string(e.what()).find("t.bad"), std::string::npos) << e.what();
    }
    std::filesystem::remove(bp);
  }
}

}  // namespace
}  // namespace slimkv::test
