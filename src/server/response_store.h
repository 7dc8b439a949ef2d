// The conversations behind /v1/responses' previous_response_id: each stored response's chat messages (its input,
// the inputs before it, and its output as an assistant turn), kept for a bounded time and count (oldest dropped
// first), in memory only. Thread-safe. Must not know: HTTP, the engine or the encodings.
#pragma once
#include <chrono>
#include <cstdint>
#include <list>
#include <mutex>
#include <optional>
#include <string>
#include <unordered_map>

#include <nlohmann/json.hpp>

namespace slimkv {

// The server's store: the last 1,024 stored responses, each for an hour.
inline constexpr int32_t kStoredResponsesMax = 1024;
inline constexpr double kStoredResponseSeconds = 3600;

class ResponseStore {
 public:
  ResponseStore(int32_t max_responses, double ttl_s) : max_(max_responses), ttl_s_(ttl_s) {}
  void put(const std::string& id, nlohmann::ordered_json messages);
  // The messages of a stored response, or nullopt (never stored, expired or dropped).
  std::optional<nlohmann::ordered_json> get(const std::string& id);

 private:
  using Clock = std::chrono::steady_clock;
  struct Entry {
    std::string id;
    nlohmann::ordered_json messages;
    Clock::time_point at;
  };
  void expire(Clock::time_point now);  // under mu_
  std::mutex mu_;
  std::list<Entry> order_;  // oldest first
  std::unordered_map<std::string, std::list<Entry>::iterator> by_id_;
  int32_t max_;
  double ttl_s_;
};

}  // namespace slimkv
