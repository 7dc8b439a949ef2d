// `slimkv embed`: the embedding of each text (or token-id list) computed directly — one sequence at a time through
// SequenceForward, every token's final hidden state pooled here (mean / cls / last) and L2-normalised — the
// reference /v1/embeddings is checked against (the server pools inside the engine's batched, chunked steps).
#include <cmath>
#include <cstdio>
#include <nlohmann/json.hpp>

#include "core/check.h"
#include "core/pooling.h"
#include "runner/sequence_forward.h"
#include "tools/commands.h"
#include "tools/common.h"

namespace slimkv {
namespace {

struct EmbedFlags {
  ModelFlags model;
  std::vector<std::string> prompts;  // -p, repeatable: texts tokenized as the server does (BOS, special tokens)
  std::string pooling;               // empty: the model's pooling_type
  bool no_normalize = false;
};

// The pooled [dim] vector of a sequence's hidden states ([n, dim]).
std::vector<float> pool(const std::vector<float>& hidden, int32_t n, int32_t dim, Pooling p) {
  std::vector<float> out(dim, 0.0f);
  if (p == Pooling::Mean) {
    std::vector<double> sum(dim, 0.0);
    for (int32_t t = 0; t < n; ++t) {
      for (int32_t j = 0; j < dim; ++j) sum[j] += hidden[static_cast<size_t>(t) * dim + j];
    }
    for (int32_t j = 0; j < dim; ++j) out[j] = static_cast<float>(sum[j] / n);
  } else {
    const int32_t t = p == Pooling::First ? 0 : n - 1;
    out.assign(hidden.begin() + static_cast<size_t>(t) * dim, hidden.begin() + static_cast<size_t>(t + 1) * dim);
  }
  return out;
}

int run_embed(const EmbedFlags& f) {
  SLIMKV_CHECK(!f.prompts.empty(), "give at least one -p TEXT");
  auto model = load_model_from_flags(f.model);
  const Pooling pooling = f.pooling.empty() ? model->config.pooling : parse_pooling(f.pooling).value_or(Pooling::None);
  SLIMKV_CHECK(pooling != Pooling::None, "no pooling: the model has no pooling_type; give --pooling mean|cls|last");
  const int32_t dim = model->config.dim;
  ThreadPool pool_threads(resolve_threads(f.model.threads));
  nlohmann::ordered_json data = nlohmann::ordered_json::array();
  for (const std::string& text : f.prompts) {
    const std::vector<int32_t> ids = model->tokenizer->encode(text, EncodeOptions{true, /*parse_special=*/true});
    const int32_t n = static_cast<int32_t>(ids.size());
    SLIMKV_CHECK(n > 0 && n < model->config.max_seq_len, "'{}': {} tokens (the context holds {})", text, n,
                 model->config.max_seq_len);
    SequenceForward fwd(*model, &pool_threads, n);
    std::vector<float> hidden(static_cast<size_t>(n) * dim);  // [n, dim]
    fwd.hidden_states(ids, hidden.data());
    std::vector<float> v = pool(hidden, n, dim, pooling);
    if (!f.no_normalize) {
      double s = 0.0;
      for (float x : v) s += static_cast<double>(x) * x;
      for (float& x : v) x = s > 0 ? static_cast<float>(x / std::sqrt(s)) : x;
    }
    data.push_back({{"tokens", n}, {"embedding", v}});
  }
  if (!is_output_rank(*model)) return 0;
  const nlohmann::ordered_json out = {{"pooling", pooling_name(pooling)}, {"data", std::move(data)}};
  std::printf("%s\n", out.dump().c_str());
  return 0;
}

}  // namespace

void add_embed_command(CLI::App& app, std::vector<Command>& out) {
  auto f = std::make_shared<EmbedFlags>();
  auto* sub = app.add_subcommand("embed", "Embeddings of texts computed directly (pooled final hidden states, "
                                          "L2-normalised), as JSON: the reference for /v1/embeddings");
  add_model_flags(sub, f->model);
  sub->add_option("-p,--prompt", f->prompts, "A text to embed (repeatable)")->required();
  sub->add_option("--pooling", f->pooling, "none|mean|cls|last (default: the model file's pooling_type)");
  sub->add_flag("--no-normalize", f->no_normalize, "Print the pooled vectors as they are");
  out.push_back({sub, [f] { return run_embed(*f); }});
}

}  // namespace slimkv
