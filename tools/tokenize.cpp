// `slimkv tokenize` / `slimkv detokenize`: text -> ids and ids -> text with Hugging Face's switches. -m is a
// tokenizer.json (or .json.gz), a folder holding one, a GGUF (vocabulary-only or a model) or any model slimkv loads.
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include "formats/gguf_file.h"
#include "tools/commands.h"
#include "tools/common.h"

namespace slimkv {
namespace {

struct TokenizeFlags {
  ModelFlags model;
  std::string prompt, decode;  // exactly one of them (or --file)
  std::string file;            // the text to tokenize read from a file
  bool no_special = false;     // no BOS / EOS (HF add_special_tokens=False)
  bool parse_special = false;  // special tokens' text becomes their ids (HF's default)
  bool skip_special = false;   // detokenize: special tokens print nothing
  bool json = false;           // ids and pieces as JSON
};

// The tokenizer behind -m, loading weights only when the path is a model and not a vocabulary.
struct LoadedTokenizer {
  std::unique_ptr<Model> model;
  std::unique_ptr<Tokenizer> vocab_only;
  const Tokenizer* tok = nullptr;
};

bool is_tokenizer_json(const std::string& path) {
  namespace fs = std::filesystem;
  std::error_code ec;
  if (fs::is_directory(path, ec)) {
    const bool has_tok = fs::exists(fs::path(path) / "tokenizer.json", ec) ||
                         fs::exists(fs::path(path) / "tokenizer.json.gz", ec);
    return has_tok && !fs::exists(fs::path(path) / "config.json", ec);  // a folder without a model config
  }
  auto ends = [&](const char* s) {
    const size_t n = std::strlen(s);
    return path.size() >= n && path.compare(path.size() - n, n, s) == 0;
  };
  return ends(".json") || ends(".json.gz");
}

LoadedTokenizer load_tokenizer(const ModelFlags& flags) {
  LoadedTokenizer out;
  const std::string& path = flags.model;
  if (!path.empty() && is_tokenizer_json(path)) {
    out.vocab_only = load_hf_tokenizer(path);
  } else {
    char magic[4] = {0, 0, 0, 0};
    if (!path.empty()) std::ifstream(path, std::ios::binary).read(magic, 4);
    if (std::memcmp(magic, "GGUF", 4) == 0) {
      GgufFile gguf(path);
      if (gguf.tensors().empty()) out.vocab_only = tokenizer_from_gguf(gguf);  // a vocabulary-only file
    }
  }
  if (out.vocab_only) {
    out.tok = out.vocab_only.get();
    return out;
  }
  out.model = load_model_from_flags(flags);
  out.tok = out.model->tokenizer.get();
  SLIMKV_CHECK(out.tok, "{}: the model has no tokenizer", path);
  return out;
}

int run_detokenize(const Tokenizer& tok, const TokenizeFlags& f) {
  const std::vector<int32_t> ids = parse_token_ids(f.decode, tok.vocab_size(), "--ids");
  const std::string text = tok.decode(ids, DecodeOptions{f.skip_special});
  if (f.json) std::printf("%s\n", nlohmann::json{{"text", text}}.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace).c_str());
  else std::printf("%s\n", text.c_str());
  return 0;
}

int run_tokenize(const TokenizeFlags& f) {
  const LoadedTokenizer loaded = load_tokenizer(f.model);
  const Tokenizer& tok = *loaded.tok;
  if (!f.decode.empty()) return run_detokenize(tok, f);
  const std::string text = f.file.empty() ? f.prompt : read_text_file(f.file);
  const std::vector<int32_t> ids = tok.encode(text, EncodeOptions{!f.no_special, f.parse_special});
  if (f.json) {
    nlohmann::json pieces = nlohmann::json::array();
    for (int32_t id : ids) pieces.push_back(tok.token_text(id));
    nlohmann::json out{{"ids", ids}, {"pieces", pieces}};
    std::printf("%s\n", out.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace).c_str());
    return 0;
  }
  std::string line;
  for (size_t i = 0; i < ids.size(); ++i) line += (i ? " " : "") + std::to_string(ids[i]);
  std::printf("%s\n", line.c_str());
  return 0;
}

}  // namespace

void add_tokenize_command(CLI::App& app, std::vector<Command>& out) {
  auto f = std::make_shared<TokenizeFlags>();
  auto* sub = app.add_subcommand("tokenize", "Print the token ids of a text");
  add_model_flags(sub, f->model);
  auto* prompt = sub->add_option("-p,--prompt", f->prompt, "Text to tokenize");
  auto* decode = sub->add_option("--decode", f->decode, "Token ids (space or comma separated) to print as text");
  auto* file = sub->add_option("-f,--file", f->file, "Tokenize this file's text")->check(CLI::ExistingFile);
  prompt->excludes(decode);
  file->excludes(prompt)->excludes(decode);
  sub->callback([prompt, decode, file] {
    if (prompt->count() + decode->count() + file->count() == 0) throw CLI::RequiredError("--prompt, --file or --decode");
  });
  sub->add_flag("--no-special,--no-bos", f->no_special,
                "Add no special tokens (no BOS / EOS: HF add_special_tokens=False, as llama.cpp's test vectors)");
  sub->add_flag("--parse-special", f->parse_special,
                "Special tokens written in the text become their ids (HF's default; off: they are plain text)");
  sub->add_flag("--skip-special", f->skip_special, "With --decode: special tokens print nothing");
  sub->add_flag("--json", f->json, "Print JSON: ids and pieces (with --decode: the text)");
  out.push_back({sub, [f] { return run_tokenize(*f); }});

  auto d = std::make_shared<TokenizeFlags>();
  auto* dsub = app.add_subcommand("detokenize", "Print the text of token ids");
  add_model_flags(dsub, d->model);
  dsub->add_option("--ids,ids", d->decode, "Token ids (space or comma separated)")->required();
  dsub->add_flag("--skip-special", d->skip_special, "Special tokens print nothing (HF skip_special_tokens)");
  dsub->add_flag("--json", d->json, "Print JSON: {\"text\": ...}");
  out.push_back({dsub, [d] { return run_tokenize(*d); }});
}

}  // namespace slimkv
