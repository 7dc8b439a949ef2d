// Hugging Face directory -> Model: config.json's architectures pick the family (model/family.h); weights from
// model.safetensors or the shards listed in model.safetensors.index.json; tokenizer.json (+ tokenizer_config.json's
// chat_template), or else a llama2.c tokenizer.bin (a SentencePiece vocabulary: the trained test models' export). F16 stays F16, BF16 becomes F32 once.
#include <filesystem>
#include <nlohmann/json.hpp>
#include <set>

#include "core/mapped_file.h"
#include "formats/safetensors_file.h"
#include "model/family.h"
#include "model/model.h"
#include "model/weight_binder.h"

namespace slimkv {
namespace {

std::vector<std::shared_ptr<SafetensorsFile>> open_shards(const std::filesystem::path& dir) {
  namespace fs = std::filesystem;
  const fs::path single = dir / "model.safetensors", index = dir / "model.safetensors.index.json";
  if (fs::exists(single)) return {std::make_shared<SafetensorsFile>(single.string())};
  SLIMKV_CHECK(fs::exists(index), "{}: neither model.safetensors nor model.safetensors.index.json", dir.string());
  nlohmann::json j = nlohmann::json::parse(read_text_file(index.string()), nullptr, false);
  SLIMKV_CHECK(j.is_object() && j.contains("weight_map") && j["weight_map"].is_object(),
               "{}: no 'weight_map' object", index.string());
  std::set<std::string> files;
  for (const auto& [name, file] : j["weight_map"].items()) {
    SLIMKV_CHECK(file.is_string(), "{}: weight_map['{}'] must be a file name", index.string(), name);
    const std::string f = file.get<std::string>();
    SLIMKV_CHECK(!f.empty() && f.find('/') == std::string::npos && f.find("..") == std::string::npos,
                 "{}: shard name '{}' must be a plain file name", index.string(), f);
    files.insert(f);
  }
  SLIMKV_CHECK(!files.empty(), "{}: weight_map is empty", index.string());
  std::vector<std::shared_ptr<SafetensorsFile>> shards;
  for (const std::string& f : files) {
    SLIMKV_CHECK(fs::exists(dir / f), "{}: shard '{}' is missing", index.string(), f);
    shards.push_back(std::make_shared<SafetensorsFile>((dir / f).string()));
  }
  return shards;
}

// A pre-quantized checkpoint: DeepSeek's block-scaled FP8 (and FP4 experts) is read (model/block_scaled.h); other
// methods' tensors (GPTQ / AWQ `qweight`, bitsandbytes, ...) are refused here by name rather than as missing tensors.
void check_quantization(const nlohmann::json& j, const std::string& cfg_path) {
  if (!j.contains("quantization_config")) return;
  const nlohmann::json& q = j["quantization_config"];
  SLIMKV_CHECK(q.is_object(), "{}: quantization_config must be an object", cfg_path);
  const std::string method = q.contains("quant_method") && q["quant_method"].is_string()
                                 ? q["quant_method"].get<std::string>() : std::string("(none)");
  SLIMKV_CHECK(method == "fp8", "{}: quantization_config.quant_method '{}' is not supported: slimkv reads unquantized "
               "and block-scaled fp8 checkpoints (convert others to GGUF)", cfg_path, method);
  if (q.contains("weight_block_size")) {
    const nlohmann::json& b = q["weight_block_size"];
    SLIMKV_CHECK(b == nlohmann::json::array({128, 128}), "{}: quantization_config.weight_block_size {} is not "
                 "supported: slimkv reads fp8 scales per 128 x 128 block", cfg_path, b.dump());
  }
}

}  // namespace

std::unique_ptr<Model> load_hf_model(const std::string& dir) {
  namespace fs = std::filesystem;
  const std::string cfg_path = (fs::path(dir) / "config.json").string();
  SLIMKV_CHECK(fs::exists(cfg_path), "{}: no config.json (not a Hugging Face model directory)", dir);
  const std::string text = read_text_file(cfg_path);
  nlohmann::json j = nlohmann::json::parse(text, nullptr, false);
  SLIMKV_CHECK(j.is_object(), "{}: invalid JSON", cfg_path);
  std::vector<std::string> archs;
  if (j.contains("architectures") && j["architectures"].is_array()) {
    for (auto& a : j["architectures"]) {
      if (a.is_string()) archs.push_back(a.get<std::string>());
    }
  }
  if (archs.empty()) archs.push_back("LlamaForCausalLM");  // old configs without the key
  const ModelFamily& family = family_for_hf(archs, cfg_path);
  check_quantization(j, cfg_path);
  auto m = std::make_unique<Model>();
  ModelConfig& c = m->config;
  family.read_hparams(*hf_hparams(text, cfg_path), c);
  c.format = "safetensors";
  const auto shards = open_shards(fs::path(dir));
  for (const auto& s : shards) m->keepalive.push_back(s);
  bind_weights(*safetensors_tensors(shards, dir), family, c, *m);
  c.finalize();
  c.validate();
  const std::string tok_path = (fs::path(dir) / "tokenizer.json").string();
  const std::string spm_path = (fs::path(dir) / "tokenizer.bin").string();  // a SentencePiece vocabulary, llama2.c's file
  SLIMKV_CHECK(fs::exists(tok_path) || fs::exists(spm_path), "{}: no tokenizer.json (nor a llama2.c tokenizer.bin)", dir);
  m->tokenizer = fs::exists(tok_path) ? load_hf_tokenizer(tok_path) : load_llama2c_tokenizer(spm_path, c.vocab_size);
  const fs::path tc = fs::path(dir) / "tokenizer_config.json";
  if (fs::exists(tc)) {
    nlohmann::json t = nlohmann::json::parse(read_text_file(tc.string()), nullptr, false);
    if (t.is_object() && t.contains("chat_template") && t["chat_template"].is_string()) {
      m->chat_template = t["chat_template"].get<std::string>();
    }
  }
  return m;
}

}  // namespace slimkv
