#include "ops/svg_chart.h"

#include <algorithm>
#include <cmath>

#include <fmt/format.h>

namespace slimkv {
namespace {

constexpr double kW = 760, kH = 420, kLeft = 80, kRight = 190, kTop = 40, kBottom = 60;
const char* kColors[] = {"#4e79a7", "#f28e2b", "#59a14f", "#e15759", "#76b7b2", "#edc948", "#b07aa1", "#9c755f"};

std::string header(const ChartText& t) {
  return fmt::format(
      "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n"
      "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"{}\" height=\"{}\" viewBox=\"0 0 {} {}\" "
      "font-family=\"sans-serif\" font-size=\"12\">\n<rect width=\"100%\" height=\"100%\" fill=\"white\"/>\n"
      "<text x=\"{}\" y=\"24\" font-size=\"15\" text-anchor=\"middle\">{}</text>\n"
      "<text x=\"{}\" y=\"{}\" text-anchor=\"middle\">{}</text>\n"
      "<text x=\"18\" y=\"{}\" text-anchor=\"middle\" transform=\"rotate(-90 18 {})\">{}</text>\n",
      kW, kH, kW, kH, (kLeft + kW - kRight) / 2, xml_escape(t.title), (kLeft + kW - kRight) / 2, kH - 14,
      xml_escape(t.x_label), (kTop + kH - kBottom) / 2, (kTop + kH - kBottom) / 2, xml_escape(t.y_label));
}

double nice_step(double range) {  // 1, 2 or 5 × 10^k, about 5 ticks
  if (!(range > 0)) return 1;
  const double raw = range / 5, mag = std::pow(10.0, std::floor(std::log10(raw)));
  const double f = raw / mag;
  return (f < 1.5 ? 1 : f < 3.5 ? 2 : f < 7.5 ? 5 : 10) * mag;
}

std::string num(double v) {
  if (std::fabs(v) >= 1e6 || (std::fabs(v) < 1e-3 && v != 0)) return fmt::format("{:.2g}", v);
  return fmt::format("{:g}", std::round(v * 1000) / 1000);
}

std::string axes(double x0, double x1, double y0, double y1, bool x_ticks) {
  std::string s;
  const double pw = kW - kLeft - kRight, ph = kH - kTop - kBottom;
  s += fmt::format("<line x1=\"{}\" y1=\"{}\" x2=\"{}\" y2=\"{}\" stroke=\"black\"/>\n", kLeft, kTop + ph, kLeft + pw,
                   kTop + ph);
  s += fmt::format("<line x1=\"{}\" y1=\"{}\" x2=\"{}\" y2=\"{}\" stroke=\"black\"/>\n", kLeft, kTop, kLeft, kTop + ph);
  const double ys = nice_step(y1 - y0);
  for (double v = std::ceil(y0 / ys) * ys; v <= y1 + 1e-9 * ys; v += ys) {
    const double y = kTop + ph - (v - y0) / (y1 - y0) * ph;
    s += fmt::format("<line x1=\"{}\" y1=\"{:.1f}\" x2=\"{}\" y2=\"{:.1f}\" stroke=\"#ddd\"/>\n", kLeft, y, kLeft + pw, y);
    s += fmt::format("<text x=\"{}\" y=\"{:.1f}\" text-anchor=\"end\">{}</text>\n", kLeft - 6, y + 4, num(v));
  }
  if (x_ticks) {
    const double xs = nice_step(x1 - x0);
    for (double v = std::ceil(x0 / xs) * xs; v <= x1 + 1e-9 * xs; v += xs) {
      const double x = kLeft + (v - x0) / (x1 - x0) * pw;
      s += fmt::format("<text x=\"{:.1f}\" y=\"{}\" text-anchor=\"middle\">{}</text>\n", x, kTop + ph + 18, num(v));
    }
  }
  return s;
}

std::string legend(const std::vector<std::string>& names) {
  std::string s;
  for (size_t i = 0; i < names.size(); ++i) {
    const double y = kTop + 10 + 20 * static_cast<double>(i);
    s += fmt::format("<rect x=\"{}\" y=\"{}\" width=\"12\" height=\"12\" fill=\"{}\"/>\n", kW - kRight + 14, y - 10,
                     kColors[i % 8]);
    s += fmt::format("<text x=\"{}\" y=\"{}\">{}</text>\n", kW - kRight + 32, y, xml_escape(names[i]));
  }
  return s;
}

}  // namespace

std::string xml_escape(const std::string& s) {
  std::string out;
  for (char c : s) {
    switch (c) {
      case '&': out += "&amp;"; break;
      case '<': out += "&lt;"; break;
      case '>': out += "&gt;"; break;
      case '"': out += "&quot;"; break;
      case '\'': out += "&apos;"; break;
      default:
        if (static_cast<unsigned char>(c) >= 0x20 || c == '\n' || c == '\t') out += c;  // XML 1.0 forbids the rest
    }
  }
  return out;
}

std::string svg_stacked_bars(const ChartText& t, const std::vector<std::string>& names, const std::vector<BarGroup>& bars) {
  double ymax = 0;
  for (const auto& b : bars) {
    double sum = 0;
    for (double v : b.values) sum += std::max(0.0, v);
    ymax = std::max(ymax, sum);
  }
  ymax = ymax > 0 ? ymax * 1.05 : 1;
  std::string s = header(t) + axes(0, 1, 0, ymax, false);
  const double pw = kW - kLeft - kRight, ph = kH - kTop - kBottom;
  const double slot = bars.empty() ? pw : pw / static_cast<double>(bars.size()), bw = slot * 0.6;
  for (size_t i = 0; i < bars.size(); ++i) {
    const double x = kLeft + slot * static_cast<double>(i) + (slot - bw) / 2;
    double base = 0;
    for (size_t k = 0; k < bars[i].values.size(); ++k) {
      const double v = std::max(0.0, bars[i].values[k]), h = v / ymax * ph;
      s += fmt::format("<rect x=\"{:.1f}\" y=\"{:.1f}\" width=\"{:.1f}\" height=\"{:.1f}\" fill=\"{}\"><title>{}: {}</title></rect>\n",
                       x, kTop + ph - base - h, bw, h, kColors[k % 8], xml_escape(k < names.size() ? names[k] : ""), num(v));
      base += h;
    }
    s += fmt::format("<text x=\"{:.1f}\" y=\"{}\" text-anchor=\"middle\" font-size=\"10\">{}</text>\n", x + bw / 2,
                     kTop + ph + 16 + 12 * static_cast<double>(i % 2), xml_escape(bars[i].label));
  }
  return s + legend(names) + "</svg>\n";
}

std::string svg_lines(const ChartText& t, const std::vector<LineSeries>& series, const std::pair<double, double>* mark,
                      const std::string& mark_label) {
  double x0 = 1e300, x1 = -1e300, y0 = 0, y1 = -1e300;
  for (const auto& l : series) {
    for (auto [x, y] : l.points) {
      x0 = std::min(x0, x), x1 = std::max(x1, x), y0 = std::min(y0, y), y1 = std::max(y1, y);
    }
  }
  if (mark) x0 = std::min(x0, mark->first), x1 = std::max(x1, mark->first), y1 = std::max(y1, mark->second);
  if (!(x1 > x0)) x0 = x0 > 1e299 ? 0 : x0 - 1, x1 = x0 + 2;
  if (!(y1 > y0)) y1 = y0 + 1;
  y1 += (y1 - y0) * 0.05;
  std::string s = header(t) + axes(x0, x1, y0, y1, true);
  const double pw = kW - kLeft - kRight, ph = kH - kTop - kBottom;
  auto px = [&](double x) { return kLeft + (x - x0) / (x1 - x0) * pw; };
  auto py = [&](double y) { return kTop + ph - (y - y0) / (y1 - y0) * ph; };
  std::vector<std::string> names;
  for (size_t i = 0; i < series.size(); ++i) {
    names.push_back(series[i].name);
    std::string pts;
    for (auto [x, y] : series[i].points) pts += fmt::format("{:.1f},{:.1f} ", px(x), py(y));
    if (series[i].line) {
      s += fmt::format("<polyline fill=\"none\" stroke=\"{}\" stroke-width=\"2\" points=\"{}\"/>\n", kColors[i % 8], pts);
    }
    if (series[i].markers || !series[i].line) {
      for (auto [x, y] : series[i].points) {
        s += fmt::format("<circle cx=\"{:.1f}\" cy=\"{:.1f}\" r=\"3\" fill=\"{}\"/>\n", px(x), py(y), kColors[i % 8]);
      }
    }
  }
  if (mark) {
    s += fmt::format("<circle cx=\"{:.1f}\" cy=\"{:.1f}\" r=\"7\" fill=\"none\" stroke=\"red\" stroke-width=\"2\"/>\n",
                     px(mark->first), py(mark->second));
    s += fmt::format("<text x=\"{:.1f}\" y=\"{:.1f}\" fill=\"red\">{}</text>\n", px(mark->first) + 9,
                     py(mark->second) - 9, xml_escape(mark_label));
  }
  return s + legend(names) + "</svg>\n";
}

}  // namespace slimkv
