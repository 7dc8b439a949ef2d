// The HTTP server's one validated configuration (flags map 1:1 to fields; the engine has its own EngineConfig).
// Must not know: the engine or routes.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "core/bounded_json.h"
#include "server/http_front.h"

namespace slimkv {

struct ServerConfig {
  std::string host = "127.0.0.1";         // --host (loopback by default)
  int32_t port = 8000;                    // --port (0 = any free port, printed at start-up)
  std::vector<std::string> api_keys;      // --api-key (repeatable): required as "Authorization: Bearer KEY"
  std::string api_key_file;               // --api-key-file: one key per line ('#' comments)
  std::string served_model_name;          // --served-model-name (empty = the model file's name)
  int32_t max_queue = 256;                // --max-queue: waiting requests before 429 + Retry-After
  double request_timeout_s = 600;         // --request-timeout: deadline of a non-streaming request
  double shutdown_timeout_s = 30;         // --shutdown-timeout: on SIGTERM/SIGINT, how long in-flight requests may
                                          // finish before the rest are ended with finish_reason "abort"
  std::string chat_template;              // --chat-template NAME|FILE (empty = the model's, else "plain")
  std::string pooling;                    // --pooling none|mean|cls|last: /v1/embeddings (empty = the model's)
  std::vector<std::string> loras;         // --lora NAME=PATH (repeatable): LoRA adapters a request's `model` names
  bool metrics_vllm_names = false;        // --metrics-vllm-names: also emit every metric as vllm:*
  int64_t max_body_bytes = 8 << 20;       // --max-body-bytes: larger bodies get 413
  int32_t http_threads = 0;               // --http-threads: requests handled at once, a thread each (0 = 512)
  int32_t keep_alive_timeout_s = 5;       // --keep-alive-timeout: idle connections between requests close after
  int64_t max_header_bytes = 64 << 10;    // --max-header-bytes: request line + header fields (431 beyond)
  int32_t max_header_lines = 100;         // --max-header-lines (431 beyond)
  double header_timeout_s = 10;           // --header-timeout: a request's whole head, from its first byte (408)
  double body_timeout_s = 30;             // --body-timeout: a request's whole body, from its head's end (408)
  double write_timeout_s = 30;            // --write-timeout: a response (or a stream's chunk) the client does not read
  int32_t max_connections = 2048;         // --max-connections: open connections in all (503 beyond)
  int32_t max_connections_per_ip = 512;   // --max-connections-per-ip: from one client address (503 beyond; 0 = any)
  int64_t max_request_cost = 262144;      // --max-request-cost: choices x max_tokens x (1 + logprobs) of one request
  bool expose_model_path = false;         // --expose-model-path: /v1/models' `root` is the file's path, not its name
  int32_t max_json_depth = 128;           // --max-json-depth: arrays and objects nested in a body (400 beyond)
  int64_t max_json_keys = 10000;          // --max-json-keys: keys in one object of a body (400 beyond)
  int64_t max_json_items = 1 << 20;       // --max-json-items: items in one array of a body (400 beyond)
  int64_t max_json_values = 1 << 21;      // --max-json-values: values in a whole body (400 beyond)

  HttpLimits http_limits() const;         // the front's limits from the flags above
  JsonLimits json_limits() const;         // the body parser's caps from the --max-json-* flags

  void validate() const;                  // throws Error with the flag's name
  // Reads api_key_file (if set) into api_keys; throws Error when unreadable.
  void load_api_key_file();
};

}  // namespace slimkv
