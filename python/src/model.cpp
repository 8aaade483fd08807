// Keras's training loop from Python: Model.compile/fit/evaluate/predict over the C++ Model
// (nn/model.h), and tf.keras.callbacks over nn/callbacks.h. A Python callback subclasses
// Callback and overrides the hooks it needs; each hook gets Keras's `logs` dict, and what it
// writes into the dict reaches the callbacks after it. The loop's output goes to sys.stdout.
#include <fmt/format.h>
#include <pybind11/functional.h>
#include <pybind11/iostream.h>
#include <pybind11/stl.h>

#include "bindings.h"
#include "python_subclass.h"

namespace tapeflow::python {
namespace {

using callbacks::Callback;
using layers::Logs;

py::dict to_dict(const Logs& logs) {
  py::dict d;
  for (const auto& [name, value] : logs.entries()) d[py::str(name)] = value;
  return d;
}

/// The numbers a hook left in `d`, back into `logs`.
void update_from(const py::dict& d, Logs& logs) {
  for (const auto& [key, value] : d)
    if (py::isinstance<py::float_>(value) || py::isinstance<py::int_>(value))
      logs.set(key.cast<std::string>(), value.cast<double>());
}

/// A Callback whose hooks are a Python subclass's methods.
class PyCallback : public Callback {
 public:
  std::string name() const override {
    py::gil_scoped_acquire gil;
    return py::type::of(py::cast(this)).attr("__name__").cast<std::string>();
  }
  void on_train_begin(Logs& logs) override { hook("on_train_begin", logs); }
  void on_train_end(Logs& logs) override { hook("on_train_end", logs); }
  void on_epoch_begin(std::int64_t epoch, Logs& logs) override { hook("on_epoch_begin", logs, epoch); }
  void on_epoch_end(std::int64_t epoch, Logs& logs) override { hook("on_epoch_end", logs, epoch); }
  void on_train_batch_begin(std::int64_t batch, Logs& logs) override {
    hook("on_train_batch_begin", logs, batch);
  }
  void on_train_batch_end(std::int64_t batch, Logs& logs) override {
    hook("on_train_batch_end", logs, batch);
  }
  void on_test_begin(Logs& logs) override { hook("on_test_begin", logs); }
  void on_test_end(Logs& logs) override { hook("on_test_end", logs); }
  void on_test_batch_begin(std::int64_t batch, Logs& logs) override {
    hook("on_test_batch_begin", logs, batch);
  }
  void on_test_batch_end(std::int64_t batch, Logs& logs) override { hook("on_test_batch_end", logs, batch); }
  void on_predict_begin(Logs& logs) override { hook("on_predict_begin", logs); }
  void on_predict_end(Logs& logs) override { hook("on_predict_end", logs); }
  void on_predict_batch_begin(std::int64_t batch, Logs& logs) override {
    hook("on_predict_batch_begin", logs, batch);
  }
  void on_predict_batch_end(std::int64_t batch, Logs& logs) override {
    hook("on_predict_batch_end", logs, batch);
  }

 private:
  /// Calls the Python override of `name`, if any, with the leading `args` and the logs dict.
  template <class... Args>
  void hook(const char* name, Logs& logs, Args... args) {
    py::gil_scoped_acquire gil;
    const py::function f = py::get_override(static_cast<const Callback*>(this), name);
    if (!f) return;
    py::dict d = to_dict(logs);
    f(args..., d);
    update_from(d, logs);
  }
};

callbacks::Mode mode_of(const std::string& mode, const char* callback) {
  if (mode == "auto") return callbacks::Mode::kAuto;
  if (mode == "min") return callbacks::Mode::kMin;
  if (mode == "max") return callbacks::Mode::kMax;
  throw InvalidArgumentError(
      fmt::format("{}: mode must be 'auto', 'min' or 'max', got '{}'", callback, mode));
}

/// The loss compile() gets: a Keras name (with from_logits), or a Python callable of
/// (y_true, y_pred, sample_weight) returning the batch's scalar loss.
losses::Loss loss_of(py::handle name, bool from_logits, py::handle function) {
  if (!name.is_none()) return losses::Loss(name.cast<std::string>(), {.from_logits = from_logits});
  py::object f = py::reinterpret_borrow<py::object>(function);
  const std::string label = py::hasattr(f, "__name__") ? f.attr("__name__").cast<std::string>()
                                                       : py::type::of(f).attr("__name__").cast<std::string>();
  return losses::Loss(label, [f](const Tensor& y_true, const Tensor& y_pred, const std::optional<Tensor>& w) {
    py::gil_scoped_acquire gil;
    return to_tensor(f(y_true, y_pred, w ? py::cast(*w) : py::none()), "loss");
  });
}

std::optional<Tensor> optional_tensor(py::handle value, const char* op) {
  if (value.is_none()) return std::nullopt;
  return to_tensor(value, op);
}

}  // namespace

void bind_model(py::module_& m) {
  using layers::Model;
  py::class_<Model, layers::Layer, PythonSubclass<Model>, std::shared_ptr<Model>>(m, "_Model")
      .def(py::init<std::string>(), py::arg("name"))
      .def(
          "_compile",
          [](Model& model, std::shared_ptr<optimizers::Optimizer> optimizer, py::handle loss_name,
             bool from_logits, py::handle loss_function, std::vector<std::string> metrics, bool run_eagerly) {
            model.compile(std::move(optimizer), loss_of(loss_name, from_logits, loss_function),
                          {.metrics = std::move(metrics), .run_eagerly = run_eagerly});
          },
          py::arg("optimizer"), py::arg("loss_name"), py::arg("from_logits"), py::arg("loss_function"),
          py::arg("metrics"), py::arg("run_eagerly"))
      .def(
          "_fit",
          [](Model& model, py::handle x, py::handle y, std::int64_t batch_size, std::int64_t epochs,
             int verbose, layers::CallbackList callbacks, double validation_split, py::handle validation_data,
             bool shuffle, std::map<std::int64_t, double> class_weight, py::handle sample_weight,
             std::int64_t initial_epoch, std::uint64_t seed) {
            layers::FitOptions o{.batch_size = batch_size,
                                 .epochs = epochs,
                                 .verbose = verbose,
                                 .callbacks = std::move(callbacks),
                                 .validation_split = validation_split,
                                 .shuffle = shuffle,
                                 .class_weight = std::move(class_weight),
                                 .sample_weight = optional_tensor(sample_weight, "fit"),
                                 .initial_epoch = initial_epoch,
                                 .seed = seed};
            if (!validation_data.is_none()) {
              const auto pair = validation_data.cast<py::tuple>();
              o.validation_data.emplace(to_tensor(pair[0], "fit"), to_tensor(pair[1], "fit"));
            }
            const Tensor tx = to_tensor(x, "fit"), ty = to_tensor(y, "fit");
            py::scoped_ostream_redirect to_sys_stdout;
            layers::History h;
            {
              py::gil_scoped_release released;  // Python callbacks, losses and layers take it back
              h = model.fit(tx, ty, o);
            }
            return py::make_tuple(h.epoch, h.history);
          },
          py::arg("x"), py::arg("y"), py::arg("batch_size"), py::arg("epochs"), py::arg("verbose"),
          py::arg("callbacks"), py::arg("validation_split"), py::arg("validation_data"), py::arg("shuffle"),
          py::arg("class_weight"), py::arg("sample_weight"), py::arg("initial_epoch"), py::arg("seed"))
      .def(
          "_evaluate",
          [](Model& model, py::handle x, py::handle y, std::int64_t batch_size, int verbose,
             py::handle sample_weight, layers::CallbackList callbacks) {
            const Tensor tx = to_tensor(x, "evaluate"), ty = to_tensor(y, "evaluate");
            const layers::EvaluateOptions o{.batch_size = batch_size,
                                            .verbose = verbose,
                                            .sample_weight = optional_tensor(sample_weight, "evaluate"),
                                            .callbacks = std::move(callbacks)};
            py::scoped_ostream_redirect to_sys_stdout;
            py::gil_scoped_release released;
            return model.evaluate(tx, ty, o).entries();
          },
          py::arg("x"), py::arg("y"), py::arg("batch_size"), py::arg("verbose"), py::arg("sample_weight"),
          py::arg("callbacks"))
      .def(
          "_predict",
          [](Model& model, py::handle x, std::int64_t batch_size, int verbose,
             layers::CallbackList callbacks) {
            const Tensor tx = to_tensor(x, "predict");
            py::scoped_ostream_redirect to_sys_stdout;
            return model.predict(
                tx, {.batch_size = batch_size, .verbose = verbose, .callbacks = std::move(callbacks)});
          },
          py::arg("x"), py::arg("batch_size"), py::arg("verbose"), py::arg("callbacks"))
      .def(
          "_fit_dataset",
          [](Model& model, const data::Dataset& dataset, std::int64_t epochs, int verbose,
             layers::CallbackList callbacks, py::handle validation_data, std::int64_t initial_epoch,
             std::int64_t steps_per_epoch) {
            layers::FitOptions o{.epochs = epochs,
                                 .verbose = verbose,
                                 .callbacks = std::move(callbacks),
                                 .initial_epoch = initial_epoch,
                                 .steps_per_epoch = steps_per_epoch};
            if (!validation_data.is_none()) {
              const auto pair = validation_data.cast<py::tuple>();
              o.validation_data.emplace(to_tensor(pair[0], "fit"), to_tensor(pair[1], "fit"));
            }
            py::scoped_ostream_redirect to_sys_stdout;
            layers::History h;
            {
              py::gil_scoped_release released;
              h = model.fit(dataset, o);
            }
            return py::make_tuple(h.epoch, h.history);
          },
          py::arg("dataset"), py::arg("epochs"), py::arg("verbose"), py::arg("callbacks"),
          py::arg("validation_data"), py::arg("initial_epoch"), py::arg("steps_per_epoch"))
      .def(
          "_evaluate_dataset",
          [](Model& model, const data::Dataset& dataset, int verbose, layers::CallbackList callbacks) {
            const layers::EvaluateOptions o{.verbose = verbose, .callbacks = std::move(callbacks)};
            py::scoped_ostream_redirect to_sys_stdout;
            py::gil_scoped_release released;
            return model.evaluate(dataset, o).entries();
          },
          py::arg("dataset"), py::arg("verbose"), py::arg("callbacks"))
      .def_property("stop_training", &Model::stop_training, &Model::set_stop_training,
                    "Set by a callback to end fit() after the current batch (Keras's model.stop_training).")
      .def_property_readonly("_compiled", &Model::compiled)
      .def_property_readonly("metrics_names", &Model::metrics_names, "['loss', <the metrics>].")
      .def_property_readonly(
          "optimizer", [](const Model& model) -> optimizers::Optimizer& { return model.optimizer(); },
          py::return_value_policy::reference_internal, "The optimizer given to compile().");
}

void bind_callbacks(py::module_& m) {
  py::module_ c = m.def_submodule("callbacks", "Keras's training-loop callbacks (nn/callbacks.h).");
  py::class_<Callback, PyCallback, std::shared_ptr<Callback>>(
      c, "Callback", "The base of the callbacks: override the hooks you need (keras.callbacks.Callback).")
      .def(py::init<>())
      .def("on_train_begin", &Callback::on_train_begin, py::arg("logs") = py::none())
      .def("on_train_end", &Callback::on_train_end, py::arg("logs") = py::none())
      .def("on_epoch_begin", &Callback::on_epoch_begin, py::arg("epoch"), py::arg("logs") = py::none())
      .def("on_epoch_end", &Callback::on_epoch_end, py::arg("epoch"), py::arg("logs") = py::none())
      .def("on_train_batch_begin", &Callback::on_train_batch_begin, py::arg("batch"),
           py::arg("logs") = py::none())
      .def("on_train_batch_end", &Callback::on_train_batch_end, py::arg("batch"),
           py::arg("logs") = py::none())
      .def("on_test_begin", &Callback::on_test_begin, py::arg("logs") = py::none())
      .def("on_test_end", &Callback::on_test_end, py::arg("logs") = py::none())
      .def("on_test_batch_begin", &Callback::on_test_batch_begin, py::arg("batch"),
           py::arg("logs") = py::none())
      .def("on_test_batch_end", &Callback::on_test_batch_end, py::arg("batch"), py::arg("logs") = py::none())
      .def("on_predict_begin", &Callback::on_predict_begin, py::arg("logs") = py::none())
      .def("on_predict_end", &Callback::on_predict_end, py::arg("logs") = py::none())
      .def("on_predict_batch_begin", &Callback::on_predict_batch_begin, py::arg("batch"),
           py::arg("logs") = py::none())
      .def("on_predict_batch_end", &Callback::on_predict_batch_end, py::arg("batch"),
           py::arg("logs") = py::none());

  py::class_<callbacks::EarlyStopping, Callback, std::shared_ptr<callbacks::EarlyStopping>>(
      c, "EarlyStopping",
      "Stops training when a monitored log stops improving (keras.callbacks.EarlyStopping).")
      .def(py::init([](std::string monitor, double min_delta, std::int64_t patience, int verbose,
                       const std::string& mode, std::optional<double> baseline, bool restore_best_weights,
                       std::int64_t start_from_epoch) {
             return std::make_shared<callbacks::EarlyStopping>(
                 callbacks::EarlyStoppingOptions{.monitor = std::move(monitor),
                                                 .min_delta = min_delta,
                                                 .patience = patience,
                                                 .verbose = verbose,
                                                 .mode = mode_of(mode, "EarlyStopping"),
                                                 .baseline = baseline,
                                                 .restore_best_weights = restore_best_weights,
                                                 .start_from_epoch = start_from_epoch});
           }),
           py::arg("monitor") = "val_loss", py::arg("min_delta") = 0.0, py::arg("patience") = 0,
           py::arg("verbose") = 0, py::arg("mode") = "auto", py::arg("baseline") = py::none(),
           py::arg("restore_best_weights") = false, py::arg("start_from_epoch") = 0)
      .def_property_readonly("stopped_epoch", &callbacks::EarlyStopping::stopped_epoch)
      .def_property_readonly("best_epoch", &callbacks::EarlyStopping::best_epoch);
  py::class_<callbacks::ModelCheckpoint, Callback, std::shared_ptr<callbacks::ModelCheckpoint>>(
      c, "ModelCheckpoint", "Saves the model after each epoch (keras.callbacks.ModelCheckpoint).")
      .def(py::init([](std::string filepath, std::string monitor, int verbose, bool save_best_only,
                       bool save_weights_only, const std::string& mode,
                       std::optional<double> initial_value_threshold) {
             return std::make_shared<callbacks::ModelCheckpoint>(
                 std::move(filepath),
                 callbacks::ModelCheckpointOptions{.monitor = std::move(monitor),
                                                   .verbose = verbose,
                                                   .save_best_only = save_best_only,
                                                   .mode = mode_of(mode, "ModelCheckpoint"),
                                                   .save_weights_only = save_weights_only,
                                                   .initial_value_threshold = initial_value_threshold});
           }),
           py::arg("filepath"), py::arg("monitor") = "val_loss", py::arg("verbose") = 0,
           py::arg("save_best_only") = false, py::arg("save_weights_only") = false, py::arg("mode") = "auto",
           py::arg("initial_value_threshold") = py::none())
      .def_property_readonly("best", &callbacks::ModelCheckpoint::best);
  py::class_<callbacks::ReduceLROnPlateau, Callback, std::shared_ptr<callbacks::ReduceLROnPlateau>>(
      c, "ReduceLROnPlateau", "Reduces the learning rate on a plateau (keras.callbacks.ReduceLROnPlateau).")
      .def(py::init([](std::string monitor, double factor, std::int64_t patience, int verbose,
                       const std::string& mode, double min_delta, std::int64_t cooldown, double min_lr) {
             return std::make_shared<callbacks::ReduceLROnPlateau>(
                 callbacks::ReduceLROnPlateauOptions{.monitor = std::move(monitor),
                                                     .factor = factor,
                                                     .patience = patience,
                                                     .verbose = verbose,
                                                     .mode = mode_of(mode, "ReduceLROnPlateau"),
                                                     .min_delta = min_delta,
                                                     .cooldown = cooldown,
                                                     .min_lr = min_lr});
           }),
           py::arg("monitor") = "val_loss", py::arg("factor") = 0.1, py::arg("patience") = 10,
           py::arg("verbose") = 0, py::arg("mode") = "auto", py::arg("min_delta") = 1e-4,
           py::arg("cooldown") = 0, py::arg("min_lr") = 0.0);
  py::class_<callbacks::CSVLogger, Callback, std::shared_ptr<callbacks::CSVLogger>>(
      c, "CSVLogger", "Writes each epoch's logs to a CSV file (keras.callbacks.CSVLogger).")
      .def(py::init<std::string, std::string, bool>(), py::arg("filename"), py::arg("separator") = ",",
           py::arg("append") = false);
  py::class_<callbacks::LearningRateScheduler, Callback, std::shared_ptr<callbacks::LearningRateScheduler>>(
      c, "LearningRateScheduler",
      "Sets the learning rate at each epoch from schedule(epoch, lr) "
      "(keras.callbacks.LearningRateScheduler).")
      .def(py::init([](py::function schedule, int verbose) {
             return std::make_shared<callbacks::LearningRateScheduler>(
                 [schedule](std::int64_t epoch, double rate) {
                   py::gil_scoped_acquire gil;
                   return schedule(epoch, rate).cast<double>();
                 },
                 verbose);
           }),
           py::arg("schedule"), py::arg("verbose") = 0);
  py::class_<callbacks::TerminateOnNaN, Callback, std::shared_ptr<callbacks::TerminateOnNaN>>(
      c, "TerminateOnNaN", "Stops training at a NaN or infinite loss (keras.callbacks.TerminateOnNaN).")
      .def(py::init<>());
}

}  // namespace tapeflow::python
