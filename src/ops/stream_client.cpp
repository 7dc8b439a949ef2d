#include "ops/stream_client.h"

#include <httplib.h>

#include <nlohmann/json.hpp>

#include "core/check.h"

namespace slimkv {
namespace {

httplib::Client make_client(const StreamTarget& t) {
  httplib::Client c(t.base_url);
  c.set_connection_timeout(10, 0);
  const auto secs = static_cast<time_t>(t.timeout_s);
  c.set_read_timeout(secs, 0);
  c.set_write_timeout(secs, 0);
  c.set_keep_alive(false);
  return c;
}

httplib::Headers headers(const StreamTarget& t) {
  httplib::Headers h = {{"Content-Type", "application/json"}};
  if (!t.api_key.empty()) h.emplace("Authorization", "Bearer " + t.api_key);
  return h;
}

}  // namespace

void stream_one(const StreamTarget& t, const std::string& prompt, int32_t max_tokens, RequestRecord& rec) {
  using clock = std::chrono::steady_clock;
  nlohmann::json body = {{"max_tokens", max_tokens}, {"ignore_eos", true}, {"stream", true},
                         {"stream_options", {{"include_usage", true}}}, {"temperature", 0}};
  if (!t.model.empty()) body["model"] = t.model;
  if (t.chat) body["messages"] = {{{"role", "user"}, {"content", prompt}}};
  else body["prompt"] = prompt;
  httplib::Request req;
  req.method = "POST";
  req.path = t.chat ? "/v1/chat/completions" : "/v1/completions";
  req.headers = headers(t);
  req.body = body.dump();
  const auto t0 = clock::now();
  auto since = [&] { return std::chrono::duration<double>(clock::now() - t0).count(); };
  std::string buf, error_body;
  bool done = false;
  int status = 0;
  req.response_handler = [&](const httplib::Response& res) {
    status = res.status;
    return true;
  };
  req.content_receiver = [&](const char* data, size_t len, uint64_t, uint64_t) {
    if (status != 200) {
      error_body.append(data, len);
      return true;
    }
    buf.append(data, len);
    for (size_t end; (end = buf.find("\n\n")) != std::string::npos;) {
      const std::string event = buf.substr(0, end);
      buf.erase(0, end + 2);
      if (event.rfind("data: ", 0) != 0) continue;
      const std::string payload = event.substr(6);
      if (payload == "[DONE]") {
        done = true;
        continue;
      }
      auto j = nlohmann::json::parse(payload, nullptr, false);
      if (!j.is_object()) continue;
      if (j.contains("usage") && j["usage"].is_object()) {
        rec.prompt_tokens = j["usage"].value("prompt_tokens", 0);
        rec.output_tokens = j["usage"].value("completion_tokens", 0);
        if (j["usage"].contains("prompt_tokens_details") && j["usage"]["prompt_tokens_details"].is_object()) {
          rec.cached_tokens = j["usage"]["prompt_tokens_details"].value("cached_tokens", 0);
        }
      }
      if (!j.contains("choices") || !j["choices"].is_array() || j["choices"].empty()) continue;
      const auto& c = j["choices"][0];
      if (!c.contains("finish_reason") || !c["finish_reason"].is_null()) continue;
      if (t.chat && c.contains("delta") && c["delta"].contains("role")) continue;  // the role chunk carries no token
      const double now = since();
      if (rec.chunk_s.empty()) rec.ttft_s = now;
      rec.chunk_s.push_back(now);
      ++rec.streamed_tokens;
    }
    return true;
  };
  auto client = make_client(t);
  auto res = client.send(req);
  rec.e2e_s = since();
  if (!res) {
    rec.error = "transport: " + httplib::to_string(res.error());
  } else if (status != 200) {
    rec.error = fmt::format("HTTP {}: {}", status, error_body.substr(0, 300));
  } else if (!done) {
    rec.error = "the stream ended without data: [DONE]";
  } else {
    rec.ok = true;
  }
}

std::string http_get(const StreamTarget& t, const std::string& path) {
  auto client = make_client(t);
  auto res = client.Get(path, headers(t));
  SLIMKV_CHECK(res, "GET {}{}: {}", t.base_url, path, httplib::to_string(res.error()));
  SLIMKV_CHECK(res->status == 200, "GET {}{}: HTTP {}", t.base_url, path, res->status);
  return res->body;
}

}  // namespace slimkv
