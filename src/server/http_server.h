// The HTTP front: routes (/v1/completions, /v1/chat/completions, /v1/models, /health, /metrics, /dashboard), API
// keys, body limits, OpenAI-shaped errors and SSE streaming. Handler threads only parse, validate and wait on their
// request's queue; the engine runs on EngineService's thread. Listens before the model is loaded (/health: 503).
// Must not know: how the engine schedules or computes.
#pragma once
#include <atomic>
#include <memory>
#include <string>

#include "server/generation_session.h"
#include "server/server_config.h"
#include "server/server_metrics.h"

namespace httplib {
class Server;
}

namespace slimkv {

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
  void install_routes();

  ServerConfig cfg_;
  std::unique_ptr<httplib::Server> http_;
  ServeContext ctx_;
  std::string dashboard_html_;
  ServerMetrics* metrics_ = nullptr;
  std::atomic<bool> ready_{false};
  int listen_fd_ = -1;
  int bound_port_ = -1;
  std::atomic<bool> stop_requested_{false};
  std::atomic<bool> draining_{false};
  std::atomic<int32_t> active_{0};
  std::atomic<int> listen_state_{0};  // 0: listen_after_bind not called yet, 1: listening, 2: returned
};

}  // namespace slimkv
