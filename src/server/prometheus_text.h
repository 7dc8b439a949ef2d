// The Prometheus text exposition format (version 0.0.4), written by hand: counters, gauges and histograms with
// labels, each family announced once with HELP and TYPE. Must not know: which metrics exist or where they come from.
#pragma once
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

namespace slimkv {

using PromLabels = std::vector<std::pair<std::string, std::string>>;

class PromHistogram {
 public:
  explicit PromHistogram(std::vector<double> upper_bounds);  // ascending; +Inf is implicit
  void observe(double v);
  const std::vector<double>& bounds() const { return bounds_; }
  const std::vector<uint64_t>& counts() const { return counts_; }  // [bounds] non-cumulative
  uint64_t count() const { return count_; }
  double sum() const { return sum_; }

 private:
  std::vector<double> bounds_;
  std::vector<uint64_t> counts_;
  uint64_t count_ = 0;
  double sum_ = 0;
};

class PromWriter {
 public:
  // Announces a family (once per name); type: counter | gauge | histogram.
  void family(const std::string& name, const std::string& type, const std::string& help);
  void sample(const std::string& name, const PromLabels& labels, double value);
  void histogram(const std::string& name, const PromLabels& labels, const PromHistogram& h);
  const std::string& text() const { return out_; }

 private:
  std::string out_;
};

std::string prom_escape_label(const std::string& v);  // \\, \" and \n escaped
std::string prom_number(double v);                    // shortest round-trip form; +Inf, -Inf, NaN

}  // namespace slimkv
