// What GET /metrics reports: vLLM's metric names under a `slimkv:` prefix (optionally also `vllm:`), fed from the
// engine's counters, gauges and latency samples after every step, plus the KV cache's own figures (bytes per
// token and compression ratio per layer, evicted blocks). Must not know: HTTP or how requests are parsed.
#pragma once
#include <chrono>
#include <map>
#include <string>
#include <vector>

#include "engine/engine.h"
#include "server/prometheus_text.h"

namespace slimkv {

class ServerMetrics {
 public:
  ServerMetrics();
  // Engine thread, under the engine lock: takes the engine's new latency samples (and clears them).
  void on_step(Engine& engine, const std::vector<const Request*>& finished);
  // Under the engine lock: one finished request counted as `from` ended, as its client saw it, as `to`.
  void restate(FinishReason from, FinishReason to);
  // Under the engine lock: the exposition text.
  std::string render(const Engine& engine, const std::string& model_name, bool vllm_names) const;

 private:
  void write(PromWriter& w, const std::string& prefix, const Engine& engine, const PromLabels& labels) const;
  void write_gateway_aliases(PromWriter& w, const Engine& engine, const PromLabels& labels) const;

  PromHistogram ttft_, itl_, tpot_, e2e_, queue_, prefill_, decode_;  // seconds
  std::map<std::string, int64_t> finished_by_reason_;               // stop | length | abort
  std::chrono::steady_clock::time_point started_ = std::chrono::steady_clock::now();
};

}  // namespace slimkv
