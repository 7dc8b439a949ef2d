#include "server/prometheus_text.h"

#include <algorithm>
#include <cmath>

#include <fmt/format.h>

#include "core/check.h"

namespace slimkv {

PromHistogram::PromHistogram(std::vector<double> upper_bounds)
    : bounds_(std::move(upper_bounds)), counts_(bounds_.size(), 0) {
  SLIMKV_CHECK(std::is_sorted(bounds_.begin(), bounds_.end()), "histogram bounds must ascend");
}

void PromHistogram::observe(double v) {
  auto it = std::lower_bound(bounds_.begin(), bounds_.end(), v);  // first bound >= v ("le")
  if (it != bounds_.end()) ++counts_[it - bounds_.begin()];
  ++count_;
  sum_ += v;
}

std::string prom_escape_label(const std::string& v) {
  std::string out;
  for (char c : v) {
    if (c == '\\') out += "\\\\";
    else if (c == '"') out += "\\\"";
    else if (c == '\n') out += "\\n";
    else out += c;
  }
  return out;
}

std::string prom_number(double v) {
  if (std::isnan(v)) return "NaN";
  if (std::isinf(v)) return v > 0 ? "+Inf" : "-Inf";
  return fmt::format("{}", v);
}

namespace {

std::string label_text(const PromLabels& labels, const std::string& extra_key = "", const std::string& extra = "") {
  std::string s;
  for (const auto& [k, v] : labels) s += (s.empty() ? "" : ",") + k + "=\"" + prom_escape_label(v) + "\"";
  if (!extra_key.empty()) s += (s.empty() ? "" : ",") + extra_key + "=\"" + extra + "\"";
  return s.empty() ? "" : "{" + s + "}";
}

}  // namespace

void PromWriter::family(const std::string& name, const std::string& type, const std::string& help) {
  out_ += "# HELP " + name + " " + help + "\n# TYPE " + name + " " + type + "\n";
}

void PromWriter::sample(const std::string& name, const PromLabels& labels, double value) {
  out_ += name + label_text(labels) + " " + prom_number(value) + "\n";
}

void PromWriter::histogram(const std::string& name, const PromLabels& labels, const PromHistogram& h) {
  uint64_t cum = 0;
  for (size_t i = 0; i < h.bounds().size(); ++i) {
    cum += h.counts()[i];
    out_ += name + "_bucket" + label_text(labels, "le", prom_number(h.bounds()[i])) + " " + std::to_string(cum) + "\n";
  }
  out_ += name + "_bucket" + label_text(labels, "le", "+Inf") + " " + std::to_string(h.count()) + "\n";
  out_ += name + "_sum" + label_text(labels) + " " + prom_number(h.sum()) + "\n";
  out_ += name + "_count" + label_text(labels) + " " + std::to_string(h.count()) + "\n";
}

}  // namespace slimkv
