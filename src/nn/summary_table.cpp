#include "nn/summary_table.h"

#include <fmt/format.h>

#include <algorithm>

namespace tapeflow::layers::summary {

namespace {

/// 1234567 -> "1,234,567" (Keras's totals, Python's f"{n:,}").
std::string with_commas(std::int64_t n) {
  const std::string digits = std::to_string(n);
  std::string out;
  for (std::size_t i = 0; i < digits.size(); ++i) {
    if (i > 0 && (digits.size() - i) % 3 == 0) out += ',';
    out += digits[i];
  }
  return out;
}

}  // namespace

std::string row(std::vector<std::string> fields, const std::vector<int>& column_ends) {
  std::string out;
  const auto left = [&] {
    return std::any_of(fields.begin(), fields.end(), [](const std::string& f) { return !f.empty(); });
  };
  while (left()) {
    std::string line;
    for (std::size_t col = 0; col < fields.size(); ++col) {
      const int start = col == 0 ? 0 : column_ends[col - 1];
      const int space = col + 1 == fields.size() ? 0 : 2;
      std::size_t cutoff = static_cast<std::size_t>(column_ends[col] - start - space);
      const std::string fits = fields[col].substr(0, cutoff);
      for (const char* mark : {"),", "},", "],", "',"}) {
        const std::size_t at = fits.find(mark);
        if (at != std::string::npos) cutoff = std::min(cutoff, at + 2);
      }
      const std::string fit = fields[col].substr(0, std::min(cutoff, fields[col].size()));
      if (col == 0) line += ' ';
      line += fit;
      line.append(static_cast<std::size_t>(space), ' ');
      fields[col].erase(0, std::min(cutoff, fields[col].size()));
      if (line.size() < static_cast<std::size_t>(column_ends[col]))
        line.append(static_cast<std::size_t>(column_ends[col]) - line.size(), ' ');
    }
    out += line + '\n';
  }
  return out;
}

std::string header(const std::string& model_name, const std::vector<int>& column_ends) {
  const auto line_length = static_cast<std::size_t>(column_ends.back());
  std::vector<std::string> titles = {"Layer (type)", "Output Shape", "Param #", "Connected to"};
  titles.resize(column_ends.size());
  return fmt::format("Model: \"{}\"\n{}\n", model_name, std::string(line_length, '_')) +
         row(titles, column_ends) + std::string(line_length, '=') + '\n';
}

std::string batch_shape(const Shape& shape) {
  std::string s = "(None";
  for (std::size_t i = 1; i < static_cast<std::size_t>(shape.rank()); ++i) s += fmt::format(", {}", shape[i]);
  return s + (shape.rank() == 1 ? ",)" : ")");
}

std::int64_t parameters(const std::vector<Variable>& variables) {
  std::int64_t n = 0;
  for (const Variable& v : variables) n += v.shape().num_elements();
  return n;
}

std::string totals(const std::vector<Variable>& all, const std::vector<Variable>& trainable,
                   int line_length) {
  const std::int64_t total = parameters(all), train = parameters(trainable);
  return fmt::format("Total params: {}\nTrainable params: {}\nNon-trainable params: {}\n{}\n",
                     with_commas(total), with_commas(train), with_commas(total - train),
                     std::string(static_cast<std::size_t>(line_length), '_'));
}

}  // namespace tapeflow::layers::summary
