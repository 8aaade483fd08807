#pragma once
// Keras 2's model.summary() table, shared by Sequential and Functional: its rows, shapes with the
// batch as None, and the totals at its foot.

#include <cstdint>
#include <string>
#include <vector>

#include "tapeflow/shape.h"
#include "tapeflow/variable.h"

namespace tapeflow::layers::summary {

/// The Sequential layout: 65 characters, columns ending at 0.45, 0.85 and 1 of them.
inline const std::vector<int> kSequentialColumns = {29, 55, 65};
/// The layout with connections: 98 characters, columns ending at 0.33, 0.55, 0.67 and 1.
inline const std::vector<int> kConnectedColumns = {32, 53, 65, 98};

/// Keras 2's print_row: each field from its column's start, cut to the column's width less two
/// spaces (the last column: its width) and continued on the next lines; a cut prefers to fall
/// just after "),", "},", "]," or "'," (so a list of connections gets one per line).
/// `column_ends` has one entry per field.
std::string row(std::vector<std::string> fields, const std::vector<int>& column_ends);

/// "Model: \"name\"", a rule of '_' and the header row ("Layer (type)", "Output Shape",
/// "Param #" and, with four columns, "Connected to") under a rule of '='.
std::string header(const std::string& model_name, const std::vector<int>& column_ends);

/// "(None, 28, 28, 1)": a shape whose first dimension is the batch, printed as None; Python's
/// "(None,)" for rank 1.
std::string batch_shape(const Shape& shape);

/// The number of elements of `variables`.
std::int64_t parameters(const std::vector<Variable>& variables);

/// The totals of a model whose variables are `all`, `trainable` of them trainable, then the
/// closing rule.
std::string totals(const std::vector<Variable>& all, const std::vector<Variable>& trainable, int line_length);

}  // namespace tapeflow::layers::summary
