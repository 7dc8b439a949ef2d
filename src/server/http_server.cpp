#include "server/http_server.h"

#include <malloc.h>
#include <strings.h>

#include <chrono>
#include <cmath>

#include <fmt/format.h>

#include "core/check.h"
#include "server/anthropic_request.h"
#include "server/anthropic_response.h"
#include "server/api_error.h"
#include "server/embeddings_session.h"
#include "server/responses_request.h"
#include "server/responses_response.h"
#include "server/http_front.h"
#include "server/json_field.h"
#include "server/tokenize_endpoints.h"

namespace slimkv {
namespace {

HttpResponse from_api_error(const ApiError& e) {
  HttpResponse r;
  r.status = e.status;
  if (e.status == 429 || e.status == 503) r.headers.emplace_back("Retry-After", "1");
  if (e.status == 401) r.headers.emplace_back("WWW-Authenticate", "Bearer");
  r.body = dump_json(e.to_json());
  return r;
}

// Equal strings, in time that depends on the length only (not on where they first differ).
bool constant_time_equal(const std::string& a, const std::string& b) {
  if (a.size() != b.size()) return false;
  unsigned char diff = 0;
  for (size_t i = 0; i < a.size(); ++i) diff |= static_cast<unsigned char>(a[i] ^ b[i]);
  return diff == 0;
}

// `Authorization: Bearer <key>` (OpenAI's clients) or `x-api-key: <key>` (Anthropic's).
bool authorized(const HttpRequest& req, const std::vector<std::string>& keys) {
  // The scheme is case-insensitive (RFC 7235); keys compare in constant time (no timing oracle on the prefix).
  bool ok = false;
  const std::string auth = req.header("Authorization"), api_key = req.header("x-api-key");
  if (auth.size() > 7 && strncasecmp(auth.c_str(), "bearer ", 7) == 0) {
    const std::string given = auth.substr(7);
    for (const auto& k : keys) ok |= constant_time_equal(given, k);
  }
  if (!api_key.empty()) {
    for (const auto& k : keys) ok |= constant_time_equal(api_key, k);
  }
  return ok;
}

// application/json, any case, with or without parameters (charset).
bool json_content_type(const std::string& v) {
  const std::string type = v.substr(0, v.find(';'));
  size_t a = type.find_first_not_of(" \t"), b = type.find_last_not_of(" \t");
  return a != std::string::npos && strncasecmp(type.c_str() + a, "application/json", 16) == 0 && b - a + 1 == 16;
}

// Linear in the body's size whatever its shape (ordered_json's own parse is quadratic in an object's keys), under the
// --max-json-* caps; key order kept (templates render it). A cap crossed is a 400 naming the top-level field.
nlohmann::ordered_json parse_body(const std::string& body, const JsonLimits& limits) {
  try {
    return parse_bounded_json(body, limits);
  } catch (const JsonTextError& e) {
    if (e.limit.empty()) throw invalid_request(fmt::format("the body is {}", e.what()));
    throw invalid_request(fmt::format("the body: {}", e.what()), e.top_field);
  }
}

}  // namespace

HttpResponse error_response(int32_t status, const std::string& message) {
  return from_api_error(ApiError(status, message, status >= 500 ? "server_error" : "invalid_request_error"));
}

const std::vector<HttpServer::RouteEntry>& HttpServer::routes() {
  static const std::vector<RouteEntry> r = {
      {"POST", "/v1/completions", &HttpServer::completions, true, true},
      {"POST", "/v1/chat/completions", &HttpServer::chat_completions, true, true},
      {"POST", "/v1/messages", &HttpServer::messages, true, true},
      {"POST", "/v1/responses", &HttpServer::responses, true, true},
      {"POST", "/v1/embeddings", &HttpServer::embeddings, true, true},
      {"POST", "/v1/load_lora_adapter", &HttpServer::load_lora, true, true},
      {"POST", "/v1/unload_lora_adapter", &HttpServer::unload_lora, true, true},
      {"POST", "/tokenize", &HttpServer::tokenize, true, true},
      {"POST", "/detokenize", &HttpServer::detokenize, true, true},
      {"GET", "/v1/models", &HttpServer::models, true, false},
      {"GET", "/health", &HttpServer::health, false, false},
      {"GET", "/metrics", &HttpServer::metrics, true, false},
      {"GET", "/dashboard", &HttpServer::dashboard, false, false},
  };
  return r;
}

HttpServer::HttpServer(ServerConfig cfg, int32_t num_handler_threads) : cfg_(std::move(cfg)) {
  cfg_.validate();
  started_unix_s_ = std::chrono::duration_cast<std::chrono::seconds>(
                        std::chrono::system_clock::now().time_since_epoch()).count();
  HttpLimits lim = cfg_.http_limits();
  if (cfg_.http_threads == 0) lim.handler_threads = std::max(512, num_handler_threads);
  HttpRoutes r;
  r.handle = [this](const HttpRequest& req, HttpPeer& peer) { return handle(req, peer); };
  r.check_head = [this](const HttpRequest& req) { return check_head(req); };
  r.error = error_response;
  front_ = std::make_unique<HttpFront>(lim, std::move(r));
}

HttpServer::~HttpServer() { stop(); }

int HttpServer::bind() { return front_->bind(cfg_.host, cfg_.port); }
void HttpServer::listen_after_bind() { front_->run(); }
void HttpServer::stop() { front_->stop(); }

void HttpServer::attach(ServeContext ctx, ServerMetrics* metrics) {
  ctx_ = std::move(ctx);
  metrics_ = metrics;
  ready_ = true;
}

std::optional<HttpResponse> HttpServer::check_head(const HttpRequest& req) const {
  const RouteEntry* route = nullptr;
  std::string allow;
  bool open_path = false;  // a path served without the key (/health, the dashboard's page)
  for (const RouteEntry& e : routes()) {
    if (req.path != e.path) continue;
    allow += (allow.empty() ? "" : ", ") + std::string(e.method);
    open_path |= !e.needs_key;
    if (req.method == e.method) route = &e;
  }
  // With a key set, the key comes before 404 / 405: a client without it learns nothing of which routes exist.
  if (!open_path && !cfg_.api_keys.empty() && !authorized(req, cfg_.api_keys)) {
    return from_api_error(authentication_error());
  }
  if (allow.empty()) return error_response(404, "no route " + req.method + " " + req.path);
  if (!route) {
    HttpResponse r = error_response(405, "method " + req.method + " is not allowed on " + req.path);
    r.headers.emplace_back("Allow", allow);
    return r;
  }
  if (route->needs_key && !cfg_.api_keys.empty() && !authorized(req, cfg_.api_keys)) {
    return from_api_error(authentication_error());
  }
  if (route->generation) {
    if (!json_content_type(req.header("Content-Type"))) {
      return error_response(415, "the body must be Content-Type: application/json");
    }
    if (draining_) return from_api_error(service_unavailable("the server is shutting down (draining); retry on another replica"));
    if (!ready_) return from_api_error(service_unavailable("the model is loading"));
  }
  return std::nullopt;
}

HttpResponse HttpServer::handle(const HttpRequest& req, HttpPeer& peer) {
  for (const RouteEntry& e : routes()) {
    if (req.path != e.path || req.method != e.method) continue;
    try {
      return (this->*e.handler)(req, peer);
    } catch (const ApiError& err) {
      return from_api_error(err);
    } catch (const Error& err) {
      return from_api_error(invalid_request(err.what()));
    }
  }
  return error_response(404, "no route " + req.method + " " + req.path);  // check_head refused it already
}

HttpResponse HttpServer::health(const HttpRequest&, HttpPeer&) {
  if (draining_) return from_api_error(service_unavailable("draining: the server is shutting down"));
  if (!ready_) return from_api_error(service_unavailable("the model is loading"));
  HttpResponse r;
  r.body = "{}";
  return r;
}

HttpResponse HttpServer::models(const HttpRequest&, HttpPeer&) {
  if (!ready_) return from_api_error(service_unavailable("the model is loading"));
  // `root`: the served name; the file's path (vLLM shows it) only with --expose-model-path — it tells a client about
  // the host's file system.
  nlohmann::json m = {{"id", ctx_.model_name}, {"object", "model"}, {"created", started_unix_s_},
                      {"owned_by", "slimkv"}, {"root", cfg_.expose_model_path ? ctx_.model->path : ctx_.model_name},
                      {"max_model_len", ctx_.max_model_len}};
  nlohmann::json data = nlohmann::json::array({m});
  for (const auto& a : ctx_.loras ? ctx_.loras->list() : std::vector<std::shared_ptr<const LoraAdapter>>{}) {
    data.push_back({{"id", a->name}, {"object", "model"}, {"created", started_unix_s_}, {"owned_by", "slimkv"},
                    {"root", cfg_.expose_model_path ? a->path : a->name}, {"parent", ctx_.model_name},
                    {"max_model_len", ctx_.max_model_len}});
  }
  HttpResponse r;
  r.body = dump_json({{"object", "list"}, {"data", std::move(data)}});
  return r;
}

std::shared_ptr<const LoraAdapter> HttpServer::served_adapter(const std::string& model) const {
  if (model.empty() || model == ctx_.model_name) return nullptr;
  auto a = ctx_.loras ? ctx_.loras->find(model) : nullptr;
  if (!a) throw model_not_found(model);
  return a;
}

// vLLM's runtime adapter routes: {"lora_name", "lora_path"} (and slimkv's optional "scale"), {"lora_name"}. A path
// on the server's disk is opened, so they answer only behind an API key. The body, once that is so.
nlohmann::ordered_json HttpServer::adapter_route_body(const HttpRequest& req) const {
  if (cfg_.api_keys.empty()) {
    throw ApiError(403, "loading or unloading adapters at run time needs the server to have an API key (--api-key)",
                   "permission_error");
  }
  if (!ctx_.loras) throw service_unavailable("this server has no adapter registry");
  nlohmann::ordered_json body = parse_body(req.body, cfg_.json_limits());
  if (!body.is_object()) throw invalid_request("the body must be a JSON object");
  return body;
}

namespace {

std::string required_text(const nlohmann::ordered_json& body, const char* key) {
  const auto* v = json_field(body, key);
  if (!v || !v->is_string() || v->get_ref<const std::string&>().empty()) {
    throw invalid_request(fmt::format("'{}' (a non-empty string) is required", key), key);
  }
  return v->get<std::string>();
}

}  // namespace

HttpResponse HttpServer::load_lora(const HttpRequest& req, HttpPeer&) {
  const nlohmann::ordered_json body = adapter_route_body(req);
  const std::string name = required_text(body, "lora_name"), path = required_text(body, "lora_path");
  double scale = 1.0;
  if (const auto* v = json_field(body, "scale")) {
    if (!v->is_number() || !std::isfinite(v->get<double>())) throw invalid_request("'scale' must be a number", "scale");
    scale = v->get<double>();
  }
  if (name == ctx_.model_name || ctx_.loras->find(name)) {
    throw invalid_request(fmt::format("the name '{}' is taken (the base model's, or a loaded adapter's)", name),
                          "lora_name");
  }
  try {
    ctx_.loras->load(name, path, static_cast<float>(scale));
  } catch (const Error& e) {
    throw invalid_request(e.what(), "lora_path");
  }
  HttpResponse r;
  r.body = dump_json({{"object", "lora_adapter"}, {"id", name}, {"status", "loaded"}});
  return r;
}

HttpResponse HttpServer::unload_lora(const HttpRequest& req, HttpPeer&) {
  const std::string name = required_text(adapter_route_body(req), "lora_name");
  if (!ctx_.loras->unload(name)) throw model_not_found(name);
  HttpResponse r;
  r.body = dump_json({{"object", "lora_adapter"}, {"id", name}, {"status", "unloaded"}});
  return r;
}

HttpResponse HttpServer::metrics(const HttpRequest&, HttpPeer&) {
  if (!ready_) return from_api_error(service_unavailable("the model is loading"));
  HttpResponse r;
  ctx_.service->inspect([&](Engine& e) { r.body = metrics_->render(e, ctx_.model_name, cfg_.metrics_vllm_names); });
  r.content_type = "text/plain; version=0.0.4; charset=utf-8";
  return r;
}

HttpResponse HttpServer::dashboard(const HttpRequest& req, HttpPeer&) {
  if (dashboard_html_.empty()) return error_response(404, "no route GET " + req.path);
  HttpResponse r;
  r.headers.emplace_back("Cache-Control", "no-cache");
  r.content_type = "text/html; charset=utf-8";
  r.body = dashboard_html_;
  return r;
}

HttpResponse HttpServer::messages(const HttpRequest& req, HttpPeer& peer) {
  try {
    return generate(req, peer, Api::kMessages);
  } catch (const ApiError& e) {
    HttpResponse r = from_api_error(e);
    r.body = anthropic_error_text(e);
    return r;
  } catch (const Error& e) {
    const ApiError bad = invalid_request(e.what());
    HttpResponse r = from_api_error(bad);
    r.body = anthropic_error_text(bad);
    return r;
  }
}

HttpResponse HttpServer::generate(const HttpRequest& req, HttpPeer& peer, Api api) {
  std::shared_ptr<void> active = count_active();
  // A large body (up to --max-body-bytes, and its parsed copy) goes back to the system afterwards instead of
  // staying in the allocator's arenas (hundreds of MB seen after large invalid bodies).
  struct TrimAfterLargeBody {
    size_t bytes;
    ~TrimAfterLargeBody() {
      if (bytes > (size_t{1} << 20)) malloc_trim(0);
    }
  } trim{req.body.size()};
  if (draining_) throw service_unavailable("the server is shutting down (draining); retry on another replica");
  const JsonLimits limits = cfg_.json_limits();
  const nlohmann::ordered_json body = parse_body(req.body, limits);
  ResponsesRequest rq;  // /v1/responses: its chat body, the conversation so far and the settings it echoes
  if (api == Api::kResponses) rq = responses_to_chat_body(body, *stored_);
  GenerationRequest g = api == Api::kCompletions ? parse_completion_request(body, limits)
                        : api == Api::kChat      ? parse_chat_request(body, limits)
                        : api == Api::kMessages  ? parse_chat_request(messages_to_chat_body(body), limits)
                                                 : parse_chat_request(rq.chat_body, limits);
  auto lora = served_adapter(g.model);
  auto session = std::make_shared<GenerationSession>(ctx_, std::move(g), std::move(lora));
  HttpResponse r;
  r.hold = active;  // the request counts until its answer (a stream: its last chunk) is written
  if (session->streaming()) {
    r.content_type = "text/event-stream";
    r.headers.emplace_back("Cache-Control", "no-cache");
    std::shared_ptr<MessageStreamTranslator> messages;  // Anthropic's events from the chat chunks
    if (api == Api::kMessages) messages = std::make_shared<MessageStreamTranslator>();
    std::shared_ptr<ResponsesStreamTranslator> typed;  // the Responses API's typed events
    if (api == Api::kResponses) typed = std::make_shared<ResponsesStreamTranslator>(rq.echo);
    auto keep = rq.store ? stored_ : nullptr;
    r.stream.next = [session, messages, typed, keep, conversation = rq.conversation](std::string& out,
                                                                                    bool& done) mutable {
      out = session->next_events(100);
      if (messages) out = messages->feed(out);
      if (typed) {
        out = typed->feed(out);
        if (typed->finished() && keep) {
          conversation.push_back(typed->assistant());
          keep->put(typed->id(), std::move(conversation));
          keep = nullptr;
        }
      }
      done = session->done();
    };
    r.stream.closed = [session](bool complete) {
      if (!complete) session->cancel();  // the client is gone: abort and free its KV blocks now
    };
    return r;
  }
  // A client that hangs up stops its generation, as a stream's does (issue R defect 7).
  r.body = session->run_to_completion([&peer] { return peer.client_gone(); });
  if (api == Api::kMessages) r.body = chat_completion_to_message(r.body);
  if (api == Api::kResponses) {
    nlohmann::ordered_json assistant;
    std::string id;
    r.body = chat_completion_to_response(r.body, rq.echo, &assistant, &id);
    if (rq.store) {
      rq.conversation.push_back(std::move(assistant));
      stored_->put(id, std::move(rq.conversation));
    }
  }
  return r;
}

// One more request counted until the returned handle goes — held by its HttpResponse (`hold`) until the front has
// written the answer (a drain that saw 0 as soon as the answer was made shut the socket under it).
std::shared_ptr<void> HttpServer::count_active() {
  ++active_;
  return std::shared_ptr<void>(nullptr, [this](void*) { --active_; });
}

HttpResponse HttpServer::embeddings(const HttpRequest& req, HttpPeer& peer) {
  std::shared_ptr<void> active = count_active();
  if (draining_) throw service_unavailable("the server is shutting down (draining); retry on another replica");
  const EmbeddingsRequest e = parse_embeddings_request(parse_body(req.body, cfg_.json_limits()));
  const auto lora = served_adapter(e.model);
  HttpResponse r;
  r.hold = active;
  r.body = run_embeddings(ctx_, e, [&peer] { return peer.client_gone(); }, lora);
  return r;
}

HttpResponse HttpServer::tokenize(const HttpRequest& req, HttpPeer&) {
  if (draining_) throw service_unavailable("the server is shutting down (draining); retry on another replica");
  const TokenizeRequest t = parse_tokenize_request(parse_body(req.body, cfg_.json_limits()), cfg_.json_limits());
  served_adapter(t.model);  // an adapter shares the base model's tokenizer
  HttpResponse r;
  r.body = dump_json(tokenize_json(ctx_, t));
  return r;
}

HttpResponse HttpServer::detokenize(const HttpRequest& req, HttpPeer&) {
  if (draining_) throw service_unavailable("the server is shutting down (draining); retry on another replica");
  const DetokenizeRequest d = parse_detokenize_request(parse_body(req.body, cfg_.json_limits()));
  served_adapter(d.model);
  HttpResponse r;
  r.body = dump_json(detokenize_json(ctx_, d));
  return r;
}

}  // namespace slimkv
