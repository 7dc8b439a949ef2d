// The routes: /v1/completions, /v1/chat/completions, /tokenize, /detokenize, /v1/models, /health, /metrics,
// /dashboard — one handler each, over the HTTP front (http_front.h) through the plain request / response of
// http_exchange.h. Before a body is read, each request's head is checked once (route 404, method 405 + Allow, API
// key 401, JSON content type 415, draining or loading 503); errors are OpenAI-shaped. Handlers parse, validate and
// wait on their request's queue; the engine runs on EngineService's thread. Listens before the model is loaded
// (/health: 503).
// Must not know: sockets, the HTTP library, or how the engine schedules or computes.
#pragma once
#include <atomic>
#include <memory>
#include <optional>
#include <string>

#include "server/generation_session.h"
#include "server/http_exchange.h"
#include "server/response_store.h"
#include "server/server_config.h"
#include "server/server_metrics.h"

namespace slimkv {

class HttpFront;

class HttpServer {
 public:
  HttpServer(ServerConfig cfg, int32_t num_handler_threads);
  ~HttpServer();

  int bind();                     // binds host:port (port 0: any free one); returns the port; throws Error
  void listen_after_bind();       // serves until stop(); blocking
  void stop();
  // The model is ready: the routes that need it start answering (until then they answer 503).
  void attach(ServeContext ctx, ServerMetrics* metrics);
  // Graceful shutdown, first step: new generation requests get 503 + Retry-After and /health says draining;
  // requests already accepted go on.
  void begin_drain() { draining_ = true; }
  // The page GET /dashboard serves (ops' dashboard_page); call before listening. Empty: 404.
  void set_dashboard(std::string html) { dashboard_html_ = std::move(html); }
  // Generation requests whose response has not been written out yet (streams until their last chunk).
  int32_t active_requests() const { return active_; }

 private:
  using Route = HttpResponse (HttpServer::*)(const HttpRequest&, HttpPeer&);
  struct RouteEntry {
    const char* method;
    const char* path;
    Route handler;
    bool needs_key;     // every route but /health and the dashboard's page
    bool generation;    // a JSON body, refused while draining or loading
  };
  static const std::vector<RouteEntry>& routes();
  std::optional<HttpResponse> check_head(const HttpRequest& req) const;
  HttpResponse handle(const HttpRequest& req, HttpPeer& peer);

  HttpResponse health(const HttpRequest&, HttpPeer&);
  HttpResponse models(const HttpRequest&, HttpPeer&);
  HttpResponse metrics(const HttpRequest&, HttpPeer&);
  HttpResponse dashboard(const HttpRequest&, HttpPeer&);
  enum class Api { kCompletions, kChat, kMessages, kResponses };  // one request model, its encodings
  HttpResponse completions(const HttpRequest& req, HttpPeer& peer) { return generate(req, peer, Api::kCompletions); }
  HttpResponse chat_completions(const HttpRequest& req, HttpPeer& peer) { return generate(req, peer, Api::kChat); }
  HttpResponse messages(const HttpRequest& req, HttpPeer& peer);  // Anthropic's: errors in its encoding too
  HttpResponse responses(const HttpRequest& req, HttpPeer& peer) { return generate(req, peer, Api::kResponses); }
  HttpResponse generate(const HttpRequest& req, HttpPeer& peer, Api api);
  HttpResponse embeddings(const HttpRequest& req, HttpPeer& peer);
  HttpResponse load_lora(const HttpRequest& req, HttpPeer&);
  HttpResponse unload_lora(const HttpRequest& req, HttpPeer&);
  nlohmann::ordered_json adapter_route_body(const HttpRequest& req) const;  // 403 without an API key
  std::shared_ptr<void> count_active();  // active_requests() + 1 until the handle is released
  // The adapter a request's `model` names: null for the base model (or none given); ApiError 404 otherwise.
  std::shared_ptr<const LoraAdapter> served_adapter(const std::string& model) const;
  HttpResponse tokenize(const HttpRequest& req, HttpPeer&);
  HttpResponse detokenize(const HttpRequest& req, HttpPeer&);

  ServerConfig cfg_;
  std::unique_ptr<HttpFront> front_;
  ServeContext ctx_;
  std::string dashboard_html_;
  ServerMetrics* metrics_ = nullptr;
  std::shared_ptr<ResponseStore> stored_ = std::make_shared<ResponseStore>(kStoredResponsesMax, kStoredResponseSeconds);
  int64_t started_unix_s_ = 0;    // /v1/models' `created`
  std::atomic<bool> ready_{false};
  std::atomic<bool> draining_{false};
  std::atomic<int32_t> active_{0};
};

// The OpenAI error body for a status and message (the front's own refusals use it too).
HttpResponse error_response(int32_t status, const std::string& message);

}  // namespace slimkv
