// llama.cpp's logits with a LoRA adapter attached, for tests/reference/lora_reference_test.cpp (the shipped
// slimkv-ref cannot attach one): built against ../shared/bench-ref/llama.cpp's libllama.so.0 and the headers of the
// same commit (third_party/llama.cpp).
//   lora_ref BACKEND_DIR MODEL IDS_FILE OUT [--lora PATH --scale S]
// Writes OUT: float32 [n_ids][n_vocab], every position, the ids evaluated as one batch, F32 KV cache, flash
// attention off (slimkv-ref's defaults). BACKEND_DIR: where the CPU backend variants are loaded from.
#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "ggml-backend.h"
#include "llama.h"

int main(int argc, char** argv) {
  if (argc < 5) {
    std::fprintf(stderr, "usage: %s BACKEND_DIR MODEL IDS_FILE OUT [--lora PATH --scale S]\n", argv[0]);
    return 2;
  }
  const std::string backends = argv[1], model_path = argv[2], ids_path = argv[3], out = argv[4];
  std::string lora_path;
  float scale = 1.0f;
  for (int i = 5; i + 1 < argc; i += 2) {
    const std::string a = argv[i];
    if (a == "--lora") lora_path = argv[i + 1];
    else if (a == "--scale") scale = std::strtof(argv[i + 1], nullptr);
    else return std::fprintf(stderr, "unknown argument %s\n", a.c_str()), 2;
  }
  std::ifstream in(ids_path);
  std::stringstream ss;
  ss << in.rdbuf();
  std::string s = ss.str();
  for (char& c : s) c = (c == ',' || c == '[' || c == ']') ? ' ' : c;
  std::vector<llama_token> ids;
  std::istringstream is(s);
  for (long v; is >> v;) ids.push_back(static_cast<llama_token>(v));
  if (ids.empty()) return std::fprintf(stderr, "no ids in %s\n", ids_path.c_str()), 2;
  const int n = static_cast<int>(ids.size());

  ggml_backend_load_all_from_path(backends.c_str());
  llama_backend_init();
  llama_log_set([](ggml_log_level lvl, const char* t, void*) { if (lvl >= GGML_LOG_LEVEL_WARN) std::fputs(t, stderr); },
                nullptr);
  llama_model* model = llama_model_load_from_file(model_path.c_str(), llama_model_default_params());
  if (!model) return std::fprintf(stderr, "cannot load %s\n", model_path.c_str()), 1;
  const int vocab = llama_vocab_n_tokens(llama_model_get_vocab(model));
  llama_context_params cp = llama_context_default_params();
  cp.n_ctx = std::max(256, (n + 255) / 256 * 256);
  cp.n_batch = n;
  cp.n_ubatch = n;
  cp.n_seq_max = 1;
  cp.n_threads = cp.n_threads_batch = 1;
  cp.flash_attn_type = LLAMA_FLASH_ATTN_TYPE_DISABLED;
  cp.type_k = cp.type_v = GGML_TYPE_F32;
  cp.no_perf = true;
  llama_context* ctx = llama_init_from_model(model, cp);
  if (!ctx) return std::fprintf(stderr, "no context\n"), 1;
  if (!lora_path.empty()) {
    llama_adapter_lora* lora = llama_adapter_lora_init(model, lora_path.c_str());
    if (!lora) return std::fprintf(stderr, "cannot load the adapter %s\n", lora_path.c_str()), 1;
    if (llama_set_adapters_lora(ctx, &lora, 1, &scale) != 0) return std::fprintf(stderr, "cannot attach it\n"), 1;
  }
  llama_batch b = llama_batch_init(n, 0, 1);
  for (int j = 0; j < n; ++j) {
    b.token[j] = ids[j];
    b.pos[j] = j;
    b.n_seq_id[j] = 1;
    b.seq_id[j][0] = 0;
    b.logits[j] = 1;
  }
  b.n_tokens = n;
  if (llama_decode(ctx, b) != 0) return std::fprintf(stderr, "decode failed\n"), 1;
  std::vector<float> logits(static_cast<size_t>(n) * vocab);
  for (int j = 0; j < n; ++j) std::memcpy(&logits[static_cast<size_t>(j) * vocab], llama_get_logits_ith(ctx, j),
                                          vocab * sizeof(float));
  llama_batch_free(b);
  FILE* f = std::fopen(out.c_str(), "wb");
  if (!f || std::fwrite(logits.data(), sizeof(float), logits.size(), f) != logits.size()) return 1;
  std::fclose(f);
  llama_free(ctx);
  llama_model_free(model);
  return 0;
}
