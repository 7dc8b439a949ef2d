// The vocabulary stored in a GGUF file's tokenizer.ggml.* metadata: `llama` (SentencePiece-style, SpmTokenizer) or
// `gpt2` (byte-level BPE, BpeTokenizer with the pre-tokenizer tokenizer.ggml.pre names). Defaults follow llama.cpp.
#include "core/check.h"
#include "formats/gguf_file.h"
#include "tokenizer/bpe_tokenizer.h"
#include "tokenizer/spm_tokenizer.h"

namespace slimkv {
namespace {

const std::vector<std::string>* string_array(const GgufFile& g, const std::string& key, bool required) {
  const GgufValue* v = g.find(key);
  if (!v) {
    SLIMKV_CHECK(!required, "{}: missing metadata '{}' (not a GGUF with a vocabulary?)", g.source(), key);
    return nullptr;
  }
  SLIMKV_CHECK(v->is_array() && v->elem_type == GgufType::STRING, "{}: metadata '{}' is not an array of strings",
               g.source(), key);
  return &v->strings;
}

// Scores may be stored as floats or (rarely) integers.
std::vector<float> score_array(const GgufFile& g, const std::string& key, size_t n) {
  const GgufValue* v = g.find(key);
  if (!v) return std::vector<float>(n, 0.0f);
  SLIMKV_CHECK(v->is_array() && v->elem_type != GgufType::STRING, "{}: metadata '{}' is not a numeric array",
               g.source(), key);
  size_t got = v->floats.size() + v->ints.size();
  SLIMKV_CHECK(got == n, "{}: '{}' has {} entries but the vocabulary has {} tokens", g.source(), key, got, n);
  std::vector<float> out(n);
  for (size_t i = 0; i < n; ++i) out[i] = static_cast<float>(v->floats.empty() ? v->ints[i] : v->floats[i]);
  return out;
}

std::vector<int32_t> type_array(const GgufFile& g, const std::string& key, size_t n) {
  const GgufValue* v = g.find(key);
  if (!v) return {};
  SLIMKV_CHECK(v->is_array() && v->elem_type != GgufType::STRING && v->floats.empty(),
               "{}: metadata '{}' is not an integer array", g.source(), key);
  SLIMKV_CHECK(v->ints.size() == n, "{}: '{}' has {} entries but the vocabulary has {} tokens", g.source(), key,
               v->ints.size(), n);
  std::vector<int32_t> out(n);
  for (size_t i = 0; i < n; ++i) {
    int64_t t = v->ints[i];
    out[i] = t >= 0 && t <= 6 ? static_cast<int32_t>(t) : 0;  // 0 = undefined
  }
  return out;
}

// A special-token id key: absent -> `fallback`; present -> must lie inside the vocabulary.
int32_t token_id(const GgufFile& g, const std::string& key, int32_t fallback, size_t n) {
  auto v = g.get_int_opt(key);
  if (!v) return fallback < static_cast<int64_t>(n) ? fallback : -1;
  SLIMKV_CHECK(*v >= 0 && *v < static_cast<int64_t>(n), "{}: '{}' = {} is outside the vocabulary of {} tokens",
               g.source(), key, *v, n);
  return static_cast<int32_t>(*v);
}

bool flag(const GgufFile& g, const std::string& key, bool fallback) {
  auto v = g.get_int_opt(key);
  return v ? *v != 0 : fallback;
}

std::vector<std::pair<std::string, std::string>> read_merges(const GgufFile& g) {
  const auto* merges = string_array(g, "tokenizer.ggml.merges", true);
  std::vector<std::pair<std::string, std::string>> out;
  out.reserve(merges->size());
  for (size_t i = 0; i < merges->size(); ++i) {
    const std::string& m = (*merges)[i];
    size_t sp = m.find(' ', 1);
    SLIMKV_CHECK(sp != std::string::npos && sp + 1 < m.size(),
                 "{}: tokenizer.ggml.merges[{}] = '{}' is not two pieces separated by a space", g.source(), i, m);
    out.emplace_back(m.substr(0, sp), m.substr(sp + 1));
  }
  return out;
}

// A `llama` vocabulary that also carries merges (slimkv's writer, from a tokenizer.json BPE with byte fallback):
// merge-rank BPE as Hugging Face runs it — U+2581 for spaces (prefixed to the first fragment with add_space_prefix),
// <0xNN> fallback, runs of unknown characters fused.
std::unique_ptr<Tokenizer> sentencepiece_bpe_vocab(const GgufFile& g, const std::vector<std::string>& tokens) {
  const size_t n = tokens.size();
  const std::string marker = "\xE2\x96\x81";
  BpeConfig c;
  c.pieces = tokens;
  c.types = type_array(g, "tokenizer.ggml.token_type", n);
  c.merges = read_merges(g);
  c.byte_level = c.decode_byte_level = false;
  c.byte_fallback = c.decode_byte_fallback = true;
  c.unk_id = token_id(g, "tokenizer.ggml.unknown_token_id", -1, n);
  c.fuse_unk = true;
  const bool prefix = flag(g, "tokenizer.ggml.add_space_prefix", true);
  c.metaspace = marker;
  c.metaspace_prepend = prefix ? BpeConfig::Prepend::kFirst : BpeConfig::Prepend::kNever;
  c.decode_space_marker = marker;
  c.strip_leading_space = prefix;
  c.decoders = {{DecodeStep::kReplace, marker, " "}, {DecodeStep::kByteFallback}, {DecodeStep::kFuse}};
  if (prefix) {
    DecodeStep strip(DecodeStep::kStrip, "", " ");
    strip.start = 1;
    c.decoders.push_back(strip);
  }
  c.bos_id = token_id(g, "tokenizer.ggml.bos_token_id", 1, n);
  c.eos_id = token_id(g, "tokenizer.ggml.eos_token_id", 2, n);
  if (flag(g, "tokenizer.ggml.add_bos_token", true) && c.bos_id >= 0) c.prefix_ids = {c.bos_id};
  if (flag(g, "tokenizer.ggml.add_eos_token", false) && c.eos_id >= 0) c.suffix_ids = {c.eos_id};
  return std::make_unique<BpeTokenizer>(std::move(c));
}

std::unique_ptr<Tokenizer> llama_vocab(const GgufFile& g, const std::vector<std::string>& tokens) {
  if (string_array(g, "tokenizer.ggml.merges", false) != nullptr) return sentencepiece_bpe_vocab(g, tokens);
  const size_t n = tokens.size();
  SpmVocab v;
  v.pieces = tokens;
  v.scores = score_array(g, "tokenizer.ggml.scores", n);
  v.types = type_array(g, "tokenizer.ggml.token_type", n);
  v.space_marker = "\xE2\x96\x81";
  v.bos_id = token_id(g, "tokenizer.ggml.bos_token_id", 1, n);
  v.eos_id = token_id(g, "tokenizer.ggml.eos_token_id", 2, n);
  v.unk_id = token_id(g, "tokenizer.ggml.unknown_token_id", 0, n);
  v.add_bos = flag(g, "tokenizer.ggml.add_bos_token", true) && v.bos_id >= 0;
  v.add_dummy_prefix = flag(g, "tokenizer.ggml.add_space_prefix", true);
  return std::make_unique<SpmTokenizer>(std::move(v));
}

std::unique_ptr<Tokenizer> gpt2_vocab(const GgufFile& g, const std::vector<std::string>& tokens) {
  const size_t n = tokens.size();
  BpeConfig c;
  c.pieces = tokens;
  c.types = type_array(g, "tokenizer.ggml.token_type", n);
  c.merges = read_merges(g);
  std::string pre = g.get_string_opt("tokenizer.ggml.pre").value_or("default");
  PreTokenizerPreset preset;
  try {
    preset = pretokenizer_preset(pre);
  } catch (const Error& e) {
    fail("{}: {}", g.source(), e.what());
  }
  c.pretokenizer.assign(preset.patterns.begin(), preset.patterns.end());
  c.ignore_merges = preset.ignore_merges;
  if (pre == "qwen2") c.normalizer = {NormalizeStep(NormalizeStep::kNfc)};  // Qwen's tokenizer.json normalizes NFC
  c.bos_id = token_id(g, "tokenizer.ggml.bos_token_id", -1, n);
  c.eos_id = token_id(g, "tokenizer.ggml.eos_token_id", -1, n);
  bool llama3 = preset.ignore_merges;  // llama.cpp adds BOS by default for the llama3-style pre-tokenizers
  if (flag(g, "tokenizer.ggml.add_bos_token", llama3) && c.bos_id >= 0) c.prefix_ids = {c.bos_id};
  if (flag(g, "tokenizer.ggml.add_eos_token", false) && c.eos_id >= 0) c.suffix_ids = {c.eos_id};
  c.byte_level = c.decode_byte_level = true;
  c.decoders = {{DecodeStep::kByteLevel}};
  return std::make_unique<BpeTokenizer>(std::move(c));
}

}  // namespace

std::unique_ptr<Tokenizer> tokenizer_from_gguf(const GgufFile& g) {
  const std::string model = g.get_string("tokenizer.ggml.model");
  const auto* tokens = string_array(g, "tokenizer.ggml.tokens", true);
  SLIMKV_CHECK(!tokens->empty(), "{}: tokenizer.ggml.tokens is empty", g.source());
  SLIMKV_CHECK(tokens->size() < (size_t{1} << 30), "{}: {} tokens is absurd", g.source(), tokens->size());
  if (model == "llama") return llama_vocab(g, *tokens);
  if (model == "gpt2") return gpt2_vocab(g, *tokens);
  fail("{}: tokenizer.ggml.model '{}' is not supported (supported: llama, gpt2)", g.source(), model);
}

}  // namespace slimkv
