// `slimkv tokenize`: prints the token ids of a text, space-separated, on one line (or with --decode the text of ids).
// -m may be a full model or a vocabulary-only GGUF (llama.cpp's test vocabularies).
#include <cstdio>
#include <cstring>
#include <fstream>

#include "formats/gguf_file.h"
#include "tools/commands.h"
#include "tools/common.h"

namespace slimkv {
namespace {

struct TokenizeFlags {
  ModelFlags model;
  std::string prompt, decode;  // exactly one of them
  bool no_bos = false;
};

int run_tokenize(const TokenizeFlags& f) {
  std::unique_ptr<Model> model;
  std::unique_ptr<GgufFile> vocab_gguf;
  std::unique_ptr<Tokenizer> vocab_only;
  const Tokenizer* tok = nullptr;
  char magic[4] = {0, 0, 0, 0};
  if (!f.model.model.empty()) std::ifstream(f.model.model, std::ios::binary).read(magic, 4);
  if (std::memcmp(magic, "GGUF", 4) == 0) {
    vocab_gguf = std::make_unique<GgufFile>(f.model.model);
    if (vocab_gguf->tensors().empty()) {  // vocabulary-only file
      vocab_only = tokenizer_from_gguf(*vocab_gguf);
      tok = vocab_only.get();
    }
  }
  if (tok == nullptr) {
    model = load_model_from_flags(f.model);
    tok = model->tokenizer.get();
  }
  if (!f.decode.empty()) {
    std::vector<int32_t> ids;
    for (const char* p = f.decode.c_str(); *p;) {
      char* end = nullptr;
      const long id = std::strtol(p, &end, 10);
      if (end == p) {
        ++p;  // a separator
        continue;
      }
      SLIMKV_CHECK(id >= 0 && id < tok->vocab_size(), "token id {} outside the vocabulary", id);
      ids.push_back(static_cast<int32_t>(id));
      p = end;
    }
    std::printf("%s\n", tok->decode(ids).c_str());
    return 0;
  }
  std::vector<int32_t> ids = tok->encode(f.prompt, !f.no_bos);
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
  prompt->excludes(decode);
  sub->callback([prompt, decode] {
    if (prompt->count() + decode->count() == 0) throw CLI::RequiredError("--prompt or --decode");
  });
  sub->add_flag("--no-bos", f->no_bos, "Add no special tokens (as llama.cpp's test vectors)");
  out.push_back({sub, [f] { return run_tokenize(*f); }});
}

}  // namespace slimkv
