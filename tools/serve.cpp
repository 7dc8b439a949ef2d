// `slimkv serve`: the OpenAI-compatible server. Binds first (so /health answers 503 while the model loads), then
// loads the model, starts the engine thread and serves until SIGINT/SIGTERM.
#include <malloc.h>
#include <pthread.h>
#include <signal.h>

#include <cstdio>
#include <filesystem>
#include <chrono>
#include <cstdlib>
#include <thread>

#include "dist/mpi_world.h"
#include "tools/step_follow.h"
#include "engine/engine.h"
#include "ops/dashboard_page.h"
#include "server/chat_template.h"
#include "server/engine_service.h"
#include "server/http_server.h"
#include "tools/commands.h"
#include "tools/common.h"

namespace slimkv {
namespace {

struct ServeFlags {
  ModelFlags model;
  EngineConfig engine;
  ServerConfig server;
};

// Graceful shutdown after the first SIGTERM/SIGINT: refuse new work (503, /health draining), let accepted requests
// finish for up to `timeout_s`, then end the rest with finish reason "abort" (streams get their last chunk and
// [DONE]) and give their responses a moment to go out. A second signal exits at once (status 1). A client that
// never finishes its request (slowloris) cannot hold the exit: a watchdog ends the process 5 s after the drain.
void drain(HttpServer& http, EngineService& service, double timeout_s, const sigset_t& sigs, int sig) {
  using clock = std::chrono::steady_clock;
  const auto t0 = clock::now();
  std::fprintf(stderr, "slimkv serve: signal %d: draining (up to --shutdown-timeout %g s; a second signal exits at "
               "once)\n", sig, timeout_s);
  http.begin_drain();
  const auto deadline = t0 + std::chrono::duration_cast<clock::duration>(std::chrono::duration<double>(timeout_s));
  bool aborted = false;
  while (true) {
    const timespec tick{0, 20 * 1000 * 1000};
    if (sigtimedwait(&sigs, nullptr, &tick) > 0) {
      std::fprintf(stderr, "slimkv serve: second signal: exiting now\n");
      std::_Exit(1);
    }
    if (service.idle() && http.active_requests() == 0) break;
    if (!aborted && clock::now() >= deadline) {
      std::fprintf(stderr, "slimkv serve: --shutdown-timeout reached: ending the remaining requests (abort)\n");
      service.abort_all();
      aborted = true;
    }
    if (aborted && clock::now() >= deadline + std::chrono::seconds(5)) break;  // responses that cannot be written
  }
  std::fprintf(stderr, "slimkv serve: drained in %.0f ms\n",
               std::chrono::duration<double, std::milli>(clock::now() - t0).count());
  std::thread([] {
    std::this_thread::sleep_for(std::chrono::seconds(5));
    std::fprintf(stderr, "slimkv serve: connections still open 5 s after the drain: exiting\n");
    std::_Exit(0);
  }).detach();
}

// No --chat-template: DeepSeek-V4's built-in renderer for deepseek4 models (their files carry a Python encoder, not
// a Jinja template), else the model's own template parsed once (a syntax error fails the start), else plain.
ChatTemplate model_chat_template(const Model& model) {
  if (model.config.family == "deepseek4") return ChatTemplate::deepseek_v4();
  if (model.chat_template.empty()) return ChatTemplate::plain();
  return ChatTemplate::from_jinja("the model's", model.chat_template);
}

ChatSpecialTokens chat_special_tokens(const Tokenizer& tok) {
  ChatSpecialTokens t;
  t.bos = tok.token_text(tok.bos_id());
  t.eos = tok.token_text(tok.eos_id());
  const std::vector<int32_t> empty = tok.encode("", true);
  t.tokenizer_adds_bos = tok.bos_id() >= 0 && !empty.empty() && empty.front() == tok.bos_id();
  return t;
}

// The tokens that may end a structured output once it is complete: the tokenizer's EOS (a chat model's end of turn).
std::vector<int32_t> output_end_ids(const Tokenizer& tok) {
  return tok.eos_id() >= 0 ? std::vector<int32_t>{tok.eos_id()} : std::vector<int32_t>{};
}

// Tensor parallelism: what every rank must agree on before it loads (the pool's size decides block ids).
void check_parallel_serve(const ServeFlags& f) {
  SLIMKV_CHECK(f.engine.cache.kv_cache_memory_gib > 0, "serve --tensor-parallel-size: give --kv-cache-memory (every "
               "rank must size its pool alike: rank 0's block ids address every rank's cache)");
}

// Ranks other than 0 of a tensor-parallel server: no HTTP; each step's batch comes from rank 0 (an empty message
// ends the loop), and this rank runs its slice of the forward. SIGINT / SIGTERM stay blocked: rank 0 drains, then
// says stop.
int follow_rank0(ServeFlags f) {
  f.model.mpi_serialized = true;
  auto model = load_model_from_flags(f.model);
  f.engine.threads = resolve_threads(f.model.threads);
  Engine engine(*model, f.engine);
  const int64_t steps = follow_leader(engine, *model);
  std::fprintf(stderr, "slimkv serve: rank %d of %d: stopped after %lld steps\n", model->shard.rank,
               model->shard.ranks, (long long)steps);
  return 0;
}

int run_serve(ServeFlags f) {
  f.server.load_api_key_file();
  f.server.validate();
  sigset_t sigs;  // every thread inherits the mask; the main thread waits for these
  sigemptyset(&sigs);
  sigaddset(&sigs, SIGINT);
  sigaddset(&sigs, SIGTERM);
  pthread_sigmask(SIG_BLOCK, &sigs, nullptr);
  signal(SIGPIPE, SIG_IGN);
  // Memory a request frees goes back to the system (issue R3): glibc raises its mmap threshold to the largest block
  // freed so far, so after one 10 MB answer every later one was carved from the threads' arenas, whose free tops
  // stayed resident (a burst of 8 such answers left +51% RSS after it). Fixed thresholds keep large blocks mapped
  // and trim the arenas' tops; the front trims the rest after each large answer.
  mallopt(M_MMAP_THRESHOLD, 4 << 20);
  mallopt(M_TRIM_THRESHOLD, 1 << 20);
  if (f.model.tensor_parallel_size > 1) {
    check_parallel_serve(f);
    if (mpi_world(true)->rank() != 0) return follow_rank0(f);
    f.model.mpi_serialized = true;
  }

  HttpServer http(f.server, f.engine.sched.max_num_seqs + 16);
  http.set_dashboard(dashboard_page(HealthThresholds{}));
  const int port = http.bind();
  // Whatever fails from here on (model, engine, chat template) stops the listener and joins it, then the error
  // propagates (exit 1 with its message) — never a joinable thread's terminate() or a hang.
  struct Listener {
    HttpServer& http;
    std::thread thread;
    ~Listener() {
      http.stop();
      if (thread.joinable()) thread.join();
    }
  } listener{http, std::thread([&http] { http.listen_after_bind(); })};
  std::fprintf(stderr, "slimkv serve: listening on http://%s:%d (loading the model)\n", f.server.host.c_str(), port);

  std::unique_ptr<Model> model;
  std::unique_ptr<Engine> engine;
  // --chat-template is read and parsed before the load (a bad one fails at once); the model's own after it
  ChatTemplate tmpl;
  if (!f.server.chat_template.empty()) tmpl = ChatTemplate::resolve(f.server.chat_template);
  model = load_model_from_flags(f.model);
  f.engine.threads = resolve_threads(f.model.threads);
  engine = std::make_unique<Engine>(*model, f.engine);
  lead_followers(*engine, *model);  // rank 0 of a tensor-parallel server: every step's batch to the other ranks first
  if (f.server.chat_template.empty()) tmpl = model_chat_template(*model);
  tmpl.set_special_tokens(chat_special_tokens(*model->tokenizer));

  ServerMetrics metrics;
  EngineService service(*engine, f.server.max_queue);
  service.set_after_step([&metrics](Engine& e, const std::vector<const Request*>& done) { metrics.on_step(e, done); });
  service.set_on_restated([&metrics](FinishReason from, FinishReason to) { metrics.restate(from, to); });
  ServeContext ctx;
  ctx.model = model.get();
  ctx.service = &service;
  ctx.chat_template = tmpl;
  ctx.chat_format = detect_chat_format(tmpl.source());
  ctx.model_name = f.server.served_model_name.empty() ? std::filesystem::path(model->path).stem().string()
                                                      : f.server.served_model_name;
  ctx.max_model_len = engine->config().sched.max_model_len;
  ctx.request_timeout_s = f.server.request_timeout_s;
  ctx.max_request_cost = f.server.max_request_cost;
  ctx.pooling = f.server.pooling.empty() ? model->config.pooling : *parse_pooling(f.server.pooling);
  ctx.loras = std::make_shared<LoraRegistry>(*model, ctx.model_name);
  for (const std::string& l : f.server.loras) {  // a bad adapter fails the start
    const auto [name, path] = parse_lora_flag(l);
    ctx.loras->load(name, path);
    std::fprintf(stderr, "slimkv serve: LoRA adapter '%s' from %s\n", name.c_str(), path.c_str());
  }
  ctx.constraints = std::make_shared<const OutputConstraints>(*model->tokenizer, output_end_ids(*model->tokenizer));
  std::fprintf(stderr, "model: %s\n%s\n", model->config.summary().c_str(), describe_plan(engine->kv_layout()).c_str());
  http.attach(ctx, &metrics);
  std::fprintf(stderr,
               "slimkv serve: ready: model \"%s\" (context %d tokens, chat template %s, %d KV blocks)\n"
               "  curl http://%s:%d/v1/completions -H 'Content-Type: application/json' "
               "-d '{\"prompt\": \"Once upon a time\", \"max_tokens\": 32}'\n",
               ctx.model_name.c_str(), ctx.max_model_len, tmpl.name().c_str(), engine->kv_manager().num_blocks(),
               f.server.host.c_str(), port);

  int sig = 0;
  sigwait(&sigs, &sig);
  drain(http, service, f.server.shutdown_timeout_s, sigs, sig);
  http.stop();  // before the service and engine below go: no handler may run on them after this
  listener.thread.join();
  service.inspect([&](Engine& e) {  // under the engine lock: never beside a step
    try {
      e.save_tier();  // the disk tier's cached blocks, every rank's part, for the next start
    } catch (const std::exception& err) {
      std::fprintf(stderr, "slimkv serve: KV disk tier: saving the cached blocks failed: %s\n", err.what());
    }
    release_followers(*model);  // then the other ranks stop following, whatever the save did
  });
  std::fprintf(stderr, "slimkv serve: stopped\n");
  return 0;
}

}  // namespace

void add_serve_command(CLI::App& app, std::vector<Command>& out) {
  auto f = std::make_shared<ServeFlags>();
  CLI::App* sub = app.add_subcommand("serve", "OpenAI-compatible HTTP server (completions, chat, SSE, /metrics)");
  add_model_flags(sub, f->model);
  add_parallel_flags(sub, f->model);
  add_engine_flags(sub, f->engine);
  ServerConfig& s = f->server;
  sub->add_option("--host", s.host, "Address to bind (default 127.0.0.1)");
  sub->add_option("--port", s.port, "Port (default 8000; 0 = any free port)");
  sub->add_option("--api-key", s.api_keys, "Required API key (repeatable): 'Authorization: Bearer KEY'");
  sub->add_option("--api-key-file", s.api_key_file, "File with one API key per line");
  sub->add_option("--served-model-name", s.served_model_name, "Model name in the API (default: the file's name)");
  sub->add_option("--max-queue", s.max_queue, "Waiting requests before 429 + Retry-After");
  sub->add_option("--lora", s.loras, "A LoRA adapter (GGUF, llama.cpp's convert_lora_to_gguf) served under NAME: "
                  "NAME=PATH, repeatable; a request's `model` picks it");
  sub->add_option("--pooling", s.pooling, "How /v1/embeddings pools final hidden states: none|mean|cls|last "
                  "(default: the model file's pooling_type; none refuses the route)");
  sub->add_option("--request-timeout", s.request_timeout_s, "Deadline of a non-streaming request, seconds");
  sub->add_option("--shutdown-timeout", s.shutdown_timeout_s,
                  "On SIGTERM/SIGINT: seconds accepted requests may finish before the rest are aborted (default 30)");
  sub->add_option("--chat-template", s.chat_template,
                  "A Jinja file, or plain|deepseek-v4|chatml|qwen|llama2|llama3|gemma|phi3|mistral "
                  "(default: the model's)");
  sub->add_flag("--metrics-vllm-names", s.metrics_vllm_names, "Also emit every metric under vllm:");
  sub->add_option("--max-body-bytes", s.max_body_bytes, "Largest request body (413 beyond)");
  sub->add_option("--http-threads", s.http_threads, "Requests handled at once, a thread each (default 512; more queue)");
  sub->add_option("--keep-alive-timeout", s.keep_alive_timeout_s, "Idle keep-alive connections close after, s");
  sub->add_option("--max-header-bytes", s.max_header_bytes, "Largest request head: line + headers (431 beyond)");
  sub->add_option("--max-header-lines", s.max_header_lines, "Most header lines in a request (431 beyond)");
  sub->add_option("--header-timeout", s.header_timeout_s, "Deadline of a request's whole head from its first byte, s (408)");
  sub->add_option("--body-timeout", s.body_timeout_s, "Deadline of a request's whole body after its head, s (408)");
  sub->add_option("--write-timeout", s.write_timeout_s, "A response (or stream chunk) the client does not read ends the connection after, s");
  sub->add_option("--max-connections", s.max_connections, "Open connections in all (503 beyond)");
  sub->add_option("--max-connections-per-ip", s.max_connections_per_ip, "Open connections from one address (503 beyond; 0 = no cap)");
  sub->add_option("--max-request-cost", s.max_request_cost,
                  "Largest request: choices x max_tokens x (1 + logprobs) (400 beyond)");
  sub->add_flag("--expose-model-path", s.expose_model_path, "/v1/models shows the model file's path as `root`");
  sub->add_option("--max-json-depth", s.max_json_depth, "Arrays and objects nested in a request body (400 beyond)");
  sub->add_option("--max-json-keys", s.max_json_keys, "Keys in one object of a request body (400 beyond)");
  sub->add_option("--max-json-items", s.max_json_items, "Items in one array of a request body (400 beyond)");
  sub->add_option("--max-json-values", s.max_json_values, "Values in a whole request body (400 beyond)");
  out.push_back({sub, [f] { return run_serve(*f); }});
}

}  // namespace slimkv
