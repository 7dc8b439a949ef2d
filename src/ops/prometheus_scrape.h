// Reads a Prometheus text exposition into samples keyed "name{label="v",...}" (labels as written) and answers the
// sums a load test and `doctor` need (a family summed over its labels, a histogram's mean).
// Must not know: HTTP (the caller fetches the text).
#pragma once
#include <map>
#include <string>

namespace slimkv {

struct PromSamples {
  std::map<std::string, double> samples;  // exact series -> value
  // Sum of every series of `name` (all label sets). 0 when absent.
  double sum(const std::string& name) const;
  bool has(const std::string& name) const;
  // A series whose labels include key="value" (first match); 0 when absent.
  double with_label(const std::string& name, const std::string& key, const std::string& value) const;
};

PromSamples parse_prometheus_text(const std::string& text);  // comments and malformed lines are skipped
// Finds the metric under the slimkv: prefix, else vllm: (so `bench serve` and `doctor` read either server).
std::string metric_name(const PromSamples& s, const std::string& suffix);

}  // namespace slimkv
