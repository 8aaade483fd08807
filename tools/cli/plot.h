#pragma once
// The training curves of `tapeflow train --plot PATH.svg|PATH.png`: a hand-written SVG document
// with two panels, loss (left) and accuracy (right), each with a polyline for the training and
// one for the test values per epoch, axes with ticks and labels, and a legend. For a .png path
// the same document is rendered by librsvg onto a cairo image surface, written as PNG.

#include <optional>
#include <string>

#include "history.h"

namespace tapeflow::cli {

/// The SVG document for `history` (one point per epoch in each polyline). An empty history gives
/// empty panels.
std::string training_svg(const History& history, const std::string& title);

enum class PlotFormat { kSvg, kPng };

/// The format `path`'s extension names: .svg or .png, in any case; std::nullopt for another.
std::optional<PlotFormat> plot_format(const std::string& path);

/// Writes training_svg() to `path` as SVG or, for a .png path, as a PNG image of twice the SVG's
/// size (through a temporary file renamed over `path`, so a reader never sees half a plot).
/// Throws InvalidArgumentError for a path plot_format() does not know, FailedPreconditionError
/// naming the path if it cannot be written or rendered.
void write_training_plot(const std::string& path, const History& history, const std::string& title);

}  // namespace tapeflow::cli
