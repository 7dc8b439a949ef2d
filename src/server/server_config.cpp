#include "server/server_config.h"

#include <fstream>

#include "core/check.h"
#include "core/pooling.h"
#include "server/lora_registry.h"

namespace slimkv {

void ServerConfig::validate() const {
  SLIMKV_CHECK(!host.empty(), "--host must not be empty");
  SLIMKV_CHECK(port >= 0 && port <= 65535, "--port must be in 0..65535 (got {})", port);
  SLIMKV_CHECK(max_queue >= 0, "--max-queue must be >= 0 (got {})", max_queue);
  for (const std::string& l : loras) parse_lora_flag(l);  // NAME=PATH, or an Error naming --lora
  SLIMKV_CHECK(pooling.empty() || parse_pooling(pooling), "--pooling must be none, mean, cls or last (got '{}')",
               pooling);
  SLIMKV_CHECK(shutdown_timeout_s >= 0 && shutdown_timeout_s <= 86400,
               "--shutdown-timeout must be in [0, 86400] s (got {})", shutdown_timeout_s);
  SLIMKV_CHECK(request_timeout_s > 0 && request_timeout_s <= 86400, "--request-timeout must be in (0, 86400] s (got {})",
               request_timeout_s);
  SLIMKV_CHECK(max_body_bytes >= 1024 && max_body_bytes <= (int64_t{1} << 30),
               "--max-body-bytes must be in 1024..1073741824 (got {})", max_body_bytes);
  SLIMKV_CHECK(http_threads >= 0 && http_threads <= 4096, "--http-threads must be in 0..4096 (got {})", http_threads);
  SLIMKV_CHECK(keep_alive_timeout_s >= 1 && keep_alive_timeout_s <= 3600,
               "--keep-alive-timeout must be in 1..3600 s (got {})", keep_alive_timeout_s);
  for (const auto& k : api_keys) SLIMKV_CHECK(!k.empty(), "--api-key must not be empty");
  SLIMKV_CHECK(max_header_bytes >= 1024 && max_header_bytes <= (int64_t{1} << 24),
               "--max-header-bytes must be in 1024..16777216 (got {})", max_header_bytes);
  SLIMKV_CHECK(max_header_lines >= 4 && max_header_lines <= 10000, "--max-header-lines must be in 4..10000 (got {})",
               max_header_lines);
  for (auto [flag, v] : {std::pair{"--header-timeout", header_timeout_s}, {"--body-timeout", body_timeout_s},
                         {"--write-timeout", write_timeout_s}}) {
    SLIMKV_CHECK(v > 0 && v <= 3600, "{} must be in (0, 3600] s (got {})", flag, v);
  }
  SLIMKV_CHECK(max_connections >= 1 && max_connections <= 1 << 20, "--max-connections must be in 1..1048576 (got {})",
               max_connections);
  SLIMKV_CHECK(max_connections_per_ip >= 0 && max_connections_per_ip <= 1 << 20,
               "--max-connections-per-ip must be in 0..1048576 (got {})", max_connections_per_ip);
  SLIMKV_CHECK(max_request_cost >= 1, "--max-request-cost must be >= 1 (got {})", max_request_cost);
  SLIMKV_CHECK(max_json_depth >= 8 && max_json_depth <= 10000, "--max-json-depth must be in 8..10000 (got {})",
               max_json_depth);
  for (auto [flag, v] : {std::pair{"--max-json-keys", max_json_keys}, {"--max-json-items", max_json_items},
                         {"--max-json-values", max_json_values}}) {
    SLIMKV_CHECK(v >= 16 && v <= (int64_t{1} << 30), "{} must be in 16..1073741824 (got {})", flag, v);
  }
}

HttpLimits ServerConfig::http_limits() const {
  HttpLimits l;
  l.max_header_bytes = max_header_bytes;
  l.max_header_lines = max_header_lines;
  l.header_timeout_s = header_timeout_s;
  l.body_timeout_s = body_timeout_s;
  l.write_timeout_s = write_timeout_s;
  l.keep_alive_timeout_s = keep_alive_timeout_s;
  l.max_body_bytes = max_body_bytes;
  l.max_connections = max_connections;
  l.max_connections_per_ip = max_connections_per_ip;
  l.handler_threads = http_threads > 0 ? http_threads : 512;
  return l;
}

JsonLimits ServerConfig::json_limits() const {
  JsonLimits j;
  j.max_depth = max_json_depth;
  j.max_object_keys = max_json_keys;
  j.max_array_items = max_json_items;
  j.max_values = max_json_values;
  return j;
}

void ServerConfig::load_api_key_file() {
  if (api_key_file.empty()) return;
  std::ifstream in(api_key_file);
  SLIMKV_CHECK(in.good(), "--api-key-file {}: cannot read it", api_key_file);
  std::string line;
  int32_t n = 0;
  while (std::getline(in, line)) {
    while (!line.empty() && (line.back() == '\r' || line.back() == ' ' || line.back() == '\t')) line.pop_back();
    size_t b = line.find_first_not_of(" \t");
    if (b == std::string::npos || line[b] == '#') continue;
    api_keys.push_back(line.substr(b));
    ++n;
  }
  SLIMKV_CHECK(n > 0, "--api-key-file {}: no keys in it", api_key_file);
}

}  // namespace slimkv
