#pragma once
/// \file module.h
/// Module: a named collection of variables and sub-modules, like TensorFlow's tf.Module.
///
///   class TwoLayers : public tf::Module {
///    public:
///     TwoLayers() : tf::Module("two_layers") {
///       track(hidden_);             // registration order is collection order
///       track(out_);
///       scale_ = track(tf::Variable(1.0f, {.name = "scale"}));
///     }
///     tf::Tensor operator()(const tf::Tensor& x) { return out_(hidden_(x)) * scale_; }
///
///    private:
///     tf::layers::Dense hidden_{16, "relu"}, out_{1};
///     tf::Variable scale_{0.0f};
///   };
///
///   TwoLayers model;
///   tf::GradientTape tape;
///   tf::Tensor loss = tf::reduce_sum(model(x));
///   auto grads = tape.gradient(loss, model.trainable_variables());
///
/// NOTE: C++ has no attribute scanning, so a module registers what it owns with track().
/// Python's tf.Module finds variables by walking the object's attributes; here the order of the
/// track() calls is the order trainable_variables() and variables() return them in.
///
/// A sub-module is registered by reference: it must outlive the module that tracks it (a data
/// member does). For the same reason a Module can be neither copied nor moved.

#include <string>
#include <variant>
#include <vector>

#include "tapeflow/variable.h"

#pragma GCC visibility push(default)  // the public API: exported from a shared libtapeflow
namespace tapeflow {

/// A named collection of variables and sub-modules (tf.Module): subclass it and register what
/// the subclass owns with track() (see the example above). Layers and models are Modules.
class Module {
 public:
  /// An empty module named `name`.
  explicit Module(std::string name = "module");
  virtual ~Module() = default;
  Module(const Module&) = delete;
  Module& operator=(const Module&) = delete;
  Module(Module&&) = delete;
  Module& operator=(Module&&) = delete;

  /// The name given at construction (TensorFlow's `Module.name`).
  const std::string& name() const { return name_; }

  /// Every variable of this module and, recursively, of its tracked sub-modules, in registration
  /// order (depth first), each variable once even if it is tracked in several places.
  std::vector<Variable> variables() const;
  /// Whether this module's variables train: always for a Module; a layer's `trainable` flag
  /// (Keras's layer.trainable, nn/layer.h) turns it off.
  virtual bool trainable() const { return true; }
  /// The trainable ones among variables(), in the same order (tf.Module.trainable_variables,
  /// Keras's trainable_weights): none when this module is not trainable(), and none that a
  /// sub-module leaves out of its own trainable_variables() (a frozen layer's, also when another
  /// path reaches it).
  virtual std::vector<Variable> trainable_variables() const;
  /// The others among variables(), in the same order (Keras's non_trainable_weights).
  std::vector<Variable> non_trainable_variables() const;
  /// Every module tracked below this one (not this one), depth first, each once
  /// (tf.Module.submodules).
  std::vector<const Module*> submodules() const;

 protected:
  /// Registers a variable this module owns; returns it (a handle to the same variable).
  Variable track(Variable variable);
  /// Variables this module owns that track() was not told of, listed after the tracked ones (each
  /// once): a layer subclassed in Python gives the weights Python holds. None by default.
  virtual std::vector<Variable> untracked_variables() const { return {}; }
  /// Registers a sub-module; returns it. It must outlive this module (e.g. be a data member).
  template <class M>
  requires std::is_base_of_v<Module, M> M& track(M& module) {
    track_module(module);
    return module;
  }

 private:
  void track_module(Module& module);
  void collect(std::vector<Variable>& out, std::vector<const Module*>& seen_modules,
               std::vector<TensorId>& seen_variables) const;

  std::string name_;
  /// What track() registered, in order: variables and sub-modules interleaved.
  std::vector<std::variant<Variable, const Module*>> tracked_;
};

}  // namespace tapeflow
#pragma GCC visibility pop
