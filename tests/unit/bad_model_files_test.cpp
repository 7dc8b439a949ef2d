// Malformed model files give one clear slimkv::Error, never a crash, a hang or a huge allocation.
#include <gtest/gtest.h>

#include <cstring>
#include <filesystem>
#include <fstream>
#include <functional>
#include <unistd.h>

#include "core/check.h"
#include "formats/gguf_file.h"
#include "formats/gguf_writer.h"
#include "formats/safetensors_file.h"
#include "model/model.h"
#include "test_paths.h"

namespace slimkv {
namespace {

std::string expect_error(const std::function<void()>& fn) {
  try {
    fn();
  } catch (const Error& e) {
    return e.what();
  }
  ADD_FAILURE() << "expected slimkv::Error";
  return "";
}

std::vector<uint8_t> small_gguf() {
  GgufWriter w;
  w.add_string("general.architecture", "llama");
  w.add_u32("llama.embedding_length", 32);
  std::vector<float> t(32 * 4, 0.5f);
  w.add_tensor("token_embd.weight", DType::F32, {32, 4}, t.data(), t.size() * 4);
  return w.bytes();
}

GgufFile* parse(const std::vector<uint8_t>& b) {
  static std::unique_ptr<GgufFile> keep;
  keep = GgufFile::from_bytes(b, "test.gguf");
  return keep.get();
}

TEST(BadGguf, ValidFileParses) {
  auto* g = parse(small_gguf());
  EXPECT_EQ(g->version(), 3u);
  EXPECT_EQ(g->get_int("llama.embedding_length"), 32);
  ASSERT_NE(g->find_tensor("token_embd.weight"), nullptr);
  EXPECT_EQ(g->find_tensor("token_embd.weight")->size_bytes, 32u * 4 * 4);
}

TEST(BadGguf, WrongMagic) {
  auto b = small_gguf();
  b[0] = 'X';
  EXPECT_NE(expect_error([&] { parse(b); }).find("bad magic"), std::string::npos);
}

TEST(BadGguf, EveryTruncationIsAnErrorNotACrash) {
  auto b = small_gguf();
  for (size_t n = 0; n < b.size(); n += 3) {
    std::vector<uint8_t> cut(b.begin(), b.begin() + n);
    EXPECT_THROW(parse(cut), Error) << "length " << n;
  }
}

TEST(BadGguf, AbsurdTensorCount) {
  auto b = small_gguf();
  uint64_t huge = 1ull << 60;
  std::memcpy(b.data() + 8, &huge, 8);
  EXPECT_NE(expect_error([&] { parse(b); }).find("absurd"), std::string::npos);
}

TEST(BadGguf, AbsurdStringLength) {
  auto b = small_gguf();
  uint64_t huge = 1ull << 62;
  std::memcpy(b.data() + 24, &huge, 8);  // length of the first key
  EXPECT_THROW(parse(b), Error);
}

TEST(BadGguf, UnsupportedTensorTypeIsNamed) {
  GgufWriter w;
  std::vector<uint8_t> data(144, 0);
  w.add_tensor("blk.0.attn_q.weight", DType::F32, {32, 1}, data.data(), 128);
  const auto base = w.bytes();
  // Patch the ggml type (F32=0): it sits right before the 8-byte offset of the only tensor.
  const size_t pos = 24 + 8 + std::strlen("blk.0.attn_q.weight") + 4 + 16;
  auto with_type = [&](uint32_t t) {
    auto b = base;
    std::memcpy(b.data() + pos, &t, 4);
    return expect_error([&] { parse(b); });
  };
  std::string msg = with_type(16);  // IQ2_XXS: a GGML type slimkv does not read
  EXPECT_NE(msg.find("unsupported tensor type IQ2_XXS"), std::string::npos) << msg;
  msg = with_type(12);  // Q4_K is read, but 32 values are not a whole 256-value super-block
  EXPECT_NE(msg.find("not a multiple of the Q4_K block size 256"), std::string::npos) << msg;
}

TEST(BadGguf, DuplicateKeysAndTensorsAreRejected) {
  GgufWriter w;
  w.add_u32("a", 1);
  w.add_u32("a", 2);
  EXPECT_NE(expect_error([&] { parse(w.bytes()); }).find("duplicate"), std::string::npos);
  GgufWriter t;
  float x[32] = {};
  t.add_tensor("w", DType::F32, {32}, x, sizeof(x));
  t.add_tensor("w", DType::F32, {32}, x, sizeof(x));
  EXPECT_NE(expect_error([&] { parse(t.bytes()); }).find("duplicate"), std::string::npos);
}

TEST(BadGguf, TensorDataBeyondEndOfFile) {
  auto b = small_gguf();
  b.resize(b.size() - 16);
  EXPECT_NE(expect_error([&] { parse(b); }).find("beyond the end"), std::string::npos);
}

TEST(BadGguf, HugeDimensionsOverflowCheckedNotAllocated) {
  GgufWriter w;
  float x[32] = {};
  w.add_tensor("w", DType::F32, {1ll << 40, 1ll << 40, 1ll << 40}, x, sizeof(x));
  EXPECT_THROW(parse(w.bytes()), Error);
}

TEST(BadSafetensors, MalformedHeadersAreErrors) {
  auto make = [](const std::string& header, size_t data_bytes) {
    std::vector<uint8_t> b(8);
    uint64_t n = header.size();
    std::memcpy(b.data(), &n, 8);
    b.insert(b.end(), header.begin(), header.end());
    b.resize(b.size() + data_bytes, 0);
    return b;
  };
  auto ok = make(R"({"w":{"dtype":"F32","shape":[2,2],"data_offsets":[0,16]}})", 16);
  EXPECT_EQ(SafetensorsFile::from_bytes(ok, "ok")->tensors().size(), 1u);
  EXPECT_THROW(SafetensorsFile::from_bytes(make(R"({"w":{"dtype":"F32","shape":[2,2],"data_offsets":[0,16]}})", 8), "t"), Error);
  EXPECT_THROW(SafetensorsFile::from_bytes(make(R"({"w":{"dtype":"F32","shape":[3,2],"data_offsets":[0,16]}})", 16), "t"), Error);
  EXPECT_THROW(SafetensorsFile::from_bytes(make(R"({"w":{"dtype":"I64","shape":[2],"data_offsets":[0,16]}})", 16), "t"), Error);
  EXPECT_THROW(SafetensorsFile::from_bytes(make(R"({"w":{"dtype":"F32","shape":[-1],"data_offsets":[0,16]}})", 16), "t"), Error);
  EXPECT_THROW(SafetensorsFile::from_bytes(make("{not json", 0), "t"), Error);
  EXPECT_THROW(SafetensorsFile::from_bytes(make("[]", 0), "t"), Error);
  std::vector<uint8_t> huge(16, 0xFF);
  EXPECT_THROW(SafetensorsFile::from_bytes(huge, "t"), Error);
}

class TempFile {
 public:
  explicit TempFile(const std::vector<uint8_t>& bytes) {
    path_ = (std::filesystem::temp_directory_path() / ("slimkv_test_" + std::to_string(::getpid()) + "_" +
                                                        std::to_string(counter_++))).string();
    std::ofstream(path_, std::ios::binary).write(reinterpret_cast<const char*>(bytes.data()), bytes.size());
  }
  ~TempFile() { std::filesystem::remove(path_); }
  const std::string& path() const { return path_; }

 private:
  std::string path_;
  static inline int counter_ = 0;
};

TEST(BadLlama2c, TruncatedAndWrongHeadersAreErrors) {
  std::string real = test::models_dir() + "/stories260K/stories260K.bin";
  std::string tok = test::models_dir() + "/stories260K/tok512.bin";
  SKIP_IF_MISSING(real);
  std::ifstream in(real, std::ios::binary);
  std::vector<uint8_t> b((std::istreambuf_iterator<char>(in)), {});
  for (size_t n : {size_t(0), size_t(10), size_t(28), b.size() / 2, b.size() - 1}) {
    TempFile f(std::vector<uint8_t>(b.begin(), b.begin() + n));
    EXPECT_THROW(load_llama2c_model(f.path(), tok), Error) << n;
  }
  auto bad = b;
  int32_t heads = 7;  // 64 not divisible by 7
  std::memcpy(bad.data() + 12, &heads, 4);
  TempFile f1(bad);
  EXPECT_THROW(load_llama2c_model(f1.path(), tok), Error);
  bad = b;
  int32_t huge = 1 << 30;
  std::memcpy(bad.data() + 20, &huge, 4);  // vocab
  TempFile f2(bad);
  EXPECT_THROW(load_llama2c_model(f2.path(), tok), Error);
}

TEST(BadLlama2c, TruncatedTokenizerIsAnError) {
  std::string tok = test::models_dir() + "/stories260K/tok512.bin";
  SKIP_IF_MISSING(tok);
  std::ifstream in(tok, std::ios::binary);
  std::vector<uint8_t> b((std::istreambuf_iterator<char>(in)), {});
  for (size_t n : {size_t(0), size_t(3), size_t(100), b.size() - 1}) {
    std::span<const uint8_t> s(b.data(), n);
    EXPECT_THROW(llama2c_tokenizer_from_bytes(s, 512, "tok"), Error) << n;
  }
}

TEST(BadModelPath, MissingFileAndDirectoryWithoutConfig) {
  ModelLoadOptions o;
  o.model_path = "/nonexistent/model.bin";
  EXPECT_NE(expect_error([&] { load_model(o); }).find("not found"), std::string::npos);
  o.model_path = std::filesystem::temp_directory_path().string();
  EXPECT_NE(expect_error([&] { load_model(o); }).find("config.json"), std::string::npos);
  // A .gguf whose magic is wrong is reported as a bad GGUF, not as "not a llama2.c checkpoint" (issue R, defect 10).
  const std::string bad = ::testing::TempDir() + "/bad_magic_" + std::to_string(::getpid()) + ".gguf";
  std::ofstream(bad, std::ios::binary) << "GGUX" << std::string(64, '\0');
  o.model_path = bad;
  const std::string e = expect_error([&] { load_model(o); });
  EXPECT_NE(e.find("is not a GGUF file"), std::string::npos) << e;
  EXPECT_EQ(e.find("llama2.c"), std::string::npos) << e;
  std::filesystem::remove(bad);
}

// A GGUF of `arch` with the keys a llama-style family reads, minus `drop`, and its tensors (shapes from the keys).
std::vector<uint8_t> family_gguf(const std::string& arch, const std::string& drop = "", int64_t k_rows = 16) {
  GgufWriter w;
  w.add_string("general.architecture", arch);
  auto u32 = [&](const std::string& k, uint32_t v) {
    if (k != drop) w.add_u32(arch + "." + k, v);
  };
  u32("embedding_length", 32);
  u32("block_count", 1);
  u32("context_length", 64);
  u32("feed_forward_length", 64);
  u32("attention.head_count", 2);
  u32("attention.head_count_kv", 1);
  std::vector<float> z(64 * 64, 0.01f);
  auto t = [&](const std::string& n, std::vector<int64_t> dims) {
    int64_t e = 1;
    for (int64_t d : dims) e *= d;
    w.add_tensor(n, DType::F32, dims, z.data(), e * 4);
  };
  t("token_embd.weight", {32, 8});
  t("output_norm.weight", {32});
  t("blk.0.attn_norm.weight", {32});
  t("blk.0.attn_q.weight", {32, 32});
  t("blk.0.attn_k.weight", {32, k_rows});
  t("blk.0.attn_v.weight", {32, 16});
  t("blk.0.attn_output.weight", {32, 32});
  t("blk.0.ffn_norm.weight", {32});
  t("blk.0.ffn_gate.weight", {32, 64});
  t("blk.0.ffn_up.weight", {32, 64});
  t("blk.0.ffn_down.weight", {64, 32});
  return w.bytes();
}

std::string family_error(const std::vector<uint8_t>& bytes) {
  std::shared_ptr<GgufFile> g = GgufFile::from_bytes(bytes, "fam.gguf");
  return expect_error([&] { gguf_model_weights(g); });
}

TEST(BadFamilyFiles, UnsupportedArchitectureNamesItselfAndTheSupportedOnes) {
  const std::string e = family_error(family_gguf("mamba"));
  EXPECT_NE(e.find("'mamba'"), std::string::npos) << e;
  for (const char* f : {"llama", "qwen2", "qwen3", "qwen3moe", "gemma3", "phi3"}) {
    EXPECT_NE(e.find(f), std::string::npos) << e;
  }
}

TEST(BadFamilyFiles, MissingKeyIsNamedAsTheFileSpellsIt) {
  EXPECT_NO_THROW(gguf_model_weights(GgufFile::from_bytes(family_gguf("llama"), "ok.gguf")));
  EXPECT_NE(family_error(family_gguf("qwen2", "attention.head_count")).find("missing 'qwen2.attention.head_count'"),
            std::string::npos);
  // qwen2 needs q/k/v biases; qwen3 per-head norms; gemma3 a sliding window key.
  EXPECT_NE(family_error(family_gguf("qwen2")).find("missing tensor 'blk.0.attn_q.bias'"), std::string::npos);
  EXPECT_NE(family_error(family_gguf("qwen3")).find("missing tensor 'blk.0.attn_q_norm.weight'"), std::string::npos);
  EXPECT_NE(family_error(family_gguf("gemma3")).find("missing 'gemma3.attention.sliding_window'"), std::string::npos);
}

TEST(BadFamilyFiles, WrongTensorShapeNamesTheTensorAndTheNeededShape) {
  const std::string e = family_error(family_gguf("llama", "", 24));
  EXPECT_NE(e.find("'blk.0.attn_k.weight' has shape [24, 32] but the hyper-parameters need [16, 32]"),
            std::string::npos)
      << e;
}

TEST(BadFamilyFiles, HfUnsupportedArchitectureAndRopeScaling) {
  const std::string dir = ::testing::TempDir() + "/hfbad_" + std::to_string(::getpid());
  std::filesystem::create_directories(dir);
  std::ofstream(dir + "/config.json") << R"({"architectures": ["MambaForCausalLM"], "hidden_size": 32})";
  ModelLoadOptions o;
  o.model_path = dir;
  std::string e = expect_error([&] { load_model(o); });
  EXPECT_NE(e.find("'MambaForCausalLM'"), std::string::npos) << e;
  EXPECT_NE(e.find("Qwen3MoeForCausalLM"), std::string::npos) << e;
  std::ofstream(dir + "/config.json") << R"({"architectures": ["LlamaForCausalLM"], "hidden_size": 32,
      "num_hidden_layers": 1, "num_attention_heads": 2, "intermediate_size": 64,
      "rope_scaling": {"rope_type": "longrope", "factor": 2.0}})";
  e = expect_error([&] { load_model(o); });
  EXPECT_NE(e.find("RoPE scaling type 'longrope' is not supported"), std::string::npos) << e;
  std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace slimkv

namespace slimkv {
namespace {

// An empty (or 1-3 byte) model file says so, instead of "starts with bytes 00 00 00 00" (issue R2).
TEST(BadModelFile, AnEmptyFileSaysItIsEmpty) {
  for (const char* name : {"empty.gguf", "empty.bin"}) {
    const std::string path = ::testing::TempDir() + "/" + std::to_string(::getpid()) + name;
    std::ofstream(path).close();
    try {
      load_model(ModelLoadOptions{path, ""});
      ADD_FAILURE() << "an empty file loaded";
    } catch (const Error& e) {
      EXPECT_NE(std::string(e.what()).find("0 bytes long"), std::string::npos) << e.what();
    }
    std::filesystem::remove(path);
  }
}

}  // namespace
}  // namespace slimkv
