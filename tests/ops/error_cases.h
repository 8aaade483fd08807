#pragma once
// The error-input table (the OpInfo idea applied to bad inputs). Each row names a registered op,
// the class of bad input (from TensorFlow's advisories, /work/shared/reference/bad-inputs.md),
// the inputs and TF-named attributes, how to call the op's public function, and what it must
// throw. error_inputs_test.cpp runs every row
//   - through the public function and through raw_ops::call(op, inputs, attrs): the same
//     exception type and the same message;
//   - with a persistent tape recording and a watched Variable: after the error the variable, the
//     tape's num_recorded_ops() and saved_bytes(), and the allocator's live buffers are unchanged;
//   - checking the exception type exactly and that the message names the op as "[Op]" plus the
//     row's needles (the argument and the received shape or value).
// A coverage test fails if a registered op has no row. Rows live in error_cases_<family>.cpp,
// except an elementwise op's standard rows, which follow from the error kind of its op_cases row.

#include <cmath>
#include <functional>
#include <limits>
#include <string>
#include <vector>

#include "ops/op_cases.h"
#include "tapeflow/ops/raw.h"
#include "tapeflow/tapeflow.h"

namespace tapeflow::testing::errors {

/// The bad-input classes of issue 8 (letters as in bad-inputs.md where they map).
enum class ErrorClass {
  Rank,       // A: wrong rank, non-scalar where a scalar is required
  Shape,      // A: inconsistent shapes between inputs (incl. gradient ops' "forward shape" args)
  Empty,      // B: empty tensor where it is invalid
  Index,      // C: out-of-range index, axis, label
  Size,       // D: zero, negative or huge size / stride / window / attribute
  Overflow,   // E: shape-product or broadcast overflow, allocation cap
  NonFinite,  // M: NaN/Inf where an integer or size is needed
  DType,      // F: dtype not supported or mismatched
  Undefined,  // an undefined (default-constructed) Tensor
  Api,        // K: misuse of the tape / variable / custom-gradient API
};
std::string_view class_name(ErrorClass c);
inline constexpr int kNumClasses = 10;

/// The exact exception type a row expects.
enum class Throws {
  InvalidArgument,
  ResourceExhausted,
  OutOfRange,
  Unimplemented,
  FailedPrecondition,
  Lookup
};
std::string_view throws_name(Throws t);

using Ins = std::vector<Tensor>;
using Outs = std::vector<Tensor>;
using Ints = std::vector<std::int64_t>;

struct ErrorCase {
  /// Registry name of the op ("Tile"); the message must contain "[op]" unless `named` says otherwise.
  std::string op = "";
  ErrorClass cls = ErrorClass::Api;
  /// One line for the log: what is wrong.
  std::string what = "";
  Ins inputs = {};
  raw_ops::AttrMap attrs = {};
  /// The public function on `inputs`.
  std::function<Outs(const Ins&)> call = nullptr;
  /// Substrings the message must contain besides "[op]": the argument and the received value/shape.
  std::vector<std::string> needles = {};
  Throws throws = Throws::InvalidArgument;
  /// Also run through raw_ops::call (false for API rows whose public call is not an op call).
  bool raw = true;
  /// The bracketed name the message carries, when it differs from `op` (API rows); "-": none.
  std::string named = "";
};

/// Every row of every family.
const std::vector<ErrorCase>& error_cases();

/// The standard bad-input rows of an elementwise op of `kind` (op_cases.h), run through `call`
/// and, with `attrs`, through raw_ops::call.
void add_elementwise_error_rows(std::vector<ErrorCase>& rows, const std::string& op, ErrorKind kind,
                                const std::function<Outs(const Ins&)>& call,
                                const raw_ops::AttrMap& attrs = {});
/// Those rows for every op with an error kind in op_cases() (from its first row with one).
void add_kind_error_cases(std::vector<ErrorCase>& rows);

void add_math_error_cases(std::vector<ErrorCase>& rows);
void add_array_error_cases(std::vector<ErrorCase>& rows);
void add_nn_error_cases(std::vector<ErrorCase>& rows);
void add_other_error_cases(std::vector<ErrorCase>& rows);  // reduce, linalg, image, gradient control, API
void add_creation_error_cases(std::vector<ErrorCase>& rows);
void add_collective_error_cases(std::vector<ErrorCase>& rows);
void add_matrix_error_cases(std::vector<ErrorCase>& rows);  // tf::linalg's decompositions and solves
void add_scan_error_cases(std::vector<ErrorCase>& rows);    // scans, sorting and segments

// Inputs: small tensors filled with 0.5 (floats), 1 (ints) or true.
Tensor f32(const Shape& s);
Tensor f64(const Shape& s);
Tensor i32(const Shape& s);
Tensor i64(const Shape& s);
Tensor bools(const Shape& s);
inline Outs one(Tensor t) { return {std::move(t)}; }

}  // namespace tapeflow::testing::errors
