// Dataset.from_csv: a numeric CSV file read at once into one tensor per column, then sliced by
// rows (from_tensor_slices). Fields are separated by one character and trimmed of spaces and tabs;
// quoting is not supported (numeric columns never need it).

#include <charconv>

#include "core/check.h"
#include "data/line_reader.h"
#include "tapeflow/data/dataset.h"
#include "tapeflow/ops/creation.h"

namespace tapeflow::data {
namespace {

constexpr std::string_view kOp = "Dataset.from_csv";

std::string_view trim(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t')) s.remove_suffix(1);
  return s;
}

std::vector<std::string_view> split(std::string_view line, char delim) {
  std::vector<std::string_view> fields;
  for (;;) {
    const std::size_t end = line.find(delim);
    fields.push_back(trim(line.substr(0, end)));
    if (end == std::string_view::npos) return fields;
    line.remove_prefix(end + 1);
  }
}

// The whole field as a T, or nothing (std::from_chars alone accepts a prefix).
template <class T>
std::optional<T> parse(std::string_view field) {
  if (field.size() > 1 && field[0] == '+' && field[1] != '-')
    field.remove_prefix(1);  // from_chars refuses '+'
  T value{};
  const auto [end, error] = std::from_chars(field.data(), field.data() + field.size(), value);
  if (error != std::errc() || end != field.data() + field.size() || field.empty()) return std::nullopt;
  return value;
}

bool parses_as(DType dtype, std::string_view field) {
  switch (dtype) {
    case DType::Float32:
      return parse<float>(field).has_value();
    case DType::Float64:
      return parse<double>(field).has_value();
    case DType::Int32:
      return parse<std::int32_t>(field).has_value();
    case DType::Int64:
      return parse<std::int64_t>(field).has_value();
    default:
      return false;
  }
}

// The rows of the file (fields of each line) and where each line was.
struct Table {
  // NOTE: the fields view into these strings; moving the vector keeps them where they are.
  std::vector<std::string> lines;
  std::vector<std::vector<std::string_view>> rows;
  std::vector<std::int64_t> line_numbers;
};

Table read_table(const std::string& path, const CsvOptions& options) {
  LineReader reader(path, kOp);
  Table table;
  if (options.header) reader.next();
  while (std::optional<std::string> line = reader.next()) {
    if (line->empty()) continue;
    table.lines.push_back(std::move(*line));
    table.line_numbers.push_back(reader.line_number());
  }
  for (std::size_t r = 0; r < table.lines.size(); ++r) {
    table.rows.push_back(split(table.lines[r], options.field_delim));
    TAPEFLOW_REQUIRE(table.rows[r].size() == table.rows[0].size(), DataLossError,
                     "[{}] '{}' line {} has {} fields, but line {} has {}", kOp, path, table.line_numbers[r],
                     table.rows[r].size(), table.line_numbers[0], table.rows[0].size());
  }
  TAPEFLOW_REQUIRE(!table.rows.empty(), DataLossError, "[{}] '{}' has no rows", kOp, path);
  return table;
}

// int32 when every field of column c is an int32, else float32.
DType infer_type(const Table& table, std::size_t c) {
  for (const auto& row : table.rows)
    if (!parses_as(DType::Int32, row[c])) return DType::Float32;
  return DType::Int32;
}

template <class T>
Tensor column_as(const Table& table, std::size_t c, const std::string& path) {
  const auto n = static_cast<std::int64_t>(table.rows.size());
  return tensor_for_overwrite<T>(
      Shape{n},
      [&](std::span<T> out) {
        for (std::size_t r = 0; r < table.rows.size(); ++r) {
          const std::optional<T> v = parse<T>(table.rows[r][c]);
          TAPEFLOW_REQUIRE(v.has_value(), DataLossError,
                           "[{}] '{}' line {}, column {}: '{}' is not a {} number", kOp, path,
                           table.line_numbers[r], c + 1, table.rows[r][c], dtype_name(dtype_of<T>()));
          out[r] = *v;
        }
      },
      kOp);
}

Tensor column(const Table& table, std::size_t c, DType dtype, const std::string& path) {
  switch (dtype) {
    case DType::Float32:
      return column_as<float>(table, c, path);
    case DType::Float64:
      return column_as<double>(table, c, path);
    case DType::Int32:
      return column_as<std::int32_t>(table, c, path);
    case DType::Int64:
      return column_as<std::int64_t>(table, c, path);
    default:
      throw InvalidArgumentError(
          fmt::format("[{}] column {} has type {}; a column is float32, float64, int32 or int64", kOp, c + 1,
                      dtype_name(dtype)));
  }
}

}  // namespace

Dataset Dataset::from_csv(const std::string& path, const CsvOptions& options) {
  const Table table = read_table(path, options);
  const std::size_t columns = table.rows[0].size();
  TAPEFLOW_REQUIRE(options.column_types.empty() || options.column_types.size() == columns,
                   InvalidArgumentError, "[{}] '{}' has {} columns, but column_types gives {} types", kOp,
                   path, columns, options.column_types.size());
  std::vector<Tensor> tensors;
  for (std::size_t c = 0; c < columns; ++c) {
    const DType dtype = options.column_types.empty() ? infer_type(table, c) : options.column_types[c];
    tensors.push_back(column(table, c, dtype, path));
  }
  return from_tensor_slices(std::move(tensors));
}

}  // namespace tapeflow::data
