#pragma once
// The training curves of `tapeflow train --plot PATH.svg`: a hand-written SVG document with two
// panels, loss (left) and accuracy (right), each with a polyline for the training and one for
// the test values per epoch, axes with ticks and labels, and a legend.

#include <string>

#include "history.h"

namespace tapeflow::cli {

/// The SVG document for `history` (one point per epoch in each polyline). An empty history gives
/// empty panels.
std::string training_svg(const History& history, const std::string& title);

/// Writes training_svg() to `path` (through a temporary file renamed over `path`, so a reader
/// never sees half a plot). Throws FailedPreconditionError naming the path if it cannot.
void write_training_svg(const std::string& path, const History& history, const std::string& title);

}  // namespace tapeflow::cli
