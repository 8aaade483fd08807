// tf.Module's variable collection and the Keras layers tapeflow has (tf.keras.layers), bound
// over the C++ layers: a layer's variables are the C++ layer's, trained by the same kernels.
// A layer subclassed in Python (tf.keras.layers.Layer) is a C++ Layer too, whose call() calls
// back into Python, so a C++ Sequential holds and calls it like any other.
#include <fmt/format.h>
#include <pybind11/stl.h>

#include <algorithm>
#include <array>

#include "bindings.h"
#include "layer_arguments.h"
#include "python_subclass.h"

namespace tapeflow::python {

namespace {

/// Keras's activation argument: None (no activation) or the activation's name.
layers::Activation activation_of(py::handle activation, const char* layer) {
  if (activation.is_none()) return {};
  if (!py::isinstance<py::str>(activation))
    throw py::type_error(
        fmt::format("[{}] activation must be None or the name of an activation such as "
                    "'relu', got an object of type {}",
                    layer, py::str(py::type::of(activation).attr("__name__")).cast<std::string>()));
  return layers::activation(activation.cast<std::string>());
}

/// Keras's int-or-tuple arguments of N values: an int means N copies of it.
template <std::size_t N>
std::array<std::int64_t, N> ints_of(py::handle value, const char* layer, const char* argument) {
  std::array<std::int64_t, N> out{};
  if (py::isinstance<py::int_>(value)) {
    out.fill(value.cast<std::int64_t>());
    return out;
  }
  auto values = value.cast<std::vector<std::int64_t>>();
  if (values.size() != N)
    throw InvalidArgumentError(fmt::format("[{}] {} must be an int or a {} of ints, got {} values", layer,
                                           argument, N == 1 ? "tuple of one" : "pair", values.size()));
  std::copy(values.begin(), values.end(), out.begin());
  return out;
}

/// Keras's int-or-pair arguments (kernel_size, strides, pool_size): 3 means (3, 3).
std::array<std::int64_t, 2> pair_of(py::handle value, const char* layer, const char* argument) {
  return ints_of<2>(value, layer, argument);
}

/// Keras's 1-D window arguments (kernel_size, strides, dilation_rate): an int or a tuple of one.
std::int64_t single_of(py::handle value, const char* layer, const char* argument) {
  return ints_of<1>(value, layer, argument)[0];
}

/// A (height, width) pair as Keras shows it: a tuple.
py::tuple pair_tuple(const std::array<std::int64_t, 2>& pair) { return py::make_tuple(pair[0], pair[1]); }

/// Keras's data_format argument: tapeflow's image layers are NHWC, "channels_last" (None means it).
void require_channels_last(const std::optional<std::string>& data_format, const char* layer) {
  if (data_format && *data_format != "channels_last")
    throw InvalidArgumentError(
        fmt::format("[{}] data_format '{}' is not supported: tapeflow's image layers are "
                    "NHWC (data_format 'channels_last')",
                    layer, *data_format));
}

/// The weights of Dense, Conv1D and Conv2D: built, kernel, and bias (None without one).
template <class L>
void bind_kernel_and_bias(py::class_<L, layers::Layer, std::shared_ptr<L>>& cls) {
  cls.def_property_readonly("built", &L::built)
      .def_property_readonly("kernel", &L::kernel)
      .def_property_readonly("bias", [](const L& l) { return variable_or_none(l, &L::bias); });
}

/// MaxPooling2D or AveragePooling2D (`L`), named `layer` in messages and `default_name` by default.
template <class L>
void bind_pooling(py::module_& m, const char* python_name, const char* layer, const char* default_name,
                  const char* doc) {
  py::class_<L, layers::Pool2D, std::shared_ptr<L>>(m, python_name, doc)
      .def(py::init([layer, default_name](py::handle pool_size, py::handle strides, std::string padding,
                                          const std::optional<std::string>& data_format,
                                          std::optional<std::string> name) {
             require_channels_last(data_format, layer);
             std::optional<std::array<std::int64_t, 2>> stride;
             if (!strides.is_none()) stride = pair_of(strides, layer, "strides");
             return std::make_shared<L>(pair_of(pool_size, layer, "pool_size"), stride, padding,
                                        name.value_or(default_name));
           }),
           py::arg("pool_size") = py::make_tuple(2, 2), py::arg("strides") = py::none(),
           py::arg("padding") = "valid", py::arg("data_format") = py::none(), py::arg("name") = py::none());
}

/// GlobalAveragePooling1D or GlobalAveragePooling2D (`L`), with Keras's keepdims and
/// data_format (channels last only).
template <class L>
void bind_global_pooling(py::module_& m, const char* python_name, const char* doc) {
  py::class_<L, layers::Layer, std::shared_ptr<L>>(m, python_name, doc)
      .def(py::init([python_name](const std::optional<std::string>& data_format, bool keepdims,
                                  std::optional<std::string> name) {
             require_channels_last(data_format, python_name);
             return std::make_shared<L>(
                 layers::GlobalPoolingOptions{.keepdims = keepdims, .name = name.value_or("")});
           }),
           py::arg("data_format") = py::none(), py::arg("keepdims") = false, py::arg("name") = py::none());
}

}  // namespace

bool training_of(py::handle training, const std::string& layer) {
  if (training.is_none()) return false;
  try {
    return training.cast<bool>();
  } catch (const py::cast_error&) {
    throw py::type_error(fmt::format("[{}] training must be None or a bool, got an object of type {}", layer,
                                     py::str(py::type::of(training).attr("__name__")).cast<std::string>()));
  }
}

std::optional<mixed_precision::Policy> policy_of(py::handle dtype, const char* layer) {
  if (dtype.is_none()) return std::nullopt;
  if (py::isinstance<mixed_precision::Policy>(dtype)) return dtype.cast<mixed_precision::Policy>();
  if (py::isinstance<DType>(dtype)) return mixed_precision::Policy(dtype_name(dtype.cast<DType>()));
  if (py::isinstance<py::str>(dtype)) return mixed_precision::Policy(dtype.cast<std::string>());
  throw py::type_error(
      fmt::format("[{}] dtype must be None, a policy name such as 'mixed_bfloat16', a tf.DType "
                  "or a Policy, got an object of type {}",
                  layer, py::str(py::type::of(dtype).attr("__name__")).cast<std::string>()));
}

void bind_layers(py::module_& m) {
  py::class_<Module, std::shared_ptr<Module>>(m, "_Module")
      .def_property_readonly("name", &Module::name)
      .def_property_readonly("variables", &Module::variables)
      .def_property_readonly("trainable_variables", &Module::trainable_variables)
      .def_property_readonly("non_trainable_variables", &Module::non_trainable_variables);
  py::class_<layers::Layer, Module, PythonSubclass<layers::Layer>, std::shared_ptr<layers::Layer>>(m,
                                                                                                   "_Layer")
      .def(py::init<std::string>(), py::arg("name"))
      // Keras's weights of the built-in layers (a Python subclass's come from its own walk).
      .def_property_readonly("weights", &Module::variables)
      .def_property_readonly("trainable_weights", &Module::trainable_variables)
      .def_property_readonly("non_trainable_weights", &Module::non_trainable_variables)
      .def_property("trainable", &layers::Layer::trainable, &layers::Layer::set_trainable,
                    "Whether the layer's weights train (Keras's layer.trainable); setting it sets "
                    "every layer below this one too. A frozen BatchNormalization runs in inference "
                    "mode.")
      .def(
          "get_weights",
          [](const layers::Layer& layer) {
            py::list arrays;
            for (const Tensor& t : layer.get_weights()) arrays.append(numpy_view(t).attr("copy")());
            return arrays;
          },
          "The values of the layer's weights as NumPy arrays, in the order of `weights` (Keras's "
          "get_weights).")
      .def(
          "set_weights",
          [](layers::Layer& layer, py::handle weights) {
            if (!py::isinstance<py::sequence>(weights) || py::isinstance<py::str>(weights))
              throw py::type_error(fmt::format(
                  "[set_weights] layer '{}' takes a list of arrays, one per weight, got an object of type {}",
                  layer.name(), py::str(py::type::of(weights).attr("__name__")).cast<std::string>()));
            // As Keras, each value in its variable's dtype (NumPy's float64 arrays into float32 weights).
            const std::vector<Variable> variables = layer.variables();
            std::vector<Tensor> values;
            for (py::handle item : weights.cast<py::sequence>()) {
              Tensor t = to_tensor(item, "set_weights");
              const std::size_t i = values.size();
              if (i < variables.size() && t.dtype() != variables[i].dtype() && t.dtype() != DType::Bool)
                t = cast(t, variables[i].dtype());
              values.push_back(t);
            }
            layer.set_weights(values);
          },
          py::arg("weights"),
          "Assigns a list of arrays to the layer's weights, in the order of `weights` (Keras's set_weights).")
      .def(
          "__call__",
          [](layers::Layer& layer, py::handle inputs, bool training) -> py::object {
            if (auto node = symbolic_call(layer, inputs)) return *node;
            Tensor x = to_tensor(inputs, layer.name().c_str());
            Tensor y;
            {
              py::gil_scoped_release released;
              y = layer.call(x, training);
            }
            return py::cast(y);
          },
          py::arg("inputs"), py::arg("training") = false);
  py::class_<layers::Dense, layers::Layer, std::shared_ptr<layers::Dense>> dense(
      m, "Dense", "A fully connected layer (tf.keras.layers.Dense).");
  dense
      .def(py::init([](std::int64_t units, py::handle activation, bool use_bias,
                       std::string kernel_initializer, std::optional<std::string> name, py::handle dtype) {
             layers::DenseOptions options;
             options.use_bias = use_bias;
             options.kernel_initializer = std::move(kernel_initializer);
             options.dtype_policy = policy_of(dtype, "Dense");
             if (name) options.name = *name;
             return std::make_shared<layers::Dense>(units, activation_of(activation, "Dense"), options);
           }),
           py::arg("units"), py::arg("activation") = py::none(), py::arg("use_bias") = true,
           py::arg("kernel_initializer") = "glorot_uniform", py::arg("name") = py::none(),
           py::arg("dtype") = py::none())
      .def_property_readonly("units", &layers::Dense::units);
  bind_kernel_and_bias(dense);
  py::class_<layers::Conv2D, layers::Layer, std::shared_ptr<layers::Conv2D>> conv2d(
      m, "Conv2D",
      "A 2-D convolution over NHWC images (tf.keras.layers.Conv2D); kernel (kh, kw, in, filters).");
  conv2d
      .def(py::init([](std::int64_t filters, py::handle kernel_size, py::handle strides, std::string padding,
                       const std::optional<std::string>& data_format, py::handle dilation_rate,
                       std::int64_t groups, py::handle activation, bool use_bias,
                       std::string kernel_initializer, std::optional<std::string> name, py::handle dtype) {
             require_channels_last(data_format, "Conv2D");
             layers::Conv2DOptions options;
             options.strides = pair_of(strides, "Conv2D", "strides");
             options.padding = std::move(padding);
             options.dilation_rate = pair_of(dilation_rate, "Conv2D", "dilation_rate");
             options.groups = groups;
             options.use_bias = use_bias;
             options.kernel_initializer = std::move(kernel_initializer);
             options.dtype_policy = policy_of(dtype, "Conv2D");
             if (name) options.name = *name;
             return std::make_shared<layers::Conv2D>(filters, pair_of(kernel_size, "Conv2D", "kernel_size"),
                                                     activation_of(activation, "Conv2D"), options);
           }),
           py::arg("filters"), py::arg("kernel_size"), py::arg("strides") = py::make_tuple(1, 1),
           py::arg("padding") = "valid", py::arg("data_format") = py::none(),
           py::arg("dilation_rate") = py::make_tuple(1, 1), py::arg("groups") = 1,
           py::arg("activation") = py::none(), py::arg("use_bias") = true,
           py::arg("kernel_initializer") = "glorot_uniform", py::arg("name") = py::none(),
           py::arg("dtype") = py::none())
      .def_property_readonly("filters", &layers::Conv2D::filters);
  bind_kernel_and_bias(conv2d);
  py::class_<layers::Conv1D, layers::Layer, std::shared_ptr<layers::Conv1D>> conv1d(
      m, "Conv1D",
      "A 1-D convolution over (batch, steps, channels) sequences (tf.keras.layers.Conv1D); kernel "
      "(kernel_size, in, filters); padding 'valid', 'same' or 'causal'.");
  conv1d
      .def(py::init([](std::int64_t filters, py::handle kernel_size, py::handle strides, std::string padding,
                       const std::optional<std::string>& data_format, py::handle dilation_rate,
                       std::int64_t groups, py::handle activation, bool use_bias,
                       std::string kernel_initializer, std::optional<std::string> name, py::handle dtype) {
             require_channels_last(data_format, "Conv1D");
             layers::Conv1DOptions options;
             options.strides = single_of(strides, "Conv1D", "strides");
             options.padding = std::move(padding);
             options.dilation_rate = single_of(dilation_rate, "Conv1D", "dilation_rate");
             options.groups = groups;
             options.use_bias = use_bias;
             options.kernel_initializer = std::move(kernel_initializer);
             options.dtype_policy = policy_of(dtype, "Conv1D");
             if (name) options.name = *name;
             return std::make_shared<layers::Conv1D>(filters, single_of(kernel_size, "Conv1D", "kernel_size"),
                                                     activation_of(activation, "Conv1D"), options);
           }),
           py::arg("filters"), py::arg("kernel_size"), py::arg("strides") = 1, py::arg("padding") = "valid",
           py::arg("data_format") = py::none(), py::arg("dilation_rate") = 1, py::arg("groups") = 1,
           py::arg("activation") = py::none(), py::arg("use_bias") = true,
           py::arg("kernel_initializer") = "glorot_uniform", py::arg("name") = py::none(),
           py::arg("dtype") = py::none())
      .def_property_readonly("filters", &layers::Conv1D::filters);
  bind_kernel_and_bias(conv1d);
  py::class_<layers::Embedding, layers::Layer, std::shared_ptr<layers::Embedding>>(
      m, "Embedding",
      "A trainable table of vectors looked up by integer id (tf.keras.layers.Embedding); "
      "embeddings (input_dim, output_dim).")
      .def(py::init([](std::int64_t input_dim, std::int64_t output_dim,
                       const std::string& embeddings_initializer, bool mask_zero,
                       std::optional<std::string> name, py::handle dtype) {
             if (embeddings_initializer != "uniform")
               throw InvalidArgumentError(fmt::format(
                   "[Embedding] embeddings_initializer '{}' is not supported: tapeflow's Embedding draws its "
                   "table from Keras's 'uniform' (U[-0.05, 0.05]); assign the embeddings to start elsewhere",
                   embeddings_initializer));
             layers::EmbeddingOptions options;
             options.mask_zero = mask_zero;
             options.dtype_policy = policy_of(dtype, "Embedding");
             if (name) options.name = *name;
             return std::make_shared<layers::Embedding>(input_dim, output_dim, options);
           }),
           py::arg("input_dim"), py::arg("output_dim"), py::arg("embeddings_initializer") = "uniform",
           py::arg("mask_zero") = false, py::arg("name") = py::none(), py::arg("dtype") = py::none())
      .def_property_readonly("input_dim", &layers::Embedding::input_dim)
      .def_property_readonly("output_dim", &layers::Embedding::output_dim)
      .def_property_readonly("embeddings", &layers::Embedding::embeddings)
      .def(
          "compute_mask",
          [](const layers::Embedding& layer, py::handle inputs) {
            return layer.compute_mask(to_tensor(inputs, "Embedding"));
          },
          py::arg("inputs"), "With mask_zero, inputs != 0 (False at padding); None otherwise.");
  py::class_<layers::MultiHeadAttention, layers::Layer, std::shared_ptr<layers::MultiHeadAttention>>(
      m, "MultiHeadAttention",
      "Multi-head scaled dot-product attention (tf.keras.layers.MultiHeadAttention): "
      "mha(query, value, key=None, attention_mask=None, return_attention_scores=False, training=False, "
      "use_causal_mask=False).")
      .def(py::init([](std::int64_t num_heads, std::int64_t key_dim, std::optional<std::int64_t> value_dim,
                       double dropout, bool use_bias, std::optional<std::int64_t> output_shape,
                       std::string kernel_initializer, std::optional<std::uint64_t> seed,
                       std::optional<std::string> name, py::handle dtype) {
             layers::MultiHeadAttentionOptions options{.value_dim = value_dim,
                                                       .dropout = dropout,
                                                       .use_bias = use_bias,
                                                       .output_dim = output_shape,
                                                       .kernel_initializer = std::move(kernel_initializer),
                                                       .seed = seed};
             options.dtype_policy = policy_of(dtype, "MultiHeadAttention");
             if (name) options.name = *name;
             return std::make_shared<layers::MultiHeadAttention>(num_heads, key_dim, options);
           }),
           py::arg("num_heads"), py::arg("key_dim"), py::arg("value_dim") = py::none(),
           py::arg("dropout") = 0.0, py::arg("use_bias") = true, py::arg("output_shape") = py::none(),
           py::arg("kernel_initializer") = "glorot_uniform", py::arg("seed") = py::none(),
           py::arg("name") = py::none(), py::arg("dtype") = py::none())
      .def(
          "__call__",
          [](layers::MultiHeadAttention& layer, py::handle query, py::handle value, py::handle key,
             py::handle attention_mask, bool return_attention_scores, py::handle training,
             bool use_causal_mask) -> py::object {
            if (py::isinstance<layers::KerasTensor>(query)) {  // functional API: a node of the graph
              if (return_attention_scores)
                throw py::type_error(
                    "[MultiHeadAttention] called on KerasTensors takes no return_attention_scores "
                    "in tapeflow's functional API: its node has one output");
              const auto symbolic = [](py::handle t) {
                return t.is_none() ? std::nullopt : std::optional(t.cast<layers::KerasTensor>());
              };
              return py::cast(layer.apply(query.cast<layers::KerasTensor>(),
                                          value.cast<layers::KerasTensor>(),
                                          {.key = symbolic(key),
                                           .attention_mask = symbolic(attention_mask),
                                           .use_causal_mask = use_causal_mask}));
            }
            const char* op = "MultiHeadAttention";
            const Tensor q = to_tensor(query, op), v = to_tensor(value, op);
            layers::AttentionInputs inputs{.use_causal_mask = use_causal_mask,
                                           .training = training_of(training, "MultiHeadAttention")};
            if (!key.is_none()) inputs.key = to_tensor(key, op);
            if (!attention_mask.is_none()) inputs.attention_mask = to_tensor(attention_mask, op);
            layers::AttentionOutput out;
            {
              py::gil_scoped_release released;
              out = layer.with_scores(q, v, inputs);
            }
            if (return_attention_scores) return py::make_tuple(out.output, out.scores);
            return py::cast(out.output);
          },
          py::arg("query"), py::arg("value"), py::arg("key") = py::none(),
          py::arg("attention_mask") = py::none(), py::arg("return_attention_scores") = false,
          py::arg("training") = py::none(), py::arg("use_causal_mask") = false)
      .def_property_readonly("num_heads", &layers::MultiHeadAttention::num_heads)
      .def_property_readonly("key_dim", &layers::MultiHeadAttention::key_dim)
      .def_property_readonly("value_dim", &layers::MultiHeadAttention::value_dim);
  py::class_<layers::Pool2D, layers::Layer, std::shared_ptr<layers::Pool2D>>(m, "_Pool2D")
      .def_property_readonly("pool_size", [](const layers::Pool2D& l) { return pair_tuple(l.pool_size()); })
      .def_property_readonly("strides", [](const layers::Pool2D& l) { return pair_tuple(l.strides()); });
  bind_pooling<layers::MaxPool2D>(
      m, "MaxPooling2D", "MaxPool2D", "max_pooling2d",
      "The maximum of each window of NHWC images (tf.keras.layers.MaxPooling2D).");
  bind_pooling<layers::AveragePool2D>(
      m, "AveragePooling2D", "AveragePool2D", "average_pooling2d",
      "The mean of each window of NHWC images (tf.keras.layers.AveragePooling2D).");
  py::class_<layers::Flatten, layers::Layer, std::shared_ptr<layers::Flatten>>(
      m, "Flatten", "Flattens every dimension but the batch (tf.keras.layers.Flatten).")
      .def(py::init([](std::optional<std::string> name) {
             return std::make_shared<layers::Flatten>(name.value_or("flatten"));
           }),
           py::arg("name") = py::none());
  py::class_<layers::Dropout, layers::Layer, std::shared_ptr<layers::Dropout>>(
      m, "Dropout",
      "Zeroes each element with probability `rate` and scales the rest by 1 / (1 - rate) when called "
      "with training=True; the identity otherwise (tf.keras.layers.Dropout).")
      .def(py::init([](double rate, std::optional<std::uint64_t> seed, std::optional<std::string> name) {
             return std::make_shared<layers::Dropout>(rate, seed, name.value_or("dropout"));
           }),
           py::arg("rate"), py::arg("seed") = py::none(), py::arg("name") = py::none())
      .def_property_readonly("rate", &layers::Dropout::rate);
  py::class_<layers::BatchNormalization, layers::Layer, std::shared_ptr<layers::BatchNormalization>>(
      m, "BatchNormalization",
      "Normalises each feature with the batch's statistics when training, the moving ones otherwise "
      "(tf.keras.layers.BatchNormalization).")
      .def(py::init([](std::int64_t axis, double momentum, double epsilon, bool center, bool scale,
                       std::optional<std::string> name) {
             layers::BatchNormalizationOptions options{
                 .axis = axis, .momentum = momentum, .epsilon = epsilon, .center = center, .scale = scale};
             if (name) options.name = *name;
             return std::make_shared<layers::BatchNormalization>(options);
           }),
           py::arg("axis") = -1, py::arg("momentum") = 0.99, py::arg("epsilon") = 1e-3,
           py::arg("center") = true, py::arg("scale") = true, py::arg("name") = py::none())
      .def_property_readonly("built", &layers::BatchNormalization::built)
      .def_property_readonly("gamma",
                             [](const layers::BatchNormalization& l) {
                               return variable_or_none(l, &layers::BatchNormalization::gamma);
                             })
      .def_property_readonly("beta",
                             [](const layers::BatchNormalization& l) {
                               return variable_or_none(l, &layers::BatchNormalization::beta);
                             })
      .def_property_readonly("moving_mean",
                             [](const layers::BatchNormalization& l) {
                               return variable_or_none(l, &layers::BatchNormalization::moving_mean);
                             })
      .def_property_readonly("moving_variance", [](const layers::BatchNormalization& l) {
        return variable_or_none(l, &layers::BatchNormalization::moving_variance);
      });
  py::class_<layers::LayerNormalization, layers::Layer, std::shared_ptr<layers::LayerNormalization>>(
      m, "LayerNormalization",
      "Normalises each example over its feature axes, then scales by gamma and shifts by beta "
      "(tf.keras.layers.LayerNormalization).")
      .def(py::init([](const py::object& axis, double epsilon, bool center, bool scale,
                       std::optional<std::string> name) {
             layers::LayerNormalizationOptions options{.epsilon = epsilon, .center = center, .scale = scale};
             // Keras takes one axis or a list of them.
             if (py::isinstance<py::int_>(axis))
               options.axis = Axes(axis.cast<std::int64_t>());
             else
               options.axis = Axes(axis.cast<std::vector<std::int64_t>>());
             if (name) options.name = *name;
             return std::make_shared<layers::LayerNormalization>(options);
           }),
           py::arg("axis") = -1, py::arg("epsilon") = 1e-3, py::arg("center") = true, py::arg("scale") = true,
           py::arg("name") = py::none())
      .def_property_readonly("built", &layers::LayerNormalization::built)
      .def_property_readonly("gamma",
                             [](const layers::LayerNormalization& l) {
                               return variable_or_none(l, &layers::LayerNormalization::gamma);
                             })
      .def_property_readonly("beta", [](const layers::LayerNormalization& l) {
        return variable_or_none(l, &layers::LayerNormalization::beta);
      });
  bind_global_pooling<layers::GlobalAveragePooling1D>(
      m, "GlobalAveragePooling1D",
      "The mean over the steps of (batch, steps, channels) inputs "
      "(tf.keras.layers.GlobalAveragePooling1D).");
  bind_global_pooling<layers::GlobalAveragePooling2D>(
      m, "GlobalAveragePooling2D",
      "The mean over the positions of (batch, height, width, channels) inputs "
      "(tf.keras.layers.GlobalAveragePooling2D).");
  py::class_<layers::Softmax, layers::Layer, std::shared_ptr<layers::Softmax>>(
      m, "Softmax", "The softmax of its input over one axis (tf.keras.layers.Softmax).")
      .def(py::init([](std::int64_t axis, std::optional<std::string> name) {
             return std::make_shared<layers::Softmax>(
                 layers::SoftmaxOptions{.axis = axis, .name = name.value_or("softmax")});
           }),
           py::arg("axis") = -1, py::arg("name") = py::none());
  bind_model(m);
  py::class_<layers::Sequential, layers::Model, std::shared_ptr<layers::Sequential>>(m, "_Sequential")
      .def(py::init<std::string>(), py::arg("name"))
      .def("_add", &layers::Sequential::add, py::arg("layer"))
      .def(
          "_summary",
          [](layers::Sequential& model, py::handle input_shape) {
            std::optional<Shape> shape;
            if (!input_shape.is_none()) {
              const auto dims = input_shape.cast<std::vector<std::int64_t>>();
              shape = Shape(std::span<const std::int64_t>(dims));
            }
            return model.summary(shape);
          },
          py::arg("input_shape") = py::none(), "Keras's summary table as text (Sequential::summary).");
}

}  // namespace tapeflow::python
