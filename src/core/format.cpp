// Printing tensors exactly as NumPy 1.24 and TensorFlow 2 print them.
//
// numpy_str is a port of numpy/core/arrayprint.py with NumPy's default print options
// (array2string, _formatArray, FloatingFormat, IntegerFormat, BoolFormat, array_repr), and of
// NumPy's scalar str/repr (numpy/core/src/multiarray/scalartypes.c.src) for rank 0.
// TensorFlow's str and repr wrap those texts (tensorflow/python/framework/ops.py: numpy_text).
//
// Terms. NumPy prints a float from its Dragon4 "unique" digits: the shortest decimal digits that
// read back as the same value *in the value's own dtype* (a float32 prints as 0.9999546, not as
// the double 0.99995458126068115). std::to_chars gives those digits. When NumPy asks for fewer
// (its precision) or more (its min_digits), Dragon4 rounds the exact binary value to that many
// digits, ties to even, which is what printf does (see dragon4_fixed for the one exception).

#include <fmt/format.h>

#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstdio>
#include <iterator>
#include <limits>
#include <span>
#include <string>
#include <string_view>
#include <type_traits>
#include <vector>

#include "core/bfloat16.h"
#include "tapeflow/tensor.h"

namespace tapeflow {
namespace {

// NumPy's default print options (np.get_printoptions()).
constexpr int kPrecision = 8;              // at most 8 digits after the point
constexpr std::int64_t kThreshold = 1000;  // arrays with more elements are summarised
constexpr std::int64_t kEdgeItems = 3;     // items kept at each end of a summarised axis
constexpr std::size_t kLineWidth = 75;
constexpr std::string_view kSummaryInsert = "...";

// ---- Decimal digits of one float: NumPy's Dragon4 (numpy/core/src/multiarray/dragon4.c) ----

/// A finite float in decimal: (-1)^negative * d0.d1d2... * 10^exponent.
struct Decimal {
  bool negative = false;
  std::string digits;  // no leading or trailing zeros, except the single digit of zero: "0"
  int exponent = 0;
};

/// Parses decimal text as printf and std::to_chars write it: "-12.50", "1.25e-05", "10.0e+05".
Decimal parse_decimal(std::string_view text) {
  Decimal d;
  if (text.front() == '-') {
    d.negative = true;
    text.remove_prefix(1);
  }
  int written_exponent = 0;
  if (const std::size_t e = text.find('e'); e != std::string_view::npos) {
    std::string_view exponent = text.substr(e + 1);
    if (exponent.front() == '+') exponent.remove_prefix(1);
    std::from_chars(exponent.data(), exponent.data() + exponent.size(), written_exponent);
    text = text.substr(0, e);
  }
  const std::size_t whole_digits = std::min(text.find('.'), text.size());
  std::string digits;
  for (char c : text)
    if (c != '.') digits += c;
  const std::size_t first = digits.find_first_not_of('0');
  if (first == std::string::npos) return {d.negative, "0", 0};
  d.digits = digits.substr(first, digits.find_last_not_of('0') + 1 - first);
  d.exponent = static_cast<int>(whole_digits) - 1 - static_cast<int>(first) + written_exponent;
  return d;
}

/// Dragon4's unique digits of `x`: the shortest that read back as `x` in T (float or double),
/// the closest such when there are several. std::to_chars guarantees exactly that.
template <class T>
Decimal shortest_decimal(T x) {
  char buffer[64];
  const auto end = std::to_chars(buffer, buffer + sizeof buffer, x, std::chars_format::scientific).ptr;
  return parse_decimal({buffer, end});
}

/// Positional digits count after the point; scientific ones after the first significant digit.
enum class Notation { kPositional, kScientific };

/// How many digits of `d` stand after the point in `notation` (negative when a positional
/// number's last digit lies left of the units digit: 9e7 has -7).
int fraction_digit_count(const Decimal& d, Notation notation) {
  const int after_first = static_cast<int>(d.digits.size()) - 1;
  return notation == Notation::kScientific ? after_first : after_first - d.exponent;
}

/// Dragon4 made to stop after exactly `fraction_digits` digits, more or fewer than the unique
/// ones: the exact binary value rounded to nearest, ties to even, as printf rounds it.
///
/// NOTE: Dragon4 rounds by its margin tests (`low`/`high`), which keep the digits inside the
/// round-trip interval; that differs from rounding to nearest only next to a power of two (whose
/// interval is lopsided) and only at the unique length, e.g. float32 2^87 is 1.5474251e+26 while
/// the nearest 8 digits are 1.5474250e+26. dragon4_digits takes the unique digits from
/// std::to_chars in that case. An exhaustive check of every float32 and float64 power of two at
/// 1 to 9 significant digits (all NumPy's default precision can ask for) found no other case.
template <class T>
Decimal dragon4_fixed(T x, Notation notation, int fraction_digits) {
  const char* format = notation == Notation::kScientific ? "%.*e" : "%.*f";
  const double value = static_cast<double>(x);  // exact: every float is a double
  std::string text(static_cast<std::size_t>(std::snprintf(nullptr, 0, format, fraction_digits, value)), '\0');
  std::snprintf(text.data(), text.size() + 1, format, fraction_digits, value);
  return parse_decimal(text);
}

/// NumPy's min_digits when none is asked for.
constexpr int kNoMinimum = std::numeric_limits<int>::min();

/// Dragon4 in unique mode: the unique digits, but no more than `max_fraction_digits` (NumPy's
/// precision) and no fewer than `min_fraction_digits` (NumPy's min_digits) after the point.
template <class T>
Decimal dragon4_digits(T x, Notation notation, int max_fraction_digits, int min_fraction_digits) {
  const Decimal shortest = shortest_decimal(x);
  const int unique_digits = fraction_digit_count(shortest, notation);
  const int digits = std::min(max_fraction_digits, std::max(unique_digits, min_fraction_digits));
  return digits == unique_digits ? shortest : dragon4_fixed(x, notation, digits);
}

/// A float written positionally, split at the point as Dragon4 writes it with trim='.':
/// -12.5 is {"-12", "5"}, 4.0 is {"4", ""}. The integer part carries the sign.
struct Positional {
  std::string integer;
  std::string fraction;
};

Positional to_positional(const Decimal& d) {
  Positional p{d.negative ? "-" : "", ""};
  const int point = d.exponent + 1;  // how many digits stand before the point
  const int digit_count = static_cast<int>(d.digits.size());
  if (point <= 0) {
    p.integer += '0';
    p.fraction = std::string(static_cast<std::size_t>(-point), '0') + d.digits;
  } else if (point >= digit_count) {
    p.integer += d.digits + std::string(static_cast<std::size_t>(point - digit_count), '0');
  } else {
    p.integer += d.digits.substr(0, static_cast<std::size_t>(point));
    p.fraction = d.digits.substr(static_cast<std::size_t>(point));
  }
  return p;
}

/// "e+05", "e-123": the exponent with its sign and at least `min_digits` digits.
std::string exponent_text(int exponent, int min_digits) {
  return fmt::format("e{}{:0{}}", exponent < 0 ? '-' : '+', std::abs(exponent), min_digits);
}

/// How many digits exponent_text writes for `exponent`.
int exponent_digit_count(int exponent) {
  return std::max(2, static_cast<int>(std::to_string(std::abs(exponent)).size()));
}

std::string spaces(std::size_t n) { return std::string(n, ' '); }

std::string pad_left(const std::string& s, std::size_t width) {
  return s.size() >= width ? s : spaces(width - s.size()) + s;
}

std::string non_finite_text(double x) {
  if (std::isnan(x)) return "nan";
  return x < 0 ? "-inf" : "inf";
}

// ---- Rank 0: NumPy's scalar str() and repr() ----

/// NumPy's str(np.float32(x)) (repr is the same since 1.14): positional for 0 and for
/// 1e-4 <= |x| < 1e16 keeping one zero after the point ("6.0"), scientific otherwise without a
/// bare point ("1e+16", "1.5e-05"). scalartypes.c.src: @name@type_@kind@_either.
template <class T>
std::string float_scalar_text(T x) {
  if (!std::isfinite(x)) return non_finite_text(x);
  const Decimal d = shortest_decimal(x);
  const double magnitude = std::fabs(static_cast<double>(x));
  if (magnitude == 0 || (magnitude >= 1e-4 && magnitude < 1e16)) {
    const Positional p = to_positional(d);
    return p.integer + "." + (p.fraction.empty() ? "0" : p.fraction);
  }
  std::string text = d.negative ? "-" : "";
  text += d.digits.front();
  if (d.digits.size() > 1) text += fmt::format(".{}", d.digits.substr(1));
  return text + exponent_text(d.exponent, 2);
}

template <class T>
std::string scalar_text(T x) {
  if constexpr (std::is_same_v<T, bool>)
    return x ? "True" : "False";
  else if constexpr (std::is_integral_v<T>)
    return std::to_string(x);
  else
    return float_scalar_text(x);
}

// ---- Element formats of an array: one per dtype kind, fitted to the elements shown ----

/// NumPy's BoolFormat: " True" pads to the width of "False" so columns align.
struct BoolFormat {
  explicit BoolFormat(const std::vector<bool>&) {}
  std::string operator()(bool x) const { return x ? " True" : "False"; }
};

/// NumPy's IntegerFormat: right-aligned to the wider of the largest and the smallest element.
template <class T>
class IntegerFormat {
 public:
  explicit IntegerFormat(const std::vector<T>& shown) {
    const auto [smallest, largest] = std::minmax_element(shown.begin(), shown.end());
    width_ = std::max(std::to_string(*smallest).size(), std::to_string(*largest).size());
  }
  std::string operator()(T x) const { return pad_left(std::to_string(x), width_); }

 private:
  std::size_t width_ = 0;
};

/// NumPy's FloatingFormat with floatmode='maxprec', sign='-', suppress=False: every element
/// prints its own unique digits (at most kPrecision after the point), padded so that the points
/// line up; the whole array switches to scientific notation when its magnitudes span too much.
template <class T>
class FloatFormat {
 public:
  explicit FloatFormat(const std::vector<T>& shown) {
    std::vector<T> finite;
    std::copy_if(shown.begin(), shown.end(), std::back_inserter(finite),
                 [](T x) { return std::isfinite(x); });
    scientific_ = needs_scientific(finite);
    if (scientific_)
      fit_scientific(finite);
    else
      fit_positional(finite);
    if (finite.size() != shown.size()) fit_non_finite(shown);
  }

  std::string operator()(T x) const {
    if (!std::isfinite(x)) {
      const std::string text = non_finite_text(x);
      return pad_left(text, pad_left_ + pad_right_ + 1);
    }
    if (scientific_) {
      // The second pass asks for exactly precision_ digits (min_digits == precision).
      const Decimal d = dragon4_digits(x, Notation::kScientific, precision_, precision_);
      const std::string mantissa = std::string(d.negative ? "-" : "") + d.digits.front();
      std::string fraction = d.digits.substr(1);
      fraction.resize(static_cast<std::size_t>(precision_), '0');
      return pad_left(mantissa, pad_left_) + "." + fraction + exponent_text(d.exponent, exponent_digits_);
    }
    // min_digits=0: Dragon4 prints every digit down to the units one, even past the unique ones.
    Positional p = to_positional(dragon4_digits(x, Notation::kPositional, kPrecision, 0));
    p.fraction.resize(pad_right_, ' ');
    return pad_left(p.integer, pad_left_) + "." + p.fraction;
  }

 private:
  /// FloatingFormat.fillFormat: scientific if, over the finite non-zero magnitudes,
  /// max >= 1e8 or min < 1e-4 or max / min > 1e3. The ratio is computed in T, as NumPy does.
  static bool needs_scientific(const std::vector<T>& finite) {
    std::vector<T> magnitudes;
    for (T x : finite)
      if (x != 0) magnitudes.push_back(std::fabs(x));
    if (magnitudes.empty()) return false;
    const auto [min_it, max_it] = std::minmax_element(magnitudes.begin(), magnitudes.end());
    const T ratio = *max_it / *min_it;
    return *max_it >= 1e8 || *min_it < 1e-4 || ratio > 1000;
  }

  // Widths from Dragon4 scientific digits: pad_left fits the sign and leading digit, precision
  // the longest fraction (every element is zero-padded to it), exponent_digits the longest exponent.
  void fit_scientific(const std::vector<T>& finite) {
    for (T x : finite) {
      const Decimal d = dragon4_digits(x, Notation::kScientific, kPrecision, kNoMinimum);
      pad_left_ = std::max<std::size_t>(pad_left_, d.negative ? 2 : 1);
      precision_ = std::max(precision_, static_cast<int>(d.digits.size()) - 1);
      exponent_digits_ = std::max(exponent_digits_, exponent_digit_count(d.exponent));
    }
    pad_right_ = static_cast<std::size_t>(exponent_digits_ + 2 + precision_);  // for nan's width
  }

  // Widths from Dragon4 positional digits: the longest integer part (with sign) and fraction.
  void fit_positional(const std::vector<T>& finite) {
    for (T x : finite) {
      const Positional p = to_positional(dragon4_digits(x, Notation::kPositional, kPrecision, kNoMinimum));
      pad_left_ = std::max(pad_left_, p.integer.size());
      pad_right_ = std::max(pad_right_, p.fraction.size());
    }
  }

  // nan and inf are right-aligned in the full width; widen the integer part if they need it.
  void fit_non_finite(const std::vector<T>& shown) {
    const bool has_negative_inf =
        std::any_of(shown.begin(), shown.end(), [](T x) { return std::isinf(x) && x < 0; });
    const std::size_t widest = has_negative_inf ? 4 : 3;  // "nan", "inf", "-inf"
    const std::size_t after_integer = pad_right_ + 1;     // the point and the fraction
    if (widest > after_integer) pad_left_ = std::max(pad_left_, widest - after_integer);
  }

  bool scientific_ = false;
  std::size_t pad_left_ = 0;
  std::size_t pad_right_ = 0;
  int precision_ = 0;        // fraction digits in scientific notation
  int exponent_digits_ = 2;  // NumPy always writes at least two
};

template <class T>
auto make_element_format(const std::vector<T>& shown) {
  if constexpr (std::is_same_v<T, bool>)
    return BoolFormat(shown);
  else if constexpr (std::is_integral_v<T>)
    return IntegerFormat<T>(shown);
  else
    return FloatFormat<T>(shown);
}

// ---- array2string ----

/// _extendLine: appends `word` to `line`, first moving `line` into `text` when the word would
/// pass `width`, unless the line holds nothing but its indent (wrapping would not help).
void extend_line(std::string& text, std::string& line, std::string_view word, std::size_t width,
                 const std::string& indent) {
  if (line.size() + word.size() > width && line.size() > indent.size()) {
    text += line.substr(0, line.find_last_not_of(' ') + 1) + "\n";
    line = indent;
  }
  line += word;
}

/// One array2string call on the elements of type T of a non-empty tensor of rank >= 1.
template <class T>
class ArrayPrinter {
 public:
  ArrayPrinter(const Tensor& t, std::string_view separator)
      : values_(t.values<T>()),
        dims_(t.shape().dims()),
        strides_(dims_.size(), 1),
        summarise_(t.num_elements() > kThreshold),
        separator_(separator) {
    for (std::size_t axis = dims_.size() - 1; axis > 0; --axis)
      strides_[axis - 1] = strides_[axis] * dims_[axis];
  }

  /// _formatArray: `prefix_length` is the width of the text before the opening bracket
  /// ("array(" in a repr), `line_width` what is left of kLineWidth after the closing suffix.
  std::string print(std::size_t prefix_length, std::size_t line_width) const {
    std::vector<T> shown;
    collect_shown(0, 0, shown);
    const auto format = make_element_format(shown);
    return print_axis(format, 0, 0, spaces(1 + prefix_length), line_width);
  }

 private:
  bool is_summarised(std::size_t axis) const { return summarise_ && dims_[axis] > 2 * kEdgeItems; }

  /// The indices printed along `axis`: all, or the kEdgeItems at each end (_leading_trailing).
  std::vector<std::int64_t> shown_indices(std::size_t axis) const {
    const std::int64_t length = dims_[axis];
    std::vector<std::int64_t> indices;
    if (!is_summarised(axis)) {
      for (std::int64_t i = 0; i < length; ++i) indices.push_back(i);
      return indices;
    }
    for (std::int64_t i = 0; i < kEdgeItems; ++i) indices.push_back(i);
    for (std::int64_t i = length - kEdgeItems; i < length; ++i) indices.push_back(i);
    return indices;
  }

  // The element format is fitted to the printed elements only, as NumPy fits it to the
  // summarised array.
  void collect_shown(std::size_t axis, std::int64_t offset, std::vector<T>& shown) const {
    if (axis == dims_.size()) {
      shown.push_back(values_[static_cast<std::size_t>(offset)]);
      return;
    }
    for (std::int64_t i : shown_indices(axis)) collect_shown(axis + 1, offset + i * strides_[axis], shown);
  }

  // _formatArray's recurser: rows of the last axis wrap at `width`; outer axes put each
  // sub-array on its own line, with one blank line more per axis below them.
  template <class Format>
  std::string print_axis(const Format& format, std::size_t axis, std::int64_t offset,
                         const std::string& indent, std::size_t width) const {
    if (axis == dims_.size()) return format(values_[static_cast<std::size_t>(offset)]);
    const std::string next_indent = indent + " ";  // aligns with the text after "["
    const std::size_t next_width = width - 1;      // leaves room for the "]"
    const std::vector<std::int64_t> indices = shown_indices(axis);
    const std::size_t summary_position = is_summarised(axis) ? kEdgeItems : indices.size();
    const std::size_t axes_left = dims_.size() - axis;
    std::string text;

    if (axes_left == 1) {
      const std::size_t element_width = width - 1;  // room for "," or "]" after each element
      std::string line = indent;
      for (std::size_t k = 0; k < indices.size(); ++k) {
        if (k == summary_position) {
          extend_line(text, line, kSummaryInsert, element_width, indent);
          line += separator_;
        }
        const std::int64_t child = offset + indices[k] * strides_[axis];
        extend_line(text, line, print_axis(format, axis + 1, child, next_indent, next_width), element_width,
                    indent);
        if (k + 1 < indices.size()) line += separator_;
      }
      text += line;
    } else {
      const std::string_view trimmed = separator_.substr(0, separator_.find_last_not_of(' ') + 1);
      const std::string line_separator = std::string(trimmed) + std::string(axes_left - 1, '\n');
      for (std::size_t k = 0; k < indices.size(); ++k) {
        if (k == summary_position) text += indent + std::string(kSummaryInsert) + line_separator;
        const std::int64_t child = offset + indices[k] * strides_[axis];
        text += indent + print_axis(format, axis + 1, child, next_indent, next_width);
        if (k + 1 < indices.size()) text += line_separator;
      }
    }
    // The first line's indent gives way to the bracket.
    return fmt::format("[{}]", std::string_view(text).substr(indent.size()));
  }

  std::span<const T> values_;
  std::span<const std::int64_t> dims_;
  std::vector<std::int64_t> strides_;
  bool summarise_;
  std::string_view separator_;
};

/// The tensor whose values are printed: a bfloat16 tensor's exact values in float32 (1.1 rounded
/// to bfloat16 prints as 1.1015625, the value it holds), any other tensor itself.
Tensor printable(const Tensor& t) { return detail::widen_if_bfloat16(t, "print"); }

/// np.array2string with default options; `suffix_length` is taken off the line width.
std::string array2string(const Tensor& t, std::string_view separator, std::size_t prefix_length,
                         std::size_t suffix_length) {
  if (t.num_elements() == 0) return "[]";
  if (t.dtype() == DType::BFloat16)
    return array2string(printable(t), separator, prefix_length, suffix_length);
  return visit_dtype(t.dtype(), [&]<class T>() {
    return ArrayPrinter<T>(t, separator).print(prefix_length, kLineWidth - suffix_length);
  });
}

/// NumPy's repr(array) (array_repr): "array([1., 2.], dtype=float32)". The dtype is left out
/// for the types NumPy implies (float64, int64, bool) unless the array is empty, and moves to
/// its own line when it would pass the line width.
std::string array_repr(const Tensor& t) {
  const DType d = t.dtype();
  const bool dtype_implied =
      (d == DType::Float64 || d == DType::Int64 || d == DType::Bool) && t.num_elements() > 0;
  const std::string prefix = "array(";
  const std::string suffix = dtype_implied ? ")" : ",";
  const bool empty_with_shape = t.num_elements() == 0 && t.rank() != 1;
  const std::string body = empty_with_shape ? fmt::format("[], shape={}", t.shape().to_string())
                                            : array2string(t, ", ", prefix.size(), suffix.size());
  const std::string text = prefix + body + suffix;
  if (dtype_implied) return text;

  const std::string dtype_text = fmt::format("dtype={})", dtype_name(d));
  const std::size_t last_line_length = text.size() - (text.rfind('\n') + 1);
  const bool dtype_fits = last_line_length + dtype_text.size() + 1 <= kLineWidth;
  const std::string spacer = dtype_fits ? " " : fmt::format("\n{}", spaces(prefix.size()));
  return text + spacer + dtype_text;
}

std::string scalar_text(const Tensor& t) {
  const Tensor p = printable(t);
  return visit_dtype(p.dtype(), [&]<class T>() { return scalar_text(p.values<T>()[0]); });
}

/// TensorFlow's numpy_text: a multi-line text starts on a line of its own.
std::string tensorflow_numpy_text(std::string text) {
  return text.find('\n') == std::string::npos ? text : fmt::format("\n{}", text);
}

constexpr std::string_view kUndefined = "<undefined>";

}  // namespace

std::string numpy_str(const Tensor& t) {
  if (!t.defined()) return std::string(kUndefined);
  // A 0-d array prints as its scalar, unlimited by the precision (_array_str_implementation).
  if (t.rank() == 0) return scalar_text(t);
  return array2string(t, " ", 0, 0);
}

std::string to_string(const Tensor& t) {
  if (!t.defined()) return fmt::format("tf.Tensor({})", kUndefined);
  return fmt::format("tf.Tensor({}, shape={}, dtype={})", tensorflow_numpy_text(numpy_str(t)),
                     t.shape().to_string(), dtype_name(t.dtype()));
}

std::string repr(const Tensor& t) {
  if (!t.defined()) return fmt::format("<tf.Tensor: {}>", kUndefined);
  // A rank-0 EagerTensor's numpy() is a NumPy scalar, whose repr is its str in NumPy 1.24.
  const std::string numpy_text = t.rank() == 0 ? scalar_text(t) : array_repr(t);
  return fmt::format("<tf.Tensor: shape={}, dtype={}, numpy={}>", t.shape().to_string(),
                     dtype_name(t.dtype()), tensorflow_numpy_text(numpy_text));
}

}  // namespace tapeflow
