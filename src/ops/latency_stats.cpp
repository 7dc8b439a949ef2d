#include "ops/latency_stats.h"

#include <algorithm>
#include <cmath>
#include <sstream>

#include "core/check.h"

namespace slimkv {

Slo parse_slo(const std::string& spec) {
  Slo s;
  std::istringstream in(spec);
  for (std::string item; std::getline(in, item, ',');) {
    const size_t colon = item.find(':');
    SLIMKV_CHECK(colon != std::string::npos, "--slo {}: expected name:ms pairs such as ttft:500,tpot:50", spec);
    const std::string name = item.substr(0, colon);
    double ms = 0;
    try {
      ms = std::stod(item.substr(colon + 1));
    } catch (...) {
      fail("--slo {}: '{}' is not a number of milliseconds", spec, item.substr(colon + 1));
    }
    SLIMKV_CHECK(ms > 0, "--slo {}: limits must be > 0 ms", spec);
    if (name == "ttft") s.ttft_ms = ms;
    else if (name == "tpot") s.tpot_ms = ms;
    else if (name == "e2e") s.e2e_ms = ms;
    else fail("--slo {}: unknown metric '{}' (ttft, tpot, e2e)", spec, name);
  }
  return s;
}

double tpot_ms(const RequestRecord& r) {
  if (!r.ok || r.output_tokens < 2 || r.ttft_s < 0) return -1;
  return (r.e2e_s - r.ttft_s) * 1000.0 / static_cast<double>(r.output_tokens - 1);
}

LoadSummary summarize_load(const std::vector<RequestRecord>& records, double duration_s, const Slo& slo) {
  LoadSummary s;
  s.num_requests = static_cast<int64_t>(records.size());
  s.duration_s = duration_s;
  std::vector<double> ttft, tpot, itl, e2e;
  for (const auto& r : records) {
    if (!r.ok) {
      ++s.num_failed;
      continue;
    }
    ++s.num_ok;
    if (r.streamed_tokens != r.output_tokens) ++s.num_token_mismatch;
    s.prompt_tokens += r.prompt_tokens;
    s.output_tokens += r.output_tokens;
    s.cached_tokens += r.cached_tokens;
    ttft.push_back(r.ttft_s * 1000);
    e2e.push_back(r.e2e_s * 1000);
    const double t = tpot_ms(r);
    if (t >= 0) tpot.push_back(t);
    for (size_t i = 1; i < r.chunk_s.size(); ++i) itl.push_back((r.chunk_s[i] - r.chunk_s[i - 1]) * 1000);
    const bool good = (slo.ttft_ms <= 0 || r.ttft_s * 1000 <= slo.ttft_ms) &&
                      (slo.tpot_ms <= 0 || (t >= 0 ? t : 0) <= slo.tpot_ms) &&
                      (slo.e2e_ms <= 0 || r.e2e_s * 1000 <= slo.e2e_ms);
    s.num_meeting_slo += good;
  }
  s.ttft_ms = distribution(ttft);
  s.tpot_ms = distribution(tpot);
  s.itl_ms = distribution(itl);
  s.e2e_ms = distribution(e2e);
  if (duration_s > 0) {
    s.request_throughput = static_cast<double>(s.num_ok) / duration_s;
    s.output_token_throughput = static_cast<double>(s.output_tokens) / duration_s;
    s.total_token_throughput = static_cast<double>(s.output_tokens + s.prompt_tokens) / duration_s;
    s.goodput = static_cast<double>(s.num_meeting_slo) / duration_s;
  }
  return s;
}

}  // namespace slimkv
