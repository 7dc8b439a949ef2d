#include "engine/metrics.h"

#include <algorithm>
#include <cmath>

namespace slimkv {

LatencySummary summarize(std::vector<double> v) {
  LatencySummary s;
  s.count = static_cast<int64_t>(v.size());
  if (v.empty()) return s;
  std::sort(v.begin(), v.end());
  double sum = 0;
  for (double x : v) sum += x;
  auto pct = [&](double p) {  // nearest-rank on the sorted samples
    size_t i = static_cast<size_t>(std::ceil(p * static_cast<double>(v.size()))) ;
    return v[std::min(v.size() - 1, i == 0 ? 0 : i - 1)];
  };
  s.mean = sum / static_cast<double>(v.size());
  s.median = pct(0.5);
  s.p90 = pct(0.9);
  s.p99 = pct(0.99);
  s.max = v.back();
  return s;
}

void Metrics::record_finished(const Request& r) {
  const RequestTimes& t = r.times;
  if (r.finish == FinishReason::Abort) return;
  if (t.first_scheduled_ms >= 0) queue_ms.push_back(t.first_scheduled_ms - t.arrival_ms);
  if (t.first_token_ms >= 0) {
    ttft_ms.push_back(t.first_token_ms - t.arrival_ms);
    prefill_ms.push_back(t.prefill_ms);
    decode_ms.push_back(t.last_token_ms - t.first_token_ms);
    const int32_t n = r.num_output_tokens();
    if (n > 1) tpot_ms.push_back((t.last_token_ms - t.first_token_ms) / (n - 1));
  }
  if (t.finished_ms >= 0) e2e_ms.push_back(t.finished_ms - t.arrival_ms);
}

}  // namespace slimkv
