#pragma once
// A small, self-contained SVG line plot: what the seed programs use where the seed calls
// matplotlib (plt.plot / plt.legend / plt.xlabel). Axes with ticks and grid, one polyline per
// series, a legend. The layout follows matplotlib's defaults: 5% data margins, tab10 colours,
// "nice" tick steps (1, 2, 2.5, 5 x 10^k), legend in the upper left.
//
//   seeds::LinePlot plot;
//   plot.add("y", xs, ys);
//   plot.add("dy/dx", xs, dys);
//   plot.xlabel = "x";
//   plot.write("sigmoid.svg");     // throws std::runtime_error if the file cannot be written

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <limits>
#include <sstream>
#include <stdexcept>
#include <string>
#include <vector>

namespace seeds {

struct Series {
  std::string label;
  std::vector<double> x, y;
};

class LinePlot {
 public:
  std::string xlabel, ylabel, title;
  double width = 640, height = 480;

  void add(std::string label, std::vector<double> x, std::vector<double> y) {
    if (x.size() != y.size()) throw std::invalid_argument("LinePlot::add: x and y differ in length");
    series_.push_back({std::move(label), std::move(x), std::move(y)});
  }

  /// The whole document as a string.
  std::string svg() const {
    Range xr = data_range(true), yr = data_range(false);
    const std::vector<double> xt = ticks(xr), yt = ticks(yr);
    // Plot area in pixels (room on the left and bottom for tick labels and axis labels).
    const double left = 70, right = width - 20, top = title.empty() ? 20 : 40, bottom = height - 55;
    auto px = [&](double v) { return left + (v - xr.lo) / (xr.hi - xr.lo) * (right - left); };
    auto py = [&](double v) { return bottom - (v - yr.lo) / (yr.hi - yr.lo) * (bottom - top); };

    std::ostringstream o;
    o << "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"" << width << "\" height=\"" << height
      << "\" viewBox=\"0 0 " << width << ' ' << height << "\" font-family=\"DejaVu Sans, Arial, sans-serif\" "
      << "font-size=\"12\">\n";
    o << "<rect width=\"100%\" height=\"100%\" fill=\"white\"/>\n";
    if (!title.empty())
      o << "<text x=\"" << (left + right) / 2 << "\" y=\"24\" text-anchor=\"middle\" font-size=\"14\">"
        << escape(title) << "</text>\n";
    // Grid and ticks.
    o << "<g stroke=\"#e0e0e0\" stroke-width=\"1\">\n";
    for (double t : xt) o << line(px(t), top, px(t), bottom);
    for (double t : yt) o << line(left, py(t), right, py(t));
    o << "</g>\n<g stroke=\"black\" stroke-width=\"1\">\n";
    for (double t : xt) o << line(px(t), bottom, px(t), bottom + 5);
    for (double t : yt) o << line(left - 5, py(t), left, py(t));
    o << "</g>\n";
    for (double t : xt)
      o << "<text x=\"" << num(px(t)) << "\" y=\"" << num(bottom + 19) << "\" text-anchor=\"middle\">"
        << tick_label(t, xt) << "</text>\n";
    for (double t : yt)
      o << "<text x=\"" << num(left - 8) << "\" y=\"" << num(py(t) + 4) << "\" text-anchor=\"end\">"
        << tick_label(t, yt) << "</text>\n";
    // Series.
    o << "<g fill=\"none\" stroke-width=\"1.5\" stroke-linejoin=\"round\">\n";
    for (std::size_t s = 0; s < series_.size(); ++s) {
      o << "<polyline stroke=\"" << color(s) << "\" points=\"";
      for (std::size_t i = 0; i < series_[s].x.size(); ++i)
        o << (i ? " " : "") << num(px(series_[s].x[i])) << ',' << num(py(series_[s].y[i]));
      o << "\"/>\n";
    }
    o << "</g>\n";
    // Frame on top of the lines, as matplotlib draws its spines.
    o << "<rect x=\"" << left << "\" y=\"" << top << "\" width=\"" << right - left << "\" height=\""
      << bottom - top << "\" fill=\"none\" stroke=\"black\" stroke-width=\"1\"/>\n";
    if (!xlabel.empty())
      o << "<text x=\"" << num((left + right) / 2) << "\" y=\"" << num(height - 12)
        << "\" text-anchor=\"middle\" font-size=\"13\">" << escape(xlabel) << "</text>\n";
    if (!ylabel.empty())
      o << "<text transform=\"translate(16 " << num((top + bottom) / 2)
        << ") rotate(-90)\" text-anchor=\"middle\" font-size=\"13\">" << escape(ylabel) << "</text>\n";
    // Legend, upper left.
    if (!series_.empty()) {
      std::size_t longest = 0;
      for (const auto& s : series_) longest = std::max(longest, s.label.size());
      const double lw = 48 + 7.5 * static_cast<double>(longest),
                   lh = 8 + 20 * static_cast<double>(series_.size());
      const double lx = left + 10, ly = top + 10;
      o << "<rect x=\"" << lx << "\" y=\"" << ly << "\" width=\"" << num(lw) << "\" height=\"" << num(lh)
        << "\" rx=\"3\" fill=\"white\" fill-opacity=\"0.8\" stroke=\"#cccccc\"/>\n";
      for (std::size_t s = 0; s < series_.size(); ++s) {
        const double cy = ly + 14 + 20 * static_cast<double>(s);
        o << "<line x1=\"" << lx + 8 << "\" y1=\"" << cy << "\" x2=\"" << lx + 32 << "\" y2=\"" << cy
          << "\" stroke=\"" << color(s) << "\" stroke-width=\"1.5\"/>\n";
        o << "<text x=\"" << lx + 40 << "\" y=\"" << cy + 4 << "\">" << escape(series_[s].label)
          << "</text>\n";
      }
    }
    o << "</svg>\n";
    return o.str();
  }

  void write(const std::string& path) const {
    std::ofstream f(path);
    f << svg();
    if (!f) throw std::runtime_error("LinePlot::write: cannot write " + path);
  }

 private:
  struct Range {
    double lo, hi;
  };

  Range data_range(bool x_axis) const {
    double lo = std::numeric_limits<double>::infinity(), hi = -lo;
    for (const auto& s : series_)
      for (double v : x_axis ? s.x : s.y)
        if (std::isfinite(v)) lo = std::min(lo, v), hi = std::max(hi, v);
    if (!(lo <= hi)) return {0, 1};  // no finite data
    if (lo == hi) return {lo - 0.5, hi + 0.5};
    const double pad = 0.05 * (hi - lo);  // matplotlib's default margins
    return {lo - pad, hi + pad};
  }

  /// Tick positions inside `r` at a step of 1, 2, 2.5 or 5 times a power of ten (4 to 10 ticks).
  static std::vector<double> ticks(Range r) {
    const double raw = (r.hi - r.lo) / 8;
    const double mag = std::pow(10.0, std::floor(std::log10(raw)));
    double step = 10 * mag;
    for (double m : {1.0, 2.0, 2.5, 5.0})
      if (m * mag >= raw) {
        step = m * mag;
        break;
      }
    std::vector<double> out;
    for (double t = std::ceil(r.lo / step) * step; t <= r.hi + 1e-9 * step; t += step)
      out.push_back(std::abs(t) < 1e-12 * step ? 0.0 : t);
    return out;
  }

  /// Labels with as many decimals as the step needs, the same for every tick of an axis.
  static std::string tick_label(double v, const std::vector<double>& all) {
    int decimals = 0;
    for (double t : all)
      while (decimals < 6 &&
             std::abs(t * std::pow(10.0, decimals) - std::round(t * std::pow(10.0, decimals))) > 1e-6)
        ++decimals;
    char buf[32];
    std::snprintf(buf, sizeof buf, "%.*f", decimals, v);
    std::string s = buf;
    if (s.rfind("-", 0) == 0) s = "\u2212" + s.substr(1);  // a real minus sign, as matplotlib uses
    return s;
  }

  static std::string color(std::size_t i) {
    static const char* const kTab10[] = {"#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd",
                                         "#8c564b", "#e377c2", "#7f7f7f", "#bcbd22", "#17becf"};
    return kTab10[i % 10];
  }

  static std::string num(double v) {
    char buf[32];
    std::snprintf(buf, sizeof buf, "%.2f", v);
    return buf;
  }

  static std::string line(double x1, double y1, double x2, double y2) {
    return "<line x1=\"" + num(x1) + "\" y1=\"" + num(y1) + "\" x2=\"" + num(x2) + "\" y2=\"" + num(y2) +
           "\"/>\n";
  }

  static std::string escape(const std::string& s) {
    std::string out;
    for (char c : s) {
      if (c == '<')
        out += "&lt;";
      else if (c == '>')
        out += "&gt;";
      else if (c == '&')
        out += "&amp;";
      else if (c == '"')
        out += "&quot;";
      else
        out += c;
    }
    return out;
  }

  std::vector<Series> series_;
};

}  // namespace seeds
