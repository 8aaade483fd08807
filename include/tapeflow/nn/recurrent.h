#pragma once
/// \file nn/recurrent.h
/// LSTM and GRU: the recurrent layers over sequences of shape (batch, steps, features), like
/// tf.keras.layers.LSTM and tf.keras.layers.GRU (Keras 3).
///
///   tf::layers::LSTM lstm(32, {.return_sequences = true});
///   tf::Tensor y = lstm(tf::zeros({8, 100, 16}));   // (8, 100, 32); builds the layer
///   lstm.trainable_variables();   // [kernel (16, 128), recurrent_kernel (32, 128), bias (128,)]
///   tf::layers::LSTMState s = lstm.call_with_state(x);   // s.output, s.h (8, 32), s.c (8, 32)
///
/// Built lazily, as in Keras: the first call creates "kernel" (features, G * units), drawn from
/// the kernel initialiser (Glorot uniform by default), "recurrent_kernel" (units, G * units),
/// drawn from the recurrent initialiser (Keras's Orthogonal by default), and "bias", with
/// Keras 3's layouts and names: G = 4 gates for LSTM in the order i, f, c, o; G = 3 for GRU in the
/// order z, r, h. Under a dtype policy (mixed_precision.h) the variables take its variable dtype
/// and the layer computes in its compute dtype ("mixed_bfloat16": float32 weights, bfloat16
/// steps); without one, in the input's dtype (float32 or float64).
///
/// The input's product with the kernel is one matmul over all steps, (batch * steps, features) @
/// (features, G * units); each step then does one (batch, units) @ (units, G * units) matmul and
/// splits the result into the gates. The steps are a plain C++ loop over tapeflow ops, so a
/// GradientTape differentiates through the whole recurrence and tf::function tracing unrolls it:
/// the traced graph grows linearly with the number of steps (there is no while-loop form). So
/// under an input_signature whose steps dimension is unknown (-1), each number of steps is a
/// different graph: function.h's checks find that and trace once per number of steps.
///
/// Keras's dropout and recurrent_dropout apply in training calls (call(x, true),
/// call_with_state(x, state, true), fit): one mask of the input's features and one of h's units
/// per call, the same at every step (Gal and Ghahramani's variational dropout, as Keras draws
/// them); the masked h enters the recurrent products only.
///
/// go_backwards processes the steps from last to first; as in Keras 3, return_sequences then gives
/// the outputs in processing order, that is reversed with respect to the input (Keras's
/// Bidirectional flips them back).

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <utility>

#include "tapeflow/nn/dense.h"
#include "tapeflow/nn/dropout.h"
#include "tapeflow/nn/layer.h"
#include "tapeflow/tensor.h"
#include "tapeflow/variable.h"

#pragma GCC visibility push(default)  // the public API: exported from a shared libtapeflow
namespace tapeflow::layers {

/// Options of LSTM (Keras's constructor arguments).
struct LSTMOptions {
  /// The layer's name (Module::name()).
  std::string name = "lstm";
  /// The activation of the candidate cell and of the cell state in h = o * activation(c), by its
  /// Keras name (see activation() in dense.h; "linear" for none).
  std::string activation = "tanh";
  /// The activation of the gates i, f, o, by its Keras name.
  std::string recurrent_activation = "sigmoid";
  /// Add the bias vector (Keras's use_bias).
  bool use_bias = true;
  /// The kernel's initialiser: "glorot_uniform" (default), "glorot_normal", "he_uniform",
  /// "he_normal" or "orthogonal" (see DenseOptions); fan_in = features, fan_out = 4 * units.
  std::string kernel_initializer = "glorot_uniform";
  /// The recurrent kernel's initialiser, one of the same names: "orthogonal" (default) is Keras's
  /// Orthogonal(gain=1), a (units, 4 * units) matrix with orthonormal rows.
  std::string recurrent_initializer = "orthogonal";
  /// Initialise the forget gate's slice of the bias, [units, 2 * units), to ones (Keras's
  /// unit_forget_bias); the rest of the bias is zeros.
  bool unit_forget_bias = true;
  /// Output every step's h, (batch, steps, units), instead of the last one, (batch, units).
  bool return_sequences = false;
  /// Keras's return_state. call() and operator() return the output alone whatever it says (so
  /// that the layer goes into a Sequential); call_with_state() always gives the states. The
  /// Python layer returns [output, h, c] when it is true, as Keras does.
  bool return_state = false;
  /// Process the steps from last to first (see the file comment for the order of the outputs).
  bool go_backwards = false;
  /// Keras's dropout, in [0, 1): in a training call, the fraction of the input's features
  /// dropped, with one mask per call shared by every step (variational dropout); the kept
  /// features are scaled by 1 / (1 - dropout).
  double dropout = 0.0;
  /// Keras's recurrent_dropout, in [0, 1): the same for the units of h that enter the recurrent
  /// products; the states themselves are not masked.
  double recurrent_dropout = 0.0;
  /// Seed of the initialisers and the dropout masks; without one, the next of the process-wide
  /// sequence (as Dense). The recurrent kernel and the masks take seeds derived from it.
  std::optional<std::uint64_t> seed = std::nullopt;
  /// The dtype policy (Keras's dtype=): std::nullopt takes the global one (mixed_precision.h).
  std::optional<mixed_precision::Policy> dtype_policy = std::nullopt;
};

/// What LSTM::call_with_state gives: the output (as operator() returns it) and the final states.
struct LSTMState {
  /// The last h, (batch, units), or every step's, (batch, steps, units), with return_sequences.
  Tensor output;
  /// The hidden state after the last step processed, (batch, units).
  Tensor h;
  /// The cell state after the last step processed, (batch, units).
  Tensor c;
};

/// Options of GRU (Keras's constructor arguments).
struct GRUOptions {
  /// The layer's name (Module::name()).
  std::string name = "gru";
  /// The activation of the candidate state h̃, by its Keras name ("linear" for none).
  std::string activation = "tanh";
  /// The activation of the gates z and r, by its Keras name.
  std::string recurrent_activation = "sigmoid";
  /// Add the bias (Keras's use_bias).
  bool use_bias = true;
  /// The kernel's initialiser (see LSTMOptions); fan_in = features, fan_out = 3 * units.
  std::string kernel_initializer = "glorot_uniform";
  /// The recurrent kernel's initialiser (see LSTMOptions): "orthogonal" by default.
  std::string recurrent_initializer = "orthogonal";
  /// Output every step's h, (batch, steps, units), instead of the last one, (batch, units).
  bool return_sequences = false;
  /// Keras's return_state (see LSTMOptions): the Python layer returns [output, h] when true.
  bool return_state = false;
  /// Process the steps from last to first (see the file comment for the order of the outputs).
  bool go_backwards = false;
  /// Apply the reset gate after the recurrent matmul (Keras's reset_after, true by default, the
  /// cuDNN form), with separate input and recurrent biases: bias of shape (2, 3 * units), row 0
  /// the input bias, row 1 the recurrent one. False: before it, with one bias (3 * units,).
  bool reset_after = true;
  /// Keras's dropout, in [0, 1) (see LSTMOptions): a mask of the input's features, one per
  /// training call, shared by every step.
  double dropout = 0.0;
  /// Keras's recurrent_dropout, in [0, 1) (see LSTMOptions): a mask of the units of h in the
  /// recurrent products, one per training call.
  double recurrent_dropout = 0.0;
  /// Seed of the initialisers and the dropout masks (see LSTMOptions).
  std::optional<std::uint64_t> seed = std::nullopt;
  /// The dtype policy (Keras's dtype=): std::nullopt takes the global one (mixed_precision.h).
  std::optional<mixed_precision::Policy> dtype_policy = std::nullopt;
};

/// What GRU::call_with_state gives: the output (as operator() returns it) and the final state.
struct GRUState {
  /// The last h, (batch, units), or every step's, (batch, steps, units), with return_sequences.
  Tensor output;
  /// The hidden state after the last step processed, (batch, units).
  Tensor h;
};

/// What LSTM and GRU share (`Options` is LSTMOptions or GRUOptions): the options, the hidden
/// units, the two activations, the variables kernel, recurrent_kernel and bias, which build()
/// creates, and the dropout masks. G below is the layer's number of gates (LSTM 4, GRU 3).
template <class Options>
class GatedRecurrent : public Layer {
 public:
  /// Creates kernel, recurrent_kernel and bias for inputs of `input_shape` (rank 3) and `dtype`.
  /// Called by the first call; throws FailedPreconditionError if already built.
  void build(const Shape& input_shape, DType dtype = DType::Float32);
  /// Whether the variables exist: after the first call or build().
  bool built() const { return kernel_.has_value(); }

  /// The number of hidden units.
  std::int64_t units() const { return units_; }
  /// The options the layer was created with.
  const Options& options() const { return options_; }
  /// The kernel, shape (features, G * units), the gates in the layer's order. Throws
  /// FailedPreconditionError before the build.
  const Variable& kernel() const;
  /// The recurrent kernel, shape (units, G * units). Throws FailedPreconditionError before the
  /// build.
  const Variable& recurrent_kernel() const;
  /// The bias (its shape is the layer's). Throws FailedPreconditionError before the build or
  /// without bias.
  const Variable& bias() const;

 protected:
  /// Validates the options: InvalidArgumentError naming `kind` ("LSTM" or "GRU") if units < 1 or
  /// > 2^31, for an unknown activation or initialiser, or a dropout rate outside [0, 1).
  GatedRecurrent(std::string_view kind, std::int64_t gates, std::int64_t units, Options options);

  /// What a call computes before its steps.
  struct CallInputs {
    Tensor x;               ///< the input, cast by the policy
    DType compute;          ///< the dtype the steps compute in
    std::int64_t batch;     ///< the input's first dimension
    std::int64_t steps;     ///< the input's second dimension
    Tensor input_mask;      ///< the input's dropout mask in a training call, else undefined
    Tensor recurrent_mask;  ///< h's dropout mask in a training call, else undefined
  };
  /// Checks `x`, builds the layer on its first call, and draws the masks of a training call.
  /// Throws InvalidArgumentError as the layers' operator() documents.
  CallInputs begin_call(const Tensor& x, bool training);
  /// The initial state `what` ("h" or "c") of a call: `state` checked and cast by the policy, or
  /// zeros of (batch, units).
  Tensor state_or_zeros(const CallInputs& call, const std::optional<Tensor>& state,
                        std::string_view what) const;

  std::string_view kind_;                       ///< "LSTM" or "GRU", for messages
  std::int64_t gates_;                          ///< G
  std::int64_t units_;                          ///< the hidden units
  Options options_;                             ///< as the layer was created with them
  Activation activation_;                       ///< of the candidate and the output (tanh by default)
  Activation recurrent_activation_;             ///< of the gates (sigmoid by default)
  std::optional<Variable> kernel_;              ///< (features, G * units), made by build()
  std::optional<Variable> recurrent_kernel_;    ///< (units, G * units), made by build()
  std::optional<Variable> bias_;                ///< made by build() with use_bias
  std::shared_ptr<Dropout> input_dropout_;      ///< made by build() for a dropout rate > 0
  std::shared_ptr<Dropout> recurrent_dropout_;  ///< made by build() for a recurrent_dropout rate > 0

 private:
  /// The bias build() creates, of `dtype`: the layer's layout and initial values.
  virtual Tensor initial_bias(DType dtype) const = 0;
};

/// The long short-term memory layer (tf.keras.layers.LSTM). For each step t, with
/// z = x_t @ kernel + h @ recurrent_kernel + bias split into four (batch, units) gates:
///   i = σ(z_i), f = σ(z_f), c̃ = tanh(z_c), o = σ(z_o);  c = f * c + i * c̃;  h = o * tanh(c)
/// (σ the recurrent activation, tanh the activation), from h = c = 0 or an initial state.
class LSTM : public GatedRecurrent<LSTMOptions> {
 public:
  /// A layer of `units` hidden units. Throws InvalidArgumentError (naming LSTM) if units < 1 or
  /// > 2^31, for an unknown activation or initialiser, or a dropout rate outside [0, 1).
  explicit LSTM(std::int64_t units, LSTMOptions options = {});

  /// The output for x of shape (batch, steps, features), from zero states; builds the layer on
  /// the first call. Throws InvalidArgumentError (naming LSTM and the shapes) for a rank other
  /// than 3, a non-float dtype, zero steps, or, once built, an input whose features or dtype
  /// differ from what the layer was built for.
  Tensor operator()(const Tensor& x);
  /// Layer::call: the output; `training` applies the dropout masks.
  Tensor call(const Tensor& x, bool training) override { return call_with_state(x, {}, training).output; }
  /// The output and the final states (h, c), starting from `initial_state` = (h, c), each of
  /// shape (batch, units), or from zeros; `training` applies the dropout masks. Throws as
  /// operator() does, and InvalidArgumentError (naming LSTM and the shapes) for initial states of
  /// another shape or dtype.
  LSTMState call_with_state(const Tensor& x,
                            std::optional<std::pair<Tensor, Tensor>> initial_state = std::nullopt,
                            bool training = false);
  // kernel (features, 4 * units) and recurrent_kernel (units, 4 * units) have the gates i, f, c,
  // o; bias is (4 * units,).

 private:
  Tensor initial_bias(DType dtype) const override;
};

/// The gated recurrent unit layer (tf.keras.layers.GRU). For each step, with x_t @ kernel split
/// into (x_z, x_r, x_h) and h @ recurrent_kernel into (r_z, r_r, r_h) (each with its bias):
///   reset_after = true:  z = σ(x_z + r_z), r = σ(x_r + r_r), h̃ = tanh(x_h + r * r_h)
///   reset_after = false: z, r the same; h̃ = tanh(x_h + (r * h) @ recurrent_kernel[:, 2u:])
///   h = z * h + (1 - z) * h̃
/// (σ the recurrent activation, tanh the activation), from h = 0 or an initial state.
class GRU : public GatedRecurrent<GRUOptions> {
 public:
  /// A layer of `units` hidden units. Throws InvalidArgumentError (naming GRU) if units < 1 or
  /// > 2^31, for an unknown activation or initialiser, or a dropout rate outside [0, 1).
  explicit GRU(std::int64_t units, GRUOptions options = {});

  /// The output for x of shape (batch, steps, features), from a zero state; builds the layer on
  /// the first call. Throws InvalidArgumentError (naming GRU and the shapes) for a rank other
  /// than 3, a non-float dtype, zero steps, or, once built, an input whose features or dtype
  /// differ from what the layer was built for.
  Tensor operator()(const Tensor& x);
  /// Layer::call: the output; `training` applies the dropout masks.
  Tensor call(const Tensor& x, bool training) override { return call_with_state(x, {}, training).output; }
  /// The output and the final state h, starting from `initial_state`, of shape (batch, units),
  /// or from zeros; `training` applies the dropout masks. Throws as operator() does, and
  /// InvalidArgumentError (naming GRU and the shapes) for an initial state of another shape or
  /// dtype.
  GRUState call_with_state(const Tensor& x, std::optional<Tensor> initial_state = std::nullopt,
                           bool training = false);
  // kernel (features, 3 * units) and recurrent_kernel (units, 3 * units) have the gates z, r, h;
  // bias is (2, 3 * units) with reset_after (input and recurrent rows), (3 * units,) without.

 private:
  Tensor initial_bias(DType dtype) const override;
};

extern template class GatedRecurrent<LSTMOptions>;
extern template class GatedRecurrent<GRUOptions>;

/// An LSTM layer in a std::shared_ptr, ready for Sequential: tf::layers::lstm(32). The arguments
/// and errors are the constructor's.
inline std::shared_ptr<LSTM> lstm(std::int64_t units, LSTMOptions options = {}) {
  return std::make_shared<LSTM>(units, std::move(options));
}

/// A GRU layer in a std::shared_ptr, ready for Sequential: tf::layers::gru(32). The arguments and
/// errors are the constructor's.
inline std::shared_ptr<GRU> gru(std::int64_t units, GRUOptions options = {}) {
  return std::make_shared<GRU>(units, std::move(options));
}

}  // namespace tapeflow::layers
#pragma GCC visibility pop
