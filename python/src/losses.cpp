// tf.keras.losses and tf.keras.metrics over tapeflow's C++ losses and metrics. The loss
// functions are bound here with their reduction (the mean over the batch); python/tapeflow/keras/
// losses.py wraps them in Keras's loss classes.
#include <fmt/format.h>
#include <pybind11/stl.h>

#include "bindings.h"

namespace tapeflow::python {

namespace {

/// What y_true holds: values compared with y_pred (Python numbers and lists take y_pred's dtype),
/// or class ids (they stay integers).
enum class Labels { kValues, kClassIds };

/// The (y_true, y_pred) of a loss or metric as Keras converts them: y_pred first, then y_true.
std::pair<Tensor, Tensor> targets_and_predictions(py::handle y_true, py::handle y_pred, const char* op,
                                                  Labels labels_hold = Labels::kValues) {
  Tensor pred = to_tensor(y_pred, op);
  Tensor labels = labels_hold == Labels::kClassIds ? to_tensor(y_true, op)
                                                   : to_tensor(y_true, std::nullopt, pred.dtype(), op);
  return {std::move(labels), std::move(pred)};
}

/// Keras's sample_weight argument: None, or anything convertible to a tensor.
std::optional<Tensor> weight_of(py::handle sample_weight, const char* op) {
  if (sample_weight.is_none()) return std::nullopt;
  return to_tensor(sample_weight, op);
}

/// A loss taking (y_true, y_pred, from_logits, sample_weight), bound as `name`.
template <Tensor (*loss)(const Tensor&, const Tensor&, bool, const std::optional<Tensor>&)>
void bind_logits_loss(py::module_& m, const char* name, const char* op,
                      Labels labels_hold = Labels::kValues) {
  m.def(
      name,
      [op, labels_hold](py::handle y_true, py::handle y_pred, bool from_logits, py::handle sample_weight) {
        auto [labels, pred] = targets_and_predictions(y_true, y_pred, op, labels_hold);
        return loss(labels, pred, from_logits, weight_of(sample_weight, op));
      },
      py::arg("y_true"), py::arg("y_pred"), py::arg("from_logits") = false,
      py::arg("sample_weight") = py::none());
}

/// The Tensor Keras's Metric.result() returns: a float32 scalar.
Tensor result_tensor(double value) { return constant(value, DType::Float32); }

/// A metric with update_state(y_true, y_pred): `cls` gets update_state, result, reset_state,
/// __call__ (update, then the result) and name.
template <class M, class... Extra>
void bind_matching_metric(py::class_<M, Extra...>& cls, Labels labels_hold = Labels::kValues) {
  cls.def(
         "update_state",
         [labels_hold](M& metric, py::handle y_true, py::handle y_pred, py::handle sample_weight) {
           auto [labels, pred] = targets_and_predictions(y_true, y_pred, metric.name().c_str(), labels_hold);
           metric.update_state(labels, pred, weight_of(sample_weight, metric.name().c_str()));
         },
         py::arg("y_true"), py::arg("y_pred"), py::arg("sample_weight") = py::none(),
         "Counts the matches of one batch, each with its sample weight.")
      .def(
          "__call__",
          [labels_hold](M& metric, py::handle y_true, py::handle y_pred, py::handle sample_weight) {
            auto [labels, pred] = targets_and_predictions(y_true, y_pred, metric.name().c_str(), labels_hold);
            metric.update_state(labels, pred, weight_of(sample_weight, metric.name().c_str()));
            return result_tensor(metric.result());
          },
          py::arg("y_true"), py::arg("y_pred"), py::arg("sample_weight") = py::none(),
          "update_state, then result().")
      .def(
          "result", [](const M& metric) { return result_tensor(metric.result()); },
          "The fraction of matches so far, a float32 scalar (0 before any update).")
      .def("reset_state", &M::reset_state, "Forgets everything counted.")
      .def_property_readonly("name", &M::name);
}

/// Mean.update_state(values, sample_weight=None).
void update_mean(metrics::Mean& metric, py::handle values, py::handle sample_weight) {
  metric.update_state(to_tensor(values, metric.name().c_str()),
                      weight_of(sample_weight, metric.name().c_str()));
}

void bind_metrics(py::module_& m) {
  py::class_<metrics::Mean>(m, "Mean", "The (weighted) mean of every value seen (tf.keras.metrics.Mean).")
      .def(py::init<std::string>(), py::arg("name") = "mean")
      .def("update_state", &update_mean, py::arg("values"), py::arg("sample_weight") = py::none())
      .def(
          "__call__",
          [](metrics::Mean& metric, py::handle values, py::handle sample_weight) {
            update_mean(metric, values, sample_weight);
            return result_tensor(metric.result());
          },
          py::arg("values"), py::arg("sample_weight") = py::none())
      .def(
          "result", [](const metrics::Mean& metric) { return result_tensor(metric.result()); },
          "total / count, a float32 scalar (0 before any update).")
      .def("reset_state", &metrics::Mean::reset_state)
      .def_property_readonly("name", &metrics::Mean::name)
      .def_property_readonly("total", &metrics::Mean::total)
      .def_property_readonly("count", &metrics::Mean::count);
  py::class_<metrics::Accuracy> accuracy(m, "Accuracy",
                                         "How often y_pred equals y_true (tf.keras.metrics.Accuracy).");
  accuracy.def(py::init<std::string>(), py::arg("name") = "accuracy");
  bind_matching_metric(accuracy);
  py::class_<metrics::BinaryAccuracy> binary(
      m, "BinaryAccuracy", "How often y_pred > threshold equals y_true (tf.keras.metrics.BinaryAccuracy).");
  binary.def(py::init([](std::string name, double threshold) {
               return metrics::BinaryAccuracy(threshold, std::move(name));
             }),
             py::arg("name") = "binary_accuracy", py::arg("threshold") = 0.5);
  bind_matching_metric(binary);
  py::class_<metrics::CategoricalAccuracy> categorical(
      m, "CategoricalAccuracy", "How often the argmaxes agree (tf.keras.metrics.CategoricalAccuracy).");
  categorical.def(py::init<std::string>(), py::arg("name") = "categorical_accuracy");
  bind_matching_metric(categorical);
  py::class_<metrics::SparseCategoricalAccuracy> sparse(
      m, "SparseCategoricalAccuracy",
      "How often argmax(y_pred) equals the integer label (tf.keras.metrics.SparseCategoricalAccuracy).");
  sparse.def(py::init<std::string>(), py::arg("name") = "sparse_categorical_accuracy");
  bind_matching_metric(sparse, Labels::kClassIds);
}

}  // namespace

void bind_losses(py::module_& m) {
  py::module_ loss_functions =
      m.def_submodule("losses", "tapeflow's loss functions, reduced to the mean over the batch.");
  bind_logits_loss<losses::categorical_crossentropy>(loss_functions, "categorical_crossentropy",
                                                     "CategoricalCrossentropy");
  bind_logits_loss<losses::sparse_categorical_crossentropy>(
      loss_functions, "sparse_categorical_crossentropy", "SparseCategoricalCrossentropy", Labels::kClassIds);
  bind_logits_loss<losses::binary_crossentropy>(loss_functions, "binary_crossentropy", "BinaryCrossentropy");
  loss_functions.def(
      "mean_squared_error",
      [](py::handle y_true, py::handle y_pred, py::handle sample_weight) {
        auto [labels, pred] = targets_and_predictions(y_true, y_pred, "MeanSquaredError");
        return losses::mean_squared_error(labels, pred, weight_of(sample_weight, "MeanSquaredError"));
      },
      py::arg("y_true"), py::arg("y_pred"), py::arg("sample_weight") = py::none());
  py::module_ metric_classes = m.def_submodule("metrics", "tf.keras.metrics over tapeflow's C++ metrics.");
  bind_metrics(metric_classes);
}

}  // namespace tapeflow::python
