// GGUF (v1-v3) -> Model: general.architecture picks the family (model/family.h), which reads its hyper-parameters
// and names its tensors; this file only knows the container.
#include "formats/gguf_file.h"
#include "model/family.h"
#include "model/model.h"
#include "model/weight_binder.h"

namespace slimkv {

std::unique_ptr<Model> gguf_model_weights(std::shared_ptr<const GgufFile> g) {
  auto m = std::make_unique<Model>();
  m->keepalive.push_back(g);
  const std::string arch = g->get_string_opt("general.architecture").value_or("llama");
  const ModelFamily& family = family_for_gguf(arch, g->source());
  ModelConfig& c = m->config;
  family.read_hparams(*gguf_hparams(*g, arch), c);
  c.format = fmt::format("gguf v{}", g->version());
  bind_weights(*gguf_tensors(*g), family, c, *m);
  c.finalize();
  c.validate();
  return m;
}

std::unique_ptr<Model> load_gguf_model(const std::string& path) {
  auto g = std::make_shared<GgufFile>(path);
  auto m = gguf_model_weights(g);
  const ModelConfig& c = m->config;
  m->tokenizer = tokenizer_from_gguf(*g);
  m->chat_template = g->get_string_opt("tokenizer.chat_template").value_or("");
  SLIMKV_CHECK(m->tokenizer->vocab_size() == c.vocab_size, "{}: vocabulary has {} tokens but the model {}", path,
               m->tokenizer->vocab_size(), c.vocab_size);
  return m;
}

}  // namespace slimkv
