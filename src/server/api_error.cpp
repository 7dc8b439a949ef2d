#include "server/api_error.h"

#include <fmt/format.h>

namespace slimkv {

namespace {

// A message is echoed back whole only up to this many bytes: a value the client sent (a 7 MB number in a parse
// error) is cut, at a UTF-8 character boundary, with the size said.
constexpr size_t kMaxMessageBytes = 1024;

std::string bounded(std::string m) {
  if (m.size() <= kMaxMessageBytes) return m;
  size_t cut = kMaxMessageBytes;
  while (cut > 0 && (static_cast<unsigned char>(m[cut]) & 0xC0) == 0x80) --cut;
  const size_t total = m.size();
  m.resize(cut);
  return m + fmt::format("... ({} bytes in all)", total);
}

}  // namespace

nlohmann::json ApiError::to_json() const {
  nlohmann::json e = {{"message", bounded(what())}, {"type", type}, {"param", nullptr}, {"code", nullptr}};
  if (!param.empty()) e["param"] = param;
  if (!code.empty()) e["code"] = code;
  return {{"error", e}};
}

ApiError invalid_request(std::string message, std::string param) {
  return ApiError(400, std::move(message), "invalid_request_error", std::move(param));
}

ApiError authentication_error() {
  return ApiError(401, "Incorrect API key provided. Send it as 'Authorization: Bearer <key>'.",
                  "invalid_request_error", "", "invalid_api_key");
}

ApiError model_not_found(const std::string& model) {
  return ApiError(404, "The model '" + model + "' does not exist", "invalid_request_error", "model",
                  "model_not_found");
}

ApiError server_overloaded(std::string message) {
  return ApiError(429, std::move(message), "server_overloaded", "", "rate_limit_exceeded");
}

ApiError service_unavailable(std::string message) {
  return ApiError(503, std::move(message), "service_unavailable");
}

}  // namespace slimkv
