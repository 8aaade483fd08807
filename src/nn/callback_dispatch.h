#pragma once
// How a Model's loops call their callbacks: each hook on every callback in order, and an error a
// hook throws rethrown as its own type with the callback's name and the hook in front, so that
// "EarlyStopping.on_epoch_end: ..." says which callback failed.

#include <fmt/format.h>

#include <memory>
#include <utility>

#include "core/error_context.h"
#include "tapeflow/nn/callbacks.h"

namespace tapeflow::layers {

class CallbackDispatch {
 public:
  /// The callbacks of one loop of `model`, each told the model and the loop's parameters.
  CallbackDispatch(Model& model, CallbackList callbacks, const callbacks::LoopParams& params)
      : callbacks_(std::move(callbacks)) {
    for (const auto& c : callbacks_) {
      c->set_model(&model);
      c->set_params(params);
    }
  }

  /// Calls `hook(callback)` for every callback, in order; `name` is the hook's, for errors.
  template <class Hook>
  void each(const char* name, Hook&& hook) {
    for (const auto& c : callbacks_) {
      try {
        hook(*c);
      } catch (const Error& e) {
        rethrow_with_context(e, fmt::format("{}.{}: ", c->name(), name));
      }
    }
  }

 private:
  CallbackList callbacks_;
};

}  // namespace tapeflow::layers
