// An error as the OpenAI API reports it: an HTTP status and {"error": {"message", "type", "param", "code"}}.
// Thrown by request parsing and validation, caught once per route. Must not know: the engine or sockets.
#pragma once
#include <stdexcept>
#include <string>

#include <nlohmann/json.hpp>

namespace slimkv {

struct ApiError : std::runtime_error {
  ApiError(int status, std::string message, std::string type, std::string param = "", std::string code = "")
      : std::runtime_error(message), status(status), type(std::move(type)), param(std::move(param)),
        code(std::move(code)) {}
  int status;
  std::string type, param, code;

  nlohmann::json to_json() const;
};

ApiError invalid_request(std::string message, std::string param = "");  // 400 invalid_request_error
ApiError authentication_error();                                        // 401
ApiError model_not_found(const std::string& model);                      // 404
ApiError server_overloaded(std::string message);                        // 429
ApiError service_unavailable(std::string message);                      // 503

}  // namespace slimkv
