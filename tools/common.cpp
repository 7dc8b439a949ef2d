#include "tools/common.h"

#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cstdlib>
#include <filesystem>
#include <fstream>

#include "core/thread_pool.h"
#include "dist/mpi_world.h"

namespace slimkv {

void add_model_flags(CLI::App* app, ModelFlags& f) {
  app->add_option("-m,--model", f.model, "Model: llama2.c .bin, .gguf, or Hugging Face directory (default: stories260K)");
  app->add_option("-t,--tokenizer", f.tokenizer, "llama2.c tokenizer.bin (default: found beside the model)");
  app->add_option("--threads", f.threads, "Worker threads (default: number of cores)")->check(CLI::Range(0, 1024));
}

void add_engine_flags(CLI::App* app, EngineConfig& c) {
  app->add_option("--block-size", c.cache.block_size, "KV block size in tokens (power of two, 1..256)");
  app->add_option("--kv-cache-memory", c.cache.kv_cache_memory_gib, "KV cache budget in GiB (default: utilization)");
  app->add_option("--kv-memory-utilization", c.cache.kv_memory_utilization,
                  "Ceiling on the KV cache as a fraction of available RAM when --kv-cache-memory is not given (the pool is "
                  "also no larger than --max-num-seqs full sequences of --max-model-len)");
  app->add_flag("--enable-prefix-caching,!--no-enable-prefix-caching", c.cache.enable_prefix_caching,
                "Reuse cached KV blocks of shared prefixes (default on)");
  app->add_option("--kv-offload-dir", c.cache.kv_offload_dir,
                  "A disk tier for prefix-cache blocks the pool drops, kept across restarts (docs/server.md)");
  app->add_option("--kv-offload-bytes", c.cache.kv_offload_bytes, "The disk tier's size in bytes (default 4 GiB)");
  app->add_option("--max-model-len", c.sched.max_model_len, "Tokens per sequence (default: the model's context)");
  app->add_option("--max-num-seqs", c.sched.max_num_seqs, "Sequences running per step");
  app->add_option("--max-num-batched-tokens", c.sched.max_num_batched_tokens, "Tokens per step (chunked prefill)");
  app->add_option("--max-waiting", c.sched.max_waiting, "Queued requests before new ones are refused");
  app->add_option("--speculative-config", c.speculative_config,
                  "Speculative decoding, vLLM's JSON: {\"method\": \"ngram\", \"num_speculative_tokens\": 4, "
                  "\"prompt_lookup_min\": 1, \"prompt_lookup_max\": 4}, or {\"method\": \"draft_model\", \"model\": PATH, "
                  "\"num_speculative_tokens\": 4}, or {\"method\": \"mtp\", \"num_speculative_tokens\": 2} (the model's own "
                  "MTP head) (greedy and sampled requests; docs/server.md)");
  app->add_option("--mla-attention", c.mla_attention,
                  "MLA models: absorbed | decompressed | auto (default: per step, the cheaper by multiply-adds)");
  // One flag per compression field, from the field table (compress/compression_config.h): parsed once, into the
  // typed field; a bad value is the field's own error.
  for (const CompressionField& field : compression_fields()) {
    const CompressionField* f = &field;
    CLI::Option* o = app->add_option_function<std::string>(
        f->flag(), [&c, f](const std::string& v) { f->set(c.compress, v); }, f->help);
    if (!f->choices.empty()) o->check(CLI::IsMember(f->choices));
  }
  app->add_option("--kv-config", c.kv_config_file, "JSON compression config (keys: flag names with underscores)");
}

std::string default_model_path() {
  namespace fs = std::filesystem;
  const char* rel = "shared/models/stories260K/stories260K.bin";
  std::vector<fs::path> roots;
  char exe[4096];
  ssize_t n = ::readlink("/proc/self/exe", exe, sizeof(exe) - 1);
  if (n > 0) {
    exe[n] = 0;
    // <repo>/build/slimkv -> <repo>/.. holds shared/
    roots.push_back(fs::path(exe).parent_path().parent_path().parent_path());
  }
  roots.push_back(fs::path(SLIMKV_SOURCE_DIR).parent_path());
  for (auto& r : roots) {
    fs::path p = r / rel;
    if (fs::exists(p)) return p.lexically_normal().string();
  }
  fail("no -m given and the default model is absent: expected ../shared/models/stories260K/stories260K.bin next to "
       "the repository ({})", (roots.back() / rel).lexically_normal().string());
}

void add_parallel_flags(CLI::App* app, ModelFlags& f) {
  app->add_option("--tensor-parallel-size", f.tensor_parallel_size,
                  "Split each layer over this many MPI ranks (run under mpirun -np N; default 1)")
      ->check(CLI::Range(1, 64));
  app->add_option("--expert-parallel-size", f.expert_parallel_size,
                  "MoE: spread the routed experts over E groups of T / E ranks, each expert column-split inside its "
                  "group (E divides T; default T: every rank its experts whole; 1: every expert over every rank)")
      ->check(CLI::Range(1, 64));
  app->add_option("--expert-combine", f.expert_combine,
                  "MoE: how the ranks' expert outputs meet: all-reduce (default), or all-to-all (each token's rows "
                  "only to the rank that owns it, then an all-gather; shared experts kept whole)")
      ->check(CLI::IsMember({"all-reduce", "all-to-all"}));
}

bool is_output_rank(const Model& m) { return m.shard.rank == 0; }

int64_t proc_status_kb(const char* key) {
  std::ifstream in("/proc/self/status");
  for (std::string line; std::getline(in, line);) {
    if (line.rfind(key, 0) == 0) return std::stoll(line.substr(std::string(key).size() + 1));
  }
  return 0;
}

void silence_stdout_unless_output_rank(const Model& m) {
  if (!is_output_rank(m)) SLIMKV_CHECK(std::freopen("/dev/null", "w", stdout) != nullptr, "cannot silence stdout");
}

std::unique_ptr<Model> load_model_from_flags(const ModelFlags& f) {
  ModelLoadOptions o;
  o.model_path = f.model.empty() ? default_model_path() : f.model;
  o.tokenizer_path = f.tokenizer;
  std::shared_ptr<Collectives> world;
  if (f.tensor_parallel_size > 1) {
    world = mpi_world(f.mpi_serialized);
    SLIMKV_CHECK(world->size() == f.tensor_parallel_size,
                 "--tensor-parallel-size {} but this MPI job has {} rank(s): run it as mpirun -np {} slimkv ...",
                 f.tensor_parallel_size, world->size(), f.tensor_parallel_size);
    o.shard.rank = world->rank();
    o.shard.ranks = world->size();
    o.shard.expert_groups = f.expert_parallel_size > 0 ? f.expert_parallel_size : world->size();
    o.shard.expert_all_to_all = f.expert_combine == "all-to-all";
    SLIMKV_CHECK(o.shard.ranks % o.shard.expert_groups == 0, "--expert-parallel-size {} must divide "
                 "--tensor-parallel-size {}", o.shard.expert_groups, o.shard.ranks);
  } else {
    SLIMKV_CHECK(f.expert_parallel_size <= 1 && f.expert_combine == "all-reduce", "--expert-parallel-size and "
                 "--expert-combine need --tensor-parallel-size above 1 (under mpirun)");
  }
  auto m = load_model(o);
  m->collectives = world;
  return m;
}

DType parse_dtype(const std::string& s) {  // a weight type's GGML name, any case (f32, q8_0, q4_k, iq4_xs, ...)
  std::string names;
  for (const DTypeInfo& i : kDTypeInfo) {
    if (!i.weight) continue;
    std::string lower(i.name);
    for (char& c : lower) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    if (s == lower || s == i.name) return i.type;
    names += (names.empty() ? "" : ", ") + lower;
  }
  fail("unknown weight dtype '{}' ({})", s, names);
}

// 0: the cores, shared among the ranks an MPI launcher started on this host (Open MPI's / MPICH's local size), so
// ranks on one machine do not oversubscribe it with spinning pools.
int32_t resolve_threads(int32_t flag) {
  if (flag > 0) return flag;
  int32_t local_ranks = 1;
  for (const char* name : {"OMPI_COMM_WORLD_LOCAL_SIZE", "MPI_LOCALNRANKS"}) {
    const char* v = std::getenv(name);
    if (v && std::atoi(v) > 0) local_ranks = std::atoi(v);
  }
  return std::max(1, default_num_threads() / local_ranks);
}

std::vector<int32_t> parse_token_ids(const std::string& text, int32_t vocab_size, const std::string& what) {
  std::vector<int32_t> ids;
  size_t i = 0;
  while (i < text.size()) {
    const char ch = text[i];
    if (ch == ',' || ch == ' ' || ch == '\n' || ch == '\r' || ch == '\t' || ch == '[' || ch == ']') {
      ++i;
      continue;
    }
    size_t j = i;
    while (j < text.size() && std::isdigit(static_cast<unsigned char>(text[j]))) ++j;
    SLIMKV_CHECK(j > i && j - i <= 9, "{}: '{}' is not a token id", what, text.substr(i, std::min<size_t>(12, text.size() - i)));
    const int64_t v = std::stoll(text.substr(i, j - i));
    SLIMKV_CHECK(v < vocab_size, "{}: token id {} is outside the vocabulary (0..{})", what, v, vocab_size - 1);
    ids.push_back(static_cast<int32_t>(v));
    i = j;
  }
  SLIMKV_CHECK(!ids.empty(), "{}: no token ids", what);
  return ids;
}

}  // namespace slimkv
