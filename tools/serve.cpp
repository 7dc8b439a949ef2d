// `slimkv serve`: the OpenAI-compatible server. Binds first (so /health answers 503 while the model loads), then
// loads the model, starts the engine thread and serves until SIGINT/SIGTERM.
#include <pthread.h>
#include <signal.h>

#include <cstdio>
#include <filesystem>
#include <thread>

#include "engine/engine.h"
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

int run_serve(ServeFlags f) {
  f.server.load_api_key_file();
  f.server.validate();
  sigset_t sigs;  // every thread inherits the mask; the main thread waits for these
  sigemptyset(&sigs);
  sigaddset(&sigs, SIGINT);
  sigaddset(&sigs, SIGTERM);
  pthread_sigmask(SIG_BLOCK, &sigs, nullptr);
  signal(SIGPIPE, SIG_IGN);

  HttpServer http(f.server, f.engine.sched.max_num_seqs + 16);
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
  ChatTemplate tmpl = ChatTemplate::Plain;
  if (!f.server.chat_template.empty()) tmpl = resolve_chat_template(f.server.chat_template);  // before the load
  model = load_model_from_flags(f.model);
  f.engine.threads = resolve_threads(f.model.threads);
  engine = std::make_unique<Engine>(*model, f.engine);
  if (f.server.chat_template.empty() && !model->chat_template.empty()) tmpl = detect_chat_template(model->chat_template);

  ServerMetrics metrics;
  EngineService service(*engine, f.server.max_queue);
  service.set_after_step([&metrics](Engine& e, const std::vector<const Request*>& done) { metrics.on_step(e, done); });
  ServeContext ctx;
  ctx.model = model.get();
  ctx.service = &service;
  ctx.chat_template = tmpl;
  ctx.model_name = f.server.served_model_name.empty() ? std::filesystem::path(model->path).stem().string()
                                                      : f.server.served_model_name;
  ctx.max_model_len = engine->config().sched.max_model_len;
  ctx.request_timeout_s = f.server.request_timeout_s;
  std::fprintf(stderr, "%s\n", describe_plan(engine->kv_layout()).c_str());
  http.attach(ctx, &metrics);
  std::fprintf(stderr,
               "slimkv serve: ready: model \"%s\" (context %d tokens, chat template %s, %d KV blocks)\n"
               "  curl http://%s:%d/v1/completions -H 'Content-Type: application/json' "
               "-d '{\"prompt\": \"Once upon a time\", \"max_tokens\": 32}'\n",
               ctx.model_name.c_str(), ctx.max_model_len, chat_template_name(tmpl), engine->kv_manager().num_blocks(),
               f.server.host.c_str(), port);

  int sig = 0;
  sigwait(&sigs, &sig);
  std::fprintf(stderr, "slimkv serve: signal %d, shutting down\n", sig);
  http.stop();  // before the service and engine below go: no handler may run on them after this
  listener.thread.join();
  return 0;
}

}  // namespace

void add_serve_command(CLI::App& app, std::vector<Command>& out) {
  auto f = std::make_shared<ServeFlags>();
  CLI::App* sub = app.add_subcommand("serve", "OpenAI-compatible HTTP server (completions, chat, SSE, /metrics)");
  add_model_flags(sub, f->model);
  add_engine_flags(sub, f->engine);
  ServerConfig& s = f->server;
  sub->add_option("--host", s.host, "Address to bind (default 127.0.0.1)");
  sub->add_option("--port", s.port, "Port (default 8000; 0 = any free port)");
  sub->add_option("--api-key", s.api_keys, "Required API key (repeatable): 'Authorization: Bearer KEY'");
  sub->add_option("--api-key-file", s.api_key_file, "File with one API key per line");
  sub->add_option("--served-model-name", s.served_model_name, "Model name in the API (default: the file's name)");
  sub->add_option("--max-queue", s.max_queue, "Waiting requests before 429 + Retry-After");
  sub->add_option("--request-timeout", s.request_timeout_s, "Deadline of a non-streaming request, seconds");
  sub->add_option("--chat-template", s.chat_template,
                  "plain|chatml|qwen|llama2|llama3|gemma|phi3|mistral or a Jinja file (default: the model's)");
  sub->add_flag("--metrics-vllm-names", s.metrics_vllm_names, "Also emit every metric under vllm:");
  sub->add_option("--max-body-bytes", s.max_body_bytes, "Largest request body (413 beyond)");
  sub->add_option("--http-threads", s.http_threads, "HTTP handler threads (default: max-num-seqs + 16)");
  sub->add_option("--keep-alive-timeout", s.keep_alive_timeout_s, "Idle keep-alive connections close after, s");
  out.push_back({sub, [f] { return run_serve(*f); }});
}

}  // namespace slimkv
