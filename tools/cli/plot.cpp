#include "plot.h"

#include <cairo.h>
#include <fmt/format.h>
#include <librsvg/rsvg.h>

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <memory>
#include <stdexcept>
#include <system_error>
#include <vector>

#include "tapeflow/errors.h"

namespace tapeflow::cli {
namespace {

constexpr double kPanelWidth = 420, kPanelHeight = 320, kTitleHeight = 30;
constexpr double kSvgWidth = 2 * kPanelWidth, kSvgHeight = kPanelHeight + kTitleHeight;
constexpr int kPngScale = 2;  // pixels per SVG unit: sharp text on high-density screens
constexpr double kLeft = 60, kRight = 20, kTop = 30, kBottom = 50;  // margins inside a panel
constexpr const char* kTrainColour = "#1f77b4";                     // matplotlib's tab10 blue
constexpr const char* kTestColour = "#ff7f0e";                      // and orange

/// A "nice" tick step (1, 2, 2.5 or 5 times a power of ten) giving about `target` ticks.
double nice_step(double span, int target) {
  const double raw = span / target;
  const double mag = std::pow(10.0, std::floor(std::log10(raw)));
  for (double m : {1.0, 2.0, 2.5, 5.0, 10.0})
    if (m * mag >= raw) return m * mag;
  return 10 * mag;
}

/// The decimals that write every multiple of `step` exactly: 0 for 1, 1 for 0.5, 2 for 0.25.
int decimals_of(double step) {
  int d = 0;
  while (d < 12 && std::abs(step * std::pow(10.0, d) - std::round(step * std::pow(10.0, d))) > 1e-6) ++d;
  return d;
}

std::string escape(const std::string& s) {
  std::string out;
  for (char c : s) {
    switch (c) {
      case '&':
        out += "&amp;";
        break;
      case '<':
        out += "&lt;";
        break;
      case '>':
        out += "&gt;";
        break;
      case '"':
        out += "&quot;";
        break;
      default:
        out += c;
    }
  }
  return out;
}

struct Series {
  const char* label;
  const char* colour;
  std::vector<double> y;
};

/// One panel at horizontal offset `x0`: axes, ticks, grid, a polyline and markers per series.
std::string panel(double x0, double y0, const std::string& title, const std::string& ylabel,
                  const std::vector<double>& epochs, const std::vector<Series>& series,
                  bool legend_at_bottom) {
  std::string o;
  const double left = x0 + kLeft, right = x0 + kPanelWidth - kRight;
  const double top = y0 + kTop, bottom = y0 + kPanelHeight - kBottom;
  // Data ranges: x from the first to the last epoch (one epoch: centred, its tick alone), y from
  // the data with a 5% margin.
  const double last = epochs.empty() ? 1.0 : epochs.back();
  const double xmin = last <= 1 ? 0.5 : 1, xmax = last <= 1 ? 1.5 : last;
  double ymin = INFINITY, ymax = -INFINITY;
  for (const auto& s : series)
    for (double v : s.y)
      if (std::isfinite(v)) ymin = std::min(ymin, v), ymax = std::max(ymax, v);
  if (!std::isfinite(ymin)) ymin = 0, ymax = 1;
  if (ymax - ymin < 1e-9) ymin -= 0.5, ymax += 0.5;
  const double pad = 0.05 * (ymax - ymin);
  ymin -= pad, ymax += pad;
  auto px = [&](double v) { return left + (v - xmin) / (xmax - xmin) * (right - left); };
  auto py = [&](double v) { return bottom - (v - ymin) / (ymax - ymin) * (bottom - top); };

  o += fmt::format("<g class=\"panel\" id=\"{}\">\n", ylabel);
  o += fmt::format("<text x=\"{:.1f}\" y=\"{:.1f}\" text-anchor=\"middle\" font-size=\"14\">{}</text>\n",
                   (left + right) / 2, y0 + 18, escape(title));
  // Ticks and grid lines, at multiples of their step; the y labels all have the step's decimals.
  const double ystep = nice_step(ymax - ymin, 5);
  const int decimals = decimals_of(ystep);
  for (double k = std::ceil(ymin / ystep); k * ystep <= ymax + 1e-12; ++k) {
    o += fmt::format("<line x1=\"{0:.1f}\" y1=\"{1:.1f}\" x2=\"{2:.1f}\" y2=\"{1:.1f}\" stroke=\"#ddd\"/>\n",
                     left, py(k * ystep), right);
    o += fmt::format(
        "<text class=\"ytick\" x=\"{:.1f}\" y=\"{:.1f}\" text-anchor=\"end\" "
        "font-size=\"11\">{:.{}f}</text>\n",
        left - 6, py(k * ystep) + 4, k * ystep + 0.0, decimals);  // + 0.0: no "-0.00"
  }
  // Epochs are whole: a step of 1, 2, 5, 10, 20, 25, ... epochs.
  double xstep = std::max(1.0, nice_step(xmax - xmin, 6));
  if (xstep == 2.5) xstep = 2;
  for (double v = std::ceil(xmin / xstep) * xstep; v <= xmax + 1e-12; v += xstep) {
    o += fmt::format("<line x1=\"{0:.1f}\" y1=\"{1:.1f}\" x2=\"{0:.1f}\" y2=\"{2:.1f}\" stroke=\"#000\"/>\n",
                     px(v), bottom, bottom + 5);
    o += fmt::format(
        "<text class=\"xtick\" x=\"{:.1f}\" y=\"{:.1f}\" text-anchor=\"middle\" "
        "font-size=\"11\">{:g}</text>\n",
        px(v), bottom + 18, v);
  }
  // Axes and their labels.
  o += fmt::format("<path d=\"M{:.1f},{:.1f} V{:.1f} H{:.1f}\" fill=\"none\" stroke=\"#000\"/>\n", left, top,
                   bottom, right);
  o += fmt::format("<text x=\"{:.1f}\" y=\"{:.1f}\" text-anchor=\"middle\" font-size=\"12\">epoch</text>\n",
                   (left + right) / 2, bottom + 36);
  o += fmt::format(
      "<text x=\"{0:.1f}\" y=\"{1:.1f}\" text-anchor=\"middle\" font-size=\"12\" "
      "transform=\"rotate(-90 {0:.1f} {1:.1f})\">{2}</text>\n",
      x0 + 16, (top + bottom) / 2, ylabel);
  // The curves: one polyline per series, with a marker at each epoch.
  for (const auto& s : series) {
    std::string points;
    for (std::size_t i = 0; i < s.y.size(); ++i)
      points += fmt::format("{}{:.1f},{:.1f}", i ? " " : "", px(epochs[i]), py(s.y[i]));
    o += fmt::format(
        "<polyline class=\"{}\" data-series=\"{} {}\" fill=\"none\" stroke=\"{}\" stroke-width=\"2\" "
        "points=\"{}\"/>\n",
        ylabel, s.label, ylabel, s.colour, points);
    for (std::size_t i = 0; i < s.y.size(); ++i)
      o += fmt::format("<circle cx=\"{:.1f}\" cy=\"{:.1f}\" r=\"3\" fill=\"{}\"/>\n", px(epochs[i]),
                       py(s.y[i]), s.colour);
  }
  // Legend at the right, away from the curves: the top for losses (they fall), the bottom for
  // accuracies (they rise).
  for (std::size_t i = 0; i < series.size(); ++i) {
    const double ly = legend_at_bottom ? bottom - 12 - 16 * static_cast<double>(series.size() - 1 - i)
                                       : top + 12 + 16 * static_cast<double>(i);
    o += fmt::format(
        "<line x1=\"{0:.1f}\" y1=\"{1:.1f}\" x2=\"{2:.1f}\" y2=\"{1:.1f}\" stroke=\"{3}\" "
        "stroke-width=\"2\"/>\n",
        right - 80, ly, right - 60, series[i].colour);
    o += fmt::format("<text x=\"{:.1f}\" y=\"{:.1f}\" font-size=\"11\">{}</text>\n", right - 55, ly + 4,
                     series[i].label);
  }
  o += "</g>\n";
  return o;
}

}  // namespace

std::string training_svg(const History& history, const std::string& title) {
  std::vector<double> epochs, train_loss, test_loss, train_acc, test_acc;
  for (const auto& r : history) {
    epochs.push_back(static_cast<double>(r.epoch));
    train_loss.push_back(r.train_loss);
    test_loss.push_back(r.test_loss);
    train_acc.push_back(r.train_accuracy);
    test_acc.push_back(r.test_accuracy);
  }
  const double width = kSvgWidth, height = kSvgHeight;
  std::string o = fmt::format(
      "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n"
      "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"{0}\" height=\"{1}\" viewBox=\"0 0 {0} {1}\" "
      "font-family=\"sans-serif\">\n"
      "<rect width=\"100%\" height=\"100%\" fill=\"white\"/>\n"
      "<text x=\"{2}\" y=\"20\" text-anchor=\"middle\" font-size=\"16\">{3}</text>\n",
      width, height, width / 2, escape(title));
  o += panel(0, kTitleHeight, "loss", "loss", epochs,
             {{"train", kTrainColour, train_loss}, {"test", kTestColour, test_loss}}, false);
  o += panel(kPanelWidth, kTitleHeight, "accuracy", "accuracy", epochs,
             {{"train", kTrainColour, train_acc}, {"test", kTestColour, test_acc}}, true);
  o += "</svg>\n";
  return o;
}

namespace {

[[noreturn]] void plot_failed(const std::string& path, const std::string& reason) {
  throw FailedPreconditionError("cannot write the plot '" + path + "': " + reason);
}

void write_svg(const std::string& file, const std::string& svg) {
  std::ofstream f(file, std::ios::binary | std::ios::trunc);
  if (f) f << svg;
  if (!f || !f.flush()) throw std::system_error(errno, std::generic_category());
}

/// Renders `svg` with librsvg onto an ARGB image surface kPngScale times its size, written as PNG.
void write_png(const std::string& file, const std::string& svg) {
  GError* error = nullptr;
  std::unique_ptr<RsvgHandle, decltype(&g_object_unref)> handle(
      rsvg_handle_new_from_data(reinterpret_cast<const guint8*>(svg.data()), svg.size(), &error),
      &g_object_unref);
  auto take_error = [&] {
    std::string message = error ? error->message : "unknown error";
    g_clear_error(&error);
    return std::runtime_error("librsvg: " + message);
  };
  if (!handle) throw take_error();
  const int width = static_cast<int>(kSvgWidth) * kPngScale,
            height = static_cast<int>(kSvgHeight) * kPngScale;
  std::unique_ptr<cairo_surface_t, decltype(&cairo_surface_destroy)> surface(
      cairo_image_surface_create(CAIRO_FORMAT_ARGB32, width, height), &cairo_surface_destroy);
  std::unique_ptr<cairo_t, decltype(&cairo_destroy)> cr(cairo_create(surface.get()), &cairo_destroy);
  const RsvgRectangle viewport{0, 0, static_cast<double>(width), static_cast<double>(height)};
  if (!rsvg_handle_render_document(handle.get(), cr.get(), &viewport, &error)) throw take_error();
  const cairo_status_t status = cairo_surface_write_to_png(surface.get(), file.c_str());
  if (status != CAIRO_STATUS_SUCCESS) throw std::runtime_error(cairo_status_to_string(status));
}

}  // namespace

std::optional<PlotFormat> plot_format(const std::string& path) {
  std::string ext = std::filesystem::path(path).extension().string();
  std::transform(ext.begin(), ext.end(), ext.begin(), [](unsigned char c) { return std::tolower(c); });
  if (ext == ".svg") return PlotFormat::kSvg;
  if (ext == ".png") return PlotFormat::kPng;
  return std::nullopt;
}

void write_training_plot(const std::string& path, const History& history, const std::string& title) {
  const std::optional<PlotFormat> format = plot_format(path);
  if (!format)
    throw InvalidArgumentError("cannot write the plot '" + path +
                               "': the name must end in .svg (SVG) or .png (PNG image)");
  const std::string tmp = path + ".tmp";
  try {
    const std::string svg = training_svg(history, title);
    if (*format == PlotFormat::kSvg)
      write_svg(tmp, svg);
    else
      write_png(tmp, svg);
  } catch (const std::exception& e) {
    std::remove(tmp.c_str());
    plot_failed(path, e.what());
  }
  if (std::rename(tmp.c_str(), path.c_str()) != 0) {
    const std::string reason = std::strerror(errno);
    std::remove(tmp.c_str());
    plot_failed(path, reason);
  }
}

}  // namespace tapeflow::cli
