// `slimkv logits`: the logits of every position of a token-id prompt, float32 little-endian [n_ids][n_vocab] — the
// format llama.cpp's reference dumps use, so engines compare position by position. The prompt is evaluated as one
// batch unless --ubatch U splits it (1 = token by token), as llama.cpp's reference runs do.
#include <cstdio>
#include <fstream>

#include "core/check.h"
#include "core/mapped_file.h"
#include "runner/sequence_forward.h"
#include "tools/commands.h"
#include "tools/common.h"

namespace slimkv {
namespace {

struct LogitsFlags {
  ModelFlags model;
  std::string ids, ids_file, out;
  int32_t ubatch = 0;  // 0 = one batch
  int32_t block_size = 16;
  std::string mla_attention = "absorbed";
};

int run_logits(const LogitsFlags& f) {
  SLIMKV_CHECK(f.ids.empty() != f.ids_file.empty(), "give exactly one of --ids or --ids-file");
  auto model = load_model_from_flags(f.model);
  const std::string text = f.ids.empty() ? read_text_file(f.ids_file) : f.ids;
  const std::vector<int32_t> ids =
      parse_token_ids(text, model->config.vocab_size, f.ids.empty() ? f.ids_file : std::string("--ids"));
  const int32_t n = static_cast<int32_t>(ids.size());
  SLIMKV_CHECK(n <= model->config.max_seq_len, "{} ids exceed the model's context of {} tokens", n,
               model->config.max_seq_len);
  ThreadPool pool(resolve_threads(f.model.threads));
  const int32_t chunk = f.ubatch > 0 ? std::min(f.ubatch, n) : n;
  SequenceForward fwd(*model, &pool, n, f.block_size, chunk);
  fwd.forward_pass().block_options().mla_attention = parse_mla_attention(f.mla_attention);
  const size_t vocab = model->config.vocab_size;
  std::vector<float> logits(static_cast<size_t>(n) * vocab);
  for (int32_t p = 0; p < n; p += chunk) {
    const int32_t len = std::min(chunk, n - p);
    fwd.forward(std::span<const int32_t>(ids).subspan(p, len), p, true, logits.data() + static_cast<size_t>(p) * vocab);
  }
  if (!is_output_rank(*model)) return 0;  // a tensor-parallel job's other ranks: the same logits, rank 0 writes
  std::ofstream out(f.out, std::ios::binary);
  SLIMKV_CHECK(out.good(), "cannot write '{}'", f.out);
  out.write(reinterpret_cast<const char*>(logits.data()), static_cast<std::streamsize>(logits.size() * sizeof(float)));
  SLIMKV_CHECK(out.good(), "writing '{}' failed", f.out);
  std::fprintf(stderr, "%d positions x %zu logits -> %s\n", n, vocab, f.out.c_str());
  return 0;
}

}  // namespace

void add_logits_command(CLI::App& app, std::vector<Command>& out) {
  auto f = std::make_shared<LogitsFlags>();
  auto* sub = app.add_subcommand("logits", "Write the logits of every position of a token-id prompt (float32 "
                                           "[n_ids][n_vocab]), for comparison with other engines");
  add_model_flags(sub, f->model);
  add_parallel_flags(sub, f->model);
  sub->add_option("--ids", f->ids, "Token ids, e.g. 1,5,9");
  sub->add_option("--ids-file", f->ids_file, "A file of token ids (comma or space separated)");
  sub->add_option("-o,--output", f->out, "Output file")->required();
  sub->add_option("--ubatch", f->ubatch, "Evaluate in chunks of U tokens (default: the whole prompt as one batch)")
      ->check(CLI::Range(0, 1 << 24));
  sub->add_option("--block-size", f->block_size, "KV block size in tokens")->check(CLI::Range(1, 256));
  sub->add_option("--mla-attention", f->mla_attention, "MLA models: absorbed (default) | decompressed | auto");
  out.push_back({sub, [f] { return run_logits(*f); }});
}

}  // namespace slimkv
