// tf.keras.layers.LSTM and tf.keras.layers.GRU, bound over the C++ recurrent layers
// (nn/recurrent.h) with Keras's argument names. As in Keras, calling a layer created with
// return_state=True returns a list: [output, h, c] (LSTM) or [output, h] (GRU); `initial_state`
// is a list of those states; training=True applies dropout and recurrent_dropout. In a
// Sequential the C++ call() runs, which returns the output alone.
#include <fmt/format.h>
#include <pybind11/stl.h>

#include "bindings.h"
#include "layer_arguments.h"

namespace tapeflow::python {

namespace {

/// Keras's activation arguments: None (no activation, "linear") or the activation's name.
std::string activation_name(py::handle activation, const char* layer, const char* argument) {
  if (activation.is_none()) return "linear";
  if (!py::isinstance<py::str>(activation))
    throw py::type_error(
        fmt::format("[{}] {} must be None or the name of an activation such as 'tanh', got an "
                    "object of type {}",
                    layer, argument, py::str(py::type::of(activation).attr("__name__")).cast<std::string>()));
  return activation.cast<std::string>();
}

/// Keras's initial_state: a list or tuple of `count` tensors (`names` says which); for a single
/// state, the tensor itself is accepted too.
std::vector<Tensor> states_of(py::handle initial_state, std::size_t count, const char* layer,
                              const char* names) {
  std::vector<Tensor> states;
  if (py::isinstance<py::list>(initial_state) || py::isinstance<py::tuple>(initial_state)) {
    for (py::handle state : initial_state) states.push_back(to_tensor(state, layer));
  } else if (count == 1) {
    states.push_back(to_tensor(initial_state, layer));
  }
  if (states.size() != count)
    throw InvalidArgumentError(fmt::format("[{}] initial_state must be a list of {} tensor(s) {}, got {}",
                                           layer, count, names,
                                           py::str(py::repr(initial_state)).cast<std::string>()));
  return states;
}

/// Keras's arguments LSTM and GRU share, set on `options` (LSTMOptions or GRUOptions); `layer`
/// names the layer in errors.
template <class Options>
void set_shared_options(Options& options, const char* layer, py::handle activation,
                        py::handle recurrent_activation, bool use_bias, std::string kernel_initializer,
                        std::string recurrent_initializer, double dropout, double recurrent_dropout,
                        std::optional<std::uint64_t> seed, bool return_sequences, bool return_state,
                        bool go_backwards, std::optional<std::string> name, py::handle dtype) {
  options.activation = activation_name(activation, layer, "activation");
  options.recurrent_activation = activation_name(recurrent_activation, layer, "recurrent_activation");
  options.use_bias = use_bias;
  options.kernel_initializer = std::move(kernel_initializer);
  options.recurrent_initializer = std::move(recurrent_initializer);
  options.dropout = dropout;
  options.recurrent_dropout = recurrent_dropout;
  options.seed = seed;
  options.return_sequences = return_sequences;
  options.return_state = return_state;
  options.go_backwards = go_backwards;
  options.dtype_policy = policy_of(dtype, layer);
  if (name) options.name = *name;
}

/// The weights and flags LSTM and GRU share.
template <class L>
void bind_recurrent_common(py::class_<L, layers::Layer, std::shared_ptr<L>>& cls) {
  cls.def_property_readonly("units", &L::units)
      .def_property_readonly("return_sequences", [](const L& l) { return l.options().return_sequences; })
      .def_property_readonly("return_state", [](const L& l) { return l.options().return_state; })
      .def_property_readonly("go_backwards", [](const L& l) { return l.options().go_backwards; })
      .def_property_readonly("dropout", [](const L& l) { return l.options().dropout; })
      .def_property_readonly("recurrent_dropout", [](const L& l) { return l.options().recurrent_dropout; })
      .def_property_readonly("built", &L::built)
      .def_property_readonly("kernel", &L::kernel)
      .def_property_readonly("recurrent_kernel", &L::recurrent_kernel)
      .def_property_readonly("bias", [](const L& l) { return variable_or_none<L>(l, &L::bias); });
}

}  // namespace

void bind_recurrent_layers(py::module_& m) {
  py::class_<layers::LSTM, layers::Layer, std::shared_ptr<layers::LSTM>> lstm(
      m, "LSTM",
      "Long short-term memory over (batch, steps, features) (tf.keras.layers.LSTM); kernel "
      "(features, 4 units), recurrent_kernel (units, 4 units), bias (4 units,), gates i, f, c, o.");
  lstm.def(py::init([](std::int64_t units, py::handle activation, py::handle recurrent_activation,
                       bool use_bias, std::string kernel_initializer, std::string recurrent_initializer,
                       bool unit_forget_bias, double dropout, double recurrent_dropout,
                       std::optional<std::uint64_t> seed, bool return_sequences, bool return_state,
                       bool go_backwards, std::optional<std::string> name, py::handle dtype) {
             layers::LSTMOptions options;
             set_shared_options(options, "LSTM", activation, recurrent_activation, use_bias,
                                std::move(kernel_initializer), std::move(recurrent_initializer), dropout,
                                recurrent_dropout, seed, return_sequences, return_state, go_backwards, name,
                                dtype);
             options.unit_forget_bias = unit_forget_bias;
             return std::make_shared<layers::LSTM>(units, options);
           }),
           py::arg("units"), py::arg("activation") = "tanh", py::arg("recurrent_activation") = "sigmoid",
           py::arg("use_bias") = true, py::arg("kernel_initializer") = "glorot_uniform",
           py::arg("recurrent_initializer") = "orthogonal", py::kw_only(), py::arg("unit_forget_bias") = true,
           py::arg("dropout") = 0.0, py::arg("recurrent_dropout") = 0.0, py::arg("seed") = py::none(),
           py::arg("return_sequences") = false, py::arg("return_state") = false,
           py::arg("go_backwards") = false, py::arg("name") = py::none(), py::arg("dtype") = py::none())
      .def(
          "__call__",
          [](layers::LSTM& layer, py::handle inputs, py::handle initial_state,
             py::handle training) -> py::object {
            const bool plain = initial_state.is_none() && !layer.options().return_state;
            if (auto node = symbolic_call(layer, inputs, plain ? nullptr : "initial_state or return_state"))
              return *node;
            const Tensor x = to_tensor(inputs, "LSTM");
            const bool is_training = training_of(training, "LSTM");
            std::optional<std::pair<Tensor, Tensor>> initial;
            if (!initial_state.is_none()) {
              const std::vector<Tensor> states = states_of(initial_state, 2, "LSTM", "[h, c]");
              initial = std::pair{states[0], states[1]};
            }
            layers::LSTMState result;
            {
              py::gil_scoped_release released;
              result = layer.call_with_state(x, initial, is_training);
            }
            if (layer.options().return_state)
              return py::cast(std::vector<Tensor>{result.output, result.h, result.c});
            return py::cast(result.output);
          },
          py::arg("inputs"), py::arg("initial_state") = py::none(), py::arg("training") = py::none());
  bind_recurrent_common(lstm);

  py::class_<layers::GRU, layers::Layer, std::shared_ptr<layers::GRU>> gru(
      m, "GRU",
      "Gated recurrent unit over (batch, steps, features) (tf.keras.layers.GRU); kernel "
      "(features, 3 units), recurrent_kernel (units, 3 units), gates z, r, h; bias (2, 3 units) "
      "with reset_after=True (input and recurrent rows), (3 units,) without.");
  gru.def(py::init([](std::int64_t units, py::handle activation, py::handle recurrent_activation,
                      bool use_bias, std::string kernel_initializer, std::string recurrent_initializer,
                      double dropout, double recurrent_dropout, std::optional<std::uint64_t> seed,
                      bool return_sequences, bool return_state, bool go_backwards, bool reset_after,
                      std::optional<std::string> name, py::handle dtype) {
            layers::GRUOptions options;
            set_shared_options(options, "GRU", activation, recurrent_activation, use_bias,
                               std::move(kernel_initializer), std::move(recurrent_initializer), dropout,
                               recurrent_dropout, seed, return_sequences, return_state, go_backwards, name,
                               dtype);
            options.reset_after = reset_after;
            return std::make_shared<layers::GRU>(units, options);
          }),
          py::arg("units"), py::arg("activation") = "tanh", py::arg("recurrent_activation") = "sigmoid",
          py::arg("use_bias") = true, py::arg("kernel_initializer") = "glorot_uniform",
          py::arg("recurrent_initializer") = "orthogonal", py::kw_only(), py::arg("dropout") = 0.0,
          py::arg("recurrent_dropout") = 0.0, py::arg("seed") = py::none(),
          py::arg("return_sequences") = false, py::arg("return_state") = false,
          py::arg("go_backwards") = false, py::arg("reset_after") = true, py::arg("name") = py::none(),
          py::arg("dtype") = py::none())
      .def(
          "__call__",
          [](layers::GRU& layer, py::handle inputs, py::handle initial_state,
             py::handle training) -> py::object {
            const bool plain = initial_state.is_none() && !layer.options().return_state;
            if (auto node = symbolic_call(layer, inputs, plain ? nullptr : "initial_state or return_state"))
              return *node;
            const Tensor x = to_tensor(inputs, "GRU");
            const bool is_training = training_of(training, "GRU");
            std::optional<Tensor> initial;
            if (!initial_state.is_none()) initial = states_of(initial_state, 1, "GRU", "[h]")[0];
            layers::GRUState result;
            {
              py::gil_scoped_release released;
              result = layer.call_with_state(x, initial, is_training);
            }
            if (layer.options().return_state) return py::cast(std::vector<Tensor>{result.output, result.h});
            return py::cast(result.output);
          },
          py::arg("inputs"), py::arg("initial_state") = py::none(), py::arg("training") = py::none())
      .def_property_readonly("reset_after", [](const layers::GRU& l) { return l.options().reset_after; });
  bind_recurrent_common(gru);
}

}  // namespace tapeflow::python
