// Small SVG charts written by hand (no dependency): stacked bars (plan), lines (latency CDFs, throughput over
// time, quality vs bytes) with axes, ticks, a legend and marked points. Output is well-formed XML with escaped text.
// Must not know: what the numbers mean.
#pragma once
#include <string>
#include <utility>
#include <vector>

namespace slimkv {

struct BarGroup {                      // one bar: a label and one value per series (stacked bottom to top)
  std::string label;
  std::vector<double> values;
};

struct LineSeries {
  std::string name;
  std::vector<std::pair<double, double>> points;  // (x, y)
  bool markers = false;
  bool line = true;                                // false: markers only (a scatter)
};

struct ChartText {
  std::string title, x_label, y_label;
};

std::string svg_stacked_bars(const ChartText& t, const std::vector<std::string>& series_names,
                             const std::vector<BarGroup>& bars);
// mark: an optional highlighted point with its label (e.g. the chosen configuration).
std::string svg_lines(const ChartText& t, const std::vector<LineSeries>& series,
                      const std::pair<double, double>* mark = nullptr, const std::string& mark_label = "");
std::string xml_escape(const std::string& s);

}  // namespace slimkv
