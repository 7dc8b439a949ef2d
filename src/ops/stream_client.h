// One streaming request to an OpenAI-compatible server (/v1/completions or /v1/chat/completions), timed chunk by
// chunk: TTFT, every chunk's arrival, E2E, and `usage` from the final chunk. Blocking; one call per thread.
// Must not know: the workload or the statistics.
#pragma once
#include <chrono>
#include <string>

#include "ops/latency_stats.h"

namespace slimkv {

struct StreamTarget {
  std::string base_url;   // http://127.0.0.1:8000
  std::string api_key;    // empty: no Authorization header
  std::string model;      // empty: not sent
  bool chat = false;      // /v1/chat/completions with one user message
  double timeout_s = 600;
};

// Fills rec (ttft_s, chunk_s, e2e_s, usage counts, ok / error); rec.start_s is the caller's.
void stream_one(const StreamTarget& t, const std::string& prompt, int32_t max_tokens, RequestRecord& rec);

// GET base_url + path; returns the body, or throws Error with the status.
std::string http_get(const StreamTarget& t, const std::string& path);

}  // namespace slimkv
