// bench_grammar: token-mask speed of slimkv_grammar on realistic schemas. Loads a real vocabulary's token bytes
// (one line per token, id = line number: a JSON string whose UTF-8 is the bytes, or a JSON array of byte values
// for a token that is not valid UTF-8 alone; "" for control tokens; EOS ids after the file) or builds the synthetic
// 150K-token one, then for each schema walks 200 tokens by a seeded random choice among the allowed ones and
// prints fill_mask time per token (p50 / p99 / max), accepts() and advance() time.
// Or --tokenizer PATH: a Hugging Face tokenizer.json / folder (../shared/data/real-tokenizers/qwen3), token bytes as
// the server builds them (each token decoded in running text), its EOS the only EOS.
//   bench_grammar [VOCAB.jsonl [EOS_ID ...] | --tokenizer PATH] [--tokens N] [--seed S]
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <fstream>
#include <random>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "grammar/json_schema_compiler.h"
#include "grammar/matcher.h"
#include "grammar/synthetic_vocabulary.h"
#include "tokenizer/tokenizer.h"

namespace {

using namespace slimkv::grammar;
using Clock = std::chrono::steady_clock;

double us_since(Clock::time_point t0) {
  return std::chrono::duration<double, std::micro>(Clock::now() - t0).count();
}

double percentile(std::vector<double> v, double p) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  return v[std::min(v.size() - 1, static_cast<size_t>(p * static_cast<double>(v.size())))];
}

std::vector<std::string> load_vocab(const std::string& path) {
  std::ifstream in(path);
  if (!in) throw std::runtime_error("cannot open " + path);
  std::vector<std::string> out;
  for (std::string line; std::getline(in, line);) {
    if (line.empty()) {
      out.emplace_back();
      continue;
    }
    const auto j = nlohmann::json::parse(line);
    if (j.is_string()) {
      out.push_back(j.get<std::string>());
    } else {  // an array of byte values: a token that is not valid UTF-8 on its own
      std::string bytes;
      for (const auto& b : j) bytes += static_cast<char>(b.get<int>());
      out.push_back(bytes);
    }
  }
  return out;
}

struct BenchSchema {
  const char* name;
  const char* schema;  // nullptr: json_object (any JSON object)
};

const std::vector<BenchSchema>& bench_schemas() {
  static const std::vector<BenchSchema> s = {
      {"person", R"({"type":"object","properties":{"name":{"type":"string","maxLength":40},"age":{"type":"integer"},
        "email":{"type":"string","maxLength":60},"address":{"type":"object","properties":{"street":{"type":"string",
        "maxLength":60},"city":{"type":"string","maxLength":30},"zip":{"type":"string","pattern":"[0-9]{5}"}},
        "required":["street","city","zip"]},"birthday":{"type":"string","format":"date"}},
        "required":["name","age","email","address"]})"},
      {"product", R"({"type":"object","properties":{"id":{"type":"string","format":"uuid"},"title":{"type":"string",
        "maxLength":80},"price":{"type":"number"},"in_stock":{"type":"boolean"},"tags":{"type":"array","items":{
        "type":"string","maxLength":16},"maxItems":6},"variants":{"type":"array","items":{"type":"object",
        "properties":{"sku":{"type":"string","maxLength":12},"size":{"enum":["S","M","L","XL"]},"stock":{"type":
        "integer"}},"required":["sku","size","stock"]},"maxItems":4}},"required":["id","title","price","in_stock",
        "tags","variants"]})"},
      {"tool_call", R"({"type":"object","properties":{"name":{"enum":["get_weather","search_web","send_email",
        "create_event"]},"arguments":{"type":"object","properties":{"query":{"type":"string","maxLength":100},
        "location":{"type":"string","maxLength":40},"days":{"type":"integer"}},"additionalProperties":true}},
        "required":["name","arguments"]})"},
      {"enum_heavy", R"({"type":"object","properties":{"country":{"enum":["Afghanistan","Albania","Algeria",
        "Andorra","Angola","Argentina","Armenia","Australia","Austria","Azerbaijan","Bahamas","Bahrain",
        "Bangladesh","Barbados","Belarus","Belgium","Belize","Benin","Bhutan","Bolivia","Brazil","Bulgaria",
        "Cambodia","Cameroon","Canada","Chile","China","Colombia","Croatia","Cuba","Cyprus","Denmark","Egypt",
        "Estonia","Ethiopia","Finland","France","Germany","Ghana","Greece","Hungary","Iceland","India",
        "Indonesia","Iran","Iraq","Ireland","Israel","Italy","Japan","Jordan","Kenya","Latvia","Lebanon"]},
        "status":{"enum":["active","inactive","pending","suspended","archived"]},"priority":{"enum":[1,2,3,4,5]},
        "flags":{"type":"array","items":{"enum":["red","green","blue","urgent","later"]},"maxItems":5}},
        "required":["country","status","priority","flags"]})"},
      {"json_object", nullptr},
  };
  return s;
}

void run_schema(const BenchSchema& bs, const std::shared_ptr<const TokenVocabulary>& vocab, size_t tokens,
                uint64_t seed) {
  auto t0 = Clock::now();
  auto grammar = bs.schema ? compile_json_schema_text(bs.schema) : compile_any_json();
  const double compile_us = us_since(t0);
  std::mt19937_64 rng(seed);
  std::vector<double> mask_us, accepts_us, advance_us;
  std::vector<uint8_t> mask;
  size_t documents = 0;
  auto matcher = std::make_unique<Matcher>(grammar, vocab);
  while (mask_us.size() < tokens) {
    t0 = Clock::now();
    matcher->fill_mask(mask);
    mask_us.push_back(us_since(t0));
    std::vector<int32_t> allowed;
    for (size_t id = 0; id < mask.size(); ++id)
      if (mask[id] && !vocab->is_eos(static_cast<int32_t>(id))) allowed.push_back(static_cast<int32_t>(id));
    if (allowed.empty()) {  // the document is complete: start the next one
      ++documents;
      matcher = std::make_unique<Matcher>(grammar, vocab);
      continue;
    }
    const auto probe = static_cast<int32_t>(rng() % vocab->size());  // sample-then-check on an arbitrary token
    t0 = Clock::now();
    volatile bool ok = matcher->accepts(probe);
    (void)ok;
    accepts_us.push_back(us_since(t0));
    const int32_t tok = allowed[rng() % allowed.size()];
    t0 = Clock::now();
    matcher->advance(tok);
    advance_us.push_back(us_since(t0));
  }
  std::printf("%-12s compile %5.0f us | mask p50 %7.1f us  p90 %7.1f us  p99 %7.1f us  max %7.1f us | accepts p50 %4.2f us"
              "  p99 %5.2f us | advance p50 %4.2f us | %zu documents finished\n",
              bs.name, compile_us, percentile(mask_us, 0.5), percentile(mask_us, 0.9), percentile(mask_us, 0.99),
              percentile(mask_us, 1.0),
              percentile(accepts_us, 0.5), percentile(accepts_us, 0.99), percentile(advance_us, 0.5), documents);
}

}  // namespace

int main(int argc, char** argv) {
  try {
    std::string path, tokenizer_path;
    std::vector<int32_t> eos;
    size_t tokens = 200;
    uint64_t seed = 1;
    for (int i = 1; i < argc; ++i) {
      std::string a = argv[i];
      if (a == "--tokens" && i + 1 < argc) tokens = std::stoul(argv[++i]);
      else if (a == "--seed" && i + 1 < argc) seed = std::stoull(argv[++i]);
      else if (a == "--tokenizer" && i + 1 < argc) tokenizer_path = argv[++i];
      else if (path.empty()) path = a;
      else eos.push_back(static_cast<int32_t>(std::stol(a)));
    }
    auto t0 = Clock::now();
    std::vector<std::string> bytes;
    if (!tokenizer_path.empty()) {
      const auto tok = slimkv::load_hf_tokenizer(tokenizer_path);
      for (int32_t id = 0; id < tok->vocab_size(); ++id) bytes.push_back(tok->decode_token(id, id));
      eos.push_back(tok->eos_id());
      path = tokenizer_path;
    } else if (path.empty()) {
      bytes = synthetic_token_bytes(150000, 42);
      eos.push_back(static_cast<int32_t>(bytes.size() - 1));
    } else {
      bytes = load_vocab(path);
    }
    auto vocab = std::make_shared<const TokenVocabulary>(std::move(bytes), eos);
    std::printf("vocabulary: %zu tokens (%s), %zu trie nodes, built in %.0f ms; %zu tokens per schema, seed %llu\n",
                vocab->size(), path.empty() ? "synthetic" : path.c_str(), vocab->node_count(), us_since(t0) / 1000,
                tokens, static_cast<unsigned long long>(seed));
    for (const BenchSchema& bs : bench_schemas()) run_schema(bs, vocab, tokens, seed);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "bench_grammar: %s\n", e.what());
    return 1;
  }
  return 0;
}
