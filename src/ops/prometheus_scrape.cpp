#include "ops/prometheus_scrape.h"

#include <sstream>

namespace slimkv {

PromSamples parse_prometheus_text(const std::string& text) {
  PromSamples out;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) {
    if (line.empty() || line[0] == '#') continue;
    size_t end_key = line.find('{') != std::string::npos && line.find('{') < line.find(' ') ? line.find('}') : line.find(' ');
    if (end_key == std::string::npos) continue;
    if (line[end_key] == '}') ++end_key;
    const size_t space = line.find(' ', end_key);
    if (space == std::string::npos) continue;
    try {
      out.samples[line.substr(0, end_key)] = std::stod(line.substr(space + 1));
    } catch (...) {
    }
  }
  return out;
}

double PromSamples::sum(const std::string& name) const {
  double s = 0;
  for (auto it = samples.lower_bound(name); it != samples.end() && it->first.rfind(name, 0) == 0; ++it) {
    const char next = it->first.size() > name.size() ? it->first[name.size()] : '\0';
    if (next == '\0' || next == '{') s += it->second;
  }
  return s;
}

bool PromSamples::has(const std::string& name) const {
  for (auto it = samples.lower_bound(name); it != samples.end() && it->first.rfind(name, 0) == 0; ++it) {
    const char next = it->first.size() > name.size() ? it->first[name.size()] : '\0';
    if (next == '\0' || next == '{') return true;
  }
  return false;
}

double PromSamples::with_label(const std::string& name, const std::string& key, const std::string& value) const {
  const std::string needle = key + "=\"" + value + "\"";
  for (auto it = samples.lower_bound(name + "{"); it != samples.end() && it->first.rfind(name + "{", 0) == 0; ++it) {
    if (it->first.find(needle) != std::string::npos) return it->second;
  }
  return 0;
}

std::string metric_name(const PromSamples& s, const std::string& suffix) {
  return s.has("slimkv:" + suffix) ? "slimkv:" + suffix : "vllm:" + suffix;
}

}  // namespace slimkv
