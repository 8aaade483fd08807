// tf.keras.optimizers (SGD, Adam, AdamW, RMSprop, Adagrad, Adamax, Nadam, Lion and the
// learning-rate schedules) and
// tf.keras.mixed_precision (Policy, the global policy, LossScaleOptimizer), bound over the C++
// optimizers: every update is the C++ optimizer's, run with the GIL released.
#include <fmt/format.h>
#include <pybind11/stl.h>

#include "bindings.h"

namespace tapeflow::python {

namespace {

namespace sched = optimizers::schedules;

std::string type_name(py::handle value) { return py::str(py::type::of(value).attr("__name__")); }

/// Keras's learning_rate argument: a number or a schedule.
optimizers::LearningRate learning_rate_of(py::handle value, const char* optimizer) {
  if (py::isinstance<sched::LearningRateSchedule>(value))
    return value.cast<std::shared_ptr<sched::LearningRateSchedule>>();
  if (py::isinstance<py::float_>(value) || py::isinstance<py::int_>(value)) return value.cast<double>();
  throw py::type_error(
      fmt::format("[{}] learning_rate must be a number or a "
                  "tf.keras.optimizers.schedules.LearningRateSchedule, got an object of type {}",
                  optimizer, type_name(value)));
}

/// Keras's keyword arguments every optimizer takes: weight_decay, clipnorm, clipvalue,
/// global_clipnorm (each a number or None). Another keyword is a TypeError naming the optimizer.
optimizers::BaseOptions base_of(const py::kwargs& kwargs, const char* optimizer) {
  optimizers::BaseOptions base;
  for (auto [key, value] : kwargs) {
    const auto name = key.cast<std::string>();
    auto number = value.is_none() ? std::nullopt : std::optional<double>(value.cast<double>());
    if (name == "weight_decay") {
      base.weight_decay = number;
    } else if (name == "clipnorm") {
      base.clipnorm = number;
    } else if (name == "clipvalue") {
      base.clipvalue = number;
    } else if (name == "global_clipnorm") {
      base.global_clipnorm = number;
    } else {
      throw py::type_error(fmt::format("[{}] unexpected keyword argument '{}'", optimizer, name));
    }
  }
  return base;
}

/// The options of Adam, AdamW, Adamax and Nadam from Keras's arguments.
optimizers::AdamOptions adam_options(double beta_1, double beta_2, double epsilon, bool amsgrad,
                                     optimizers::BaseOptions base) {
  return {.beta_1 = beta_1, .beta_2 = beta_2, .epsilon = epsilon, .amsgrad = amsgrad, .base = base};
}

/// The variables of a var_list: a list or tuple of tf.Variables, or a callable returning one.
std::vector<Variable> variables_of(py::handle var_list, const char* op) {
  py::object list =
      PyCallable_Check(var_list.ptr()) ? var_list() : py::reinterpret_borrow<py::object>(var_list);
  std::vector<Variable> vars;
  for (py::handle item : list) {
    if (!py::isinstance<Variable>(item))
      throw py::type_error(
          fmt::format("[{}] var_list must hold tf.Variables, got an object of type {} at index {}", op,
                      type_name(item), vars.size()));
    vars.push_back(item.cast<Variable>());
  }
  return vars;
}

/// The pairs of apply_gradients(zip(grads, vars)), split; a None gradient is a missing one.
std::pair<std::vector<Gradient>, std::vector<Variable>> split_pairs(py::handle grads_and_vars,
                                                                    const char* op) {
  std::vector<Gradient> grads;
  std::vector<Variable> vars;
  for (py::handle pair : grads_and_vars) {
    auto items = py::reinterpret_borrow<py::sequence>(pair);
    if (!py::isinstance<py::sequence>(pair) || py::len(items) != 2)
      throw py::type_error(
          fmt::format("[{}.apply_gradients] expects (gradient, variable) pairs, as "
                      "zip(grads, vars) gives, got an object of type {} at index {}",
                      op, type_name(pair), vars.size()));
    if (!py::isinstance<Variable>(items[1]))
      throw py::type_error(
          fmt::format("[{}.apply_gradients] the second item of each pair must be a "
                      "tf.Variable, got an object of type {} at index {}",
                      op, type_name(items[1]), vars.size()));
    vars.push_back(items[1].cast<Variable>());
    if (items[0].is_none()) {
      grads.emplace_back(std::nullopt);
    } else if (py::isinstance<IndexedSlices>(items[0])) {
      grads.emplace_back(items[0].cast<IndexedSlices>());  // rows stay rows
    } else {
      grads.emplace_back(to_tensor(items[0], op));
    }
  }
  return {std::move(grads), std::move(vars)};
}

/// apply_gradients of an optimizer (or LossScaleOptimizer) `opt`, with the GIL released.
template <class O>
void apply_pairs(O& opt, py::handle grads_and_vars, const char* op) {
  auto [grads, vars] = split_pairs(grads_and_vars, op);
  py::gil_scoped_release released;
  opt.apply_gradients(grads, vars);
}

/// Keras's minimize(loss, var_list, tape=None): with a tape (a tf.GradientTape), `loss` is the
/// tensor it recorded; without one, `loss` is a callable run under a new tape. Either way the step
/// is the C++ minimize, which updates each variable as soon as its gradient is final.
template <class O>
void minimize(O& opt, py::handle loss, py::handle var_list, py::handle tape, const char* op) {
  std::optional<GradientTape> own_tape;
  GradientTape* recorded = nullptr;
  Tensor value;
  if (!tape.is_none()) {
    recorded = &tape_of(tape.attr("_tape"), "minimize");
    value = to_tensor(loss, op);
  } else {
    if (!PyCallable_Check(loss.ptr()))
      throw py::type_error(
          fmt::format("[{}.minimize] without a tape, loss must be a callable returning the "
                      "loss (e.g. a lambda), got an object of type {}",
                      op, type_name(loss)));
    recorded = &own_tape.emplace();
    value = to_tensor(loss(), op);
  }
  std::vector<Variable> vars = variables_of(var_list, op);
  py::gil_scoped_release released;
  opt.minimize(value, vars, *recorded);
}

/// The state as Keras lists it (optimizer.variables): the Variables, names dropped.
std::vector<Variable> state_of(const std::vector<std::pair<std::string, Variable>>& named) {
  std::vector<Variable> vars;
  for (const auto& [name, var] : named) vars.push_back(var);
  return vars;
}

void bind_schedules(py::module_& m) {
  py::class_<sched::LearningRateSchedule, std::shared_ptr<sched::LearningRateSchedule>>(
      m, "LearningRateSchedule", "The base of the learning-rate schedules (keras.optimizers.schedules).")
      .def(
          "__call__",
          [](const sched::LearningRateSchedule& s, py::handle step) {
            return s(to_tensor(step, "schedule"));
          },
          py::arg("step"), "The learning rate after `step` updates, a float64 scalar tensor.");
  py::class_<sched::ExponentialDecay, sched::LearningRateSchedule, std::shared_ptr<sched::ExponentialDecay>>(
      m, "ExponentialDecay", "initial_learning_rate * decay_rate ** (step / decay_steps).")
      .def(py::init<double, std::int64_t, double, bool>(), py::arg("initial_learning_rate"),
           py::arg("decay_steps"), py::arg("decay_rate"), py::arg("staircase") = false);
  py::class_<sched::PiecewiseConstantDecay, sched::LearningRateSchedule,
             std::shared_ptr<sched::PiecewiseConstantDecay>>(
      m, "PiecewiseConstantDecay", "values[i] while boundaries[i-1] < step <= boundaries[i].")
      .def(py::init<std::vector<std::int64_t>, std::vector<double>>(), py::arg("boundaries"),
           py::arg("values"));
  py::class_<sched::CosineDecay, sched::LearningRateSchedule, std::shared_ptr<sched::CosineDecay>>(
      m, "CosineDecay",
      "Cosine decay from initial_learning_rate to alpha times it, after an optional warm-up.")
      .def(py::init([](double initial_learning_rate, std::int64_t decay_steps, double alpha,
                       std::optional<double> warmup_target, std::int64_t warmup_steps) {
             return std::make_shared<sched::CosineDecay>(
                 initial_learning_rate, decay_steps,
                 sched::CosineDecayOptions{
                     .alpha = alpha, .warmup_steps = warmup_steps, .warmup_target = warmup_target});
           }),
           py::arg("initial_learning_rate"), py::arg("decay_steps"), py::arg("alpha") = 0.0,
           py::arg("warmup_target") = py::none(), py::arg("warmup_steps") = 0);
  py::class_<sched::PolynomialDecay, sched::LearningRateSchedule, std::shared_ptr<sched::PolynomialDecay>>(
      m, "PolynomialDecay", "(initial - end) * (1 - step / decay_steps) ** power + end, optionally cycling.")
      .def(py::init([](double initial_learning_rate, std::int64_t decay_steps, double end_learning_rate,
                       double power, bool cycle) {
             return std::make_shared<sched::PolynomialDecay>(
                 initial_learning_rate, decay_steps,
                 sched::PolynomialDecayOptions{
                     .end_learning_rate = end_learning_rate, .power = power, .cycle = cycle});
           }),
           py::arg("initial_learning_rate"), py::arg("decay_steps"), py::arg("end_learning_rate") = 0.0001,
           py::arg("power") = 1.0, py::arg("cycle") = false);
  py::class_<sched::InverseTimeDecay, sched::LearningRateSchedule, std::shared_ptr<sched::InverseTimeDecay>>(
      m, "InverseTimeDecay", "initial_learning_rate / (1 + decay_rate * step / decay_steps).")
      .def(py::init<double, std::int64_t, double, bool>(), py::arg("initial_learning_rate"),
           py::arg("decay_steps"), py::arg("decay_rate"), py::arg("staircase") = false);
}

void bind_optimizer_classes(py::module_& m) {
  using optimizers::Optimizer;
  py::class_<Optimizer, std::shared_ptr<Optimizer>>(
      m, "Optimizer", "The base of the optimizers (tf.keras.optimizers.Optimizer).")
      .def(
          "apply_gradients",
          [](Optimizer& opt, py::handle grads_and_vars) {
            apply_pairs(opt, grads_and_vars, opt.name().c_str());
            return opt.iterations();
          },
          py::arg("grads_and_vars"),
          "Updates each variable from its gradient: apply_gradients(zip(grads, vars)). Returns iterations.")
      .def(
          "minimize",
          [](Optimizer& opt, py::handle loss, py::handle var_list, py::handle tape) {
            minimize(opt, loss, var_list, tape, opt.name().c_str());
            return opt.iterations();
          },
          py::arg("loss"), py::arg("var_list"), py::arg("tape") = py::none(),
          "One step on `loss` (a callable, or a tensor recorded by `tape`) for var_list. Returns iterations.")
      .def("build", &Optimizer::build, py::arg("var_list"), "Creates the slots of var_list now.")
      .def(
          "exclude_from_weight_decay",
          [](Optimizer& opt, py::handle var_list, std::vector<std::string> var_names) {
            opt.exclude_from_weight_decay(
                var_list.is_none() ? std::vector<Variable>{} : variables_of(var_list, opt.name().c_str()),
                var_names);
          },
          py::arg("var_list") = py::none(), py::arg("var_names") = std::vector<std::string>{},
          "Exempts variables (and those whose names contain one of var_names) from weight decay.")
      .def_property_readonly("weight_decay",
                             [](const Optimizer& opt) -> py::object {
                               if (opt.weight_decay() == 0) return py::none();
                               return py::float_(opt.weight_decay());
                             })
      .def("get_slot", &Optimizer::slot, py::arg("var"), py::arg("slot_name"),
           "The slot `slot_name` ('m', 'v', 'momentum', 'velocity', ...) of `var`.")
      .def_property_readonly("variables", [](const Optimizer& opt) { return state_of(opt.variables()); })
      .def_property_readonly("iterations", &Optimizer::iterations)
      .def_property_readonly("name", &Optimizer::name)
      .def_property(
          "learning_rate",
          [](const Optimizer& opt) -> py::object {
            if (const auto* schedule = opt.learning_rate_schedule())
              return py::cast((*schedule)(opt.iterations().value()));
            return py::cast(opt.learning_rate_variable());
          },
          [](Optimizer& opt, double value) { opt.set_learning_rate(value); },
          "The learning rate: a float64 Variable (a schedule's rate at iterations for a schedule).");
  py::class_<optimizers::SGD, Optimizer, std::shared_ptr<optimizers::SGD>>(
      m, "SGD", "Gradient descent with (Nesterov) momentum (tf.keras.optimizers.SGD).")
      .def(py::init([](py::handle learning_rate, double momentum, bool nesterov, const py::kwargs& kwargs) {
             return std::make_shared<optimizers::SGD>(learning_rate_of(learning_rate, "SGD"), momentum,
                                                      nesterov, base_of(kwargs, "SGD"));
           }),
           py::arg("learning_rate") = 0.01, py::arg("momentum") = 0.0, py::arg("nesterov") = false)
      .def_property_readonly("momentum", &optimizers::SGD::momentum)
      .def_property_readonly("nesterov", &optimizers::SGD::nesterov);
  py::class_<optimizers::Adam, Optimizer, std::shared_ptr<optimizers::Adam>>(
      m, "Adam", "Adam (tf.keras.optimizers.Adam).")
      .def(py::init([](py::handle learning_rate, double beta_1, double beta_2, double epsilon, bool amsgrad,
                       const py::kwargs& kwargs) {
             return std::make_shared<optimizers::Adam>(
                 learning_rate_of(learning_rate, "Adam"),
                 adam_options(beta_1, beta_2, epsilon, amsgrad, base_of(kwargs, "Adam")));
           }),
           py::arg("learning_rate") = 0.001, py::arg("beta_1") = 0.9, py::arg("beta_2") = 0.999,
           py::arg("epsilon") = 1e-7, py::arg("amsgrad") = false);
  py::class_<optimizers::AdamW, optimizers::Adam, std::shared_ptr<optimizers::AdamW>>(
      m, "AdamW", "Adam with decoupled weight decay (tf.keras.optimizers.AdamW).")
      .def(py::init([](py::handle learning_rate, double weight_decay, double beta_1, double beta_2,
                       double epsilon, bool amsgrad, const py::kwargs& kwargs) {
             return std::make_shared<optimizers::AdamW>(
                 learning_rate_of(learning_rate, "AdamW"), weight_decay,
                 adam_options(beta_1, beta_2, epsilon, amsgrad, base_of(kwargs, "AdamW")));
           }),
           py::arg("learning_rate") = 0.001, py::arg("weight_decay") = 0.004, py::arg("beta_1") = 0.9,
           py::arg("beta_2") = 0.999, py::arg("epsilon") = 1e-7, py::arg("amsgrad") = false);
  py::class_<optimizers::RMSprop, Optimizer, std::shared_ptr<optimizers::RMSprop>>(
      m, "RMSprop", "RMSprop (tf.keras.optimizers.RMSprop).")
      .def(py::init([](py::handle learning_rate, double rho, double momentum, double epsilon, bool centered,
                       const py::kwargs& kwargs) {
             return std::make_shared<optimizers::RMSprop>(
                 learning_rate_of(learning_rate, "RMSprop"),
                 optimizers::RMSpropOptions{.rho = rho,
                                            .momentum = momentum,
                                            .epsilon = epsilon,
                                            .centered = centered,
                                            .base = base_of(kwargs, "RMSprop")});
           }),
           py::arg("learning_rate") = 0.001, py::arg("rho") = 0.9, py::arg("momentum") = 0.0,
           py::arg("epsilon") = 1e-7, py::arg("centered") = false);
  py::class_<optimizers::Adagrad, Optimizer, std::shared_ptr<optimizers::Adagrad>>(
      m, "Adagrad", "Adagrad (tf.keras.optimizers.Adagrad).")
      .def(py::init([](py::handle learning_rate, double initial_accumulator_value, double epsilon,
                       const py::kwargs& kwargs) {
             return std::make_shared<optimizers::Adagrad>(
                 learning_rate_of(learning_rate, "Adagrad"),
                 optimizers::AdagradOptions{.initial_accumulator_value = initial_accumulator_value,
                                            .epsilon = epsilon,
                                            .base = base_of(kwargs, "Adagrad")});
           }),
           py::arg("learning_rate") = 0.001, py::arg("initial_accumulator_value") = 0.1,
           py::arg("epsilon") = 1e-7);
  py::class_<optimizers::Adamax, Optimizer, std::shared_ptr<optimizers::Adamax>>(
      m, "Adamax", "Adamax (tf.keras.optimizers.Adamax).")
      .def(py::init([](py::handle learning_rate, double beta_1, double beta_2, double epsilon,
                       const py::kwargs& kwargs) {
             return std::make_shared<optimizers::Adamax>(
                 learning_rate_of(learning_rate, "Adamax"),
                 adam_options(beta_1, beta_2, epsilon, false, base_of(kwargs, "Adamax")));
           }),
           py::arg("learning_rate") = 0.001, py::arg("beta_1") = 0.9, py::arg("beta_2") = 0.999,
           py::arg("epsilon") = 1e-7);
  py::class_<optimizers::Nadam, Optimizer, std::shared_ptr<optimizers::Nadam>>(
      m, "Nadam", "Nadam (tf.keras.optimizers.Nadam).")
      .def(py::init([](py::handle learning_rate, double beta_1, double beta_2, double epsilon,
                       const py::kwargs& kwargs) {
             return std::make_shared<optimizers::Nadam>(
                 learning_rate_of(learning_rate, "Nadam"),
                 adam_options(beta_1, beta_2, epsilon, false, base_of(kwargs, "Nadam")));
           }),
           py::arg("learning_rate") = 0.001, py::arg("beta_1") = 0.9, py::arg("beta_2") = 0.999,
           py::arg("epsilon") = 1e-7);
  py::class_<optimizers::Lion, Optimizer, std::shared_ptr<optimizers::Lion>>(
      m, "Lion", "Lion (tf.keras.optimizers.Lion).")
      .def(
          py::init([](py::handle learning_rate, double beta_1, double beta_2, const py::kwargs& kwargs) {
            return std::make_shared<optimizers::Lion>(
                learning_rate_of(learning_rate, "Lion"),
                optimizers::LionOptions{.beta_1 = beta_1, .beta_2 = beta_2, .base = base_of(kwargs, "Lion")});
          }),
          py::arg("learning_rate") = 0.001, py::arg("beta_1") = 0.9, py::arg("beta_2") = 0.99);
}

void bind_mixed_precision(py::module_& m) {
  using mixed_precision::LossScaleOptimizer;
  using mixed_precision::Policy;
  py::class_<Policy>(m, "Policy",
                     "A dtype policy (tf.keras.mixed_precision.Policy): compute and variable dtypes.")
      .def(py::init<std::string>(), py::arg("name"))
      .def_property_readonly("name", &Policy::name)
      .def_property_readonly("compute_dtype",
                             [](const Policy& p) { return std::string(dtype_name(p.compute_dtype())); })
      .def_property_readonly("variable_dtype",
                             [](const Policy& p) { return std::string(dtype_name(p.variable_dtype())); })
      .def("__repr__", [](const Policy& p) { return fmt::format("<Policy \"{}\">", p.name()); });
  m.def(
      "set_global_policy",
      [](py::handle policy) {
        if (policy.is_none()) {
          mixed_precision::set_global_policy(std::nullopt);
        } else if (py::isinstance<Policy>(policy)) {
          mixed_precision::set_global_policy(policy.cast<Policy>());
        } else if (py::isinstance<py::str>(policy)) {
          mixed_precision::set_global_policy(policy.cast<std::string>());
        } else {
          throw py::type_error(
              fmt::format("[set_global_policy] policy must be a Policy, a policy name such as "
                          "'mixed_bfloat16', or None, got an object of type {}",
                          type_name(policy)));
        }
      },
      py::arg("policy"), "Sets the dtype policy of the layers created from now on (None: no policy).");
  m.def("global_policy", &mixed_precision::global_policy,
        "The global dtype policy, or None when none is set (layers then take their first input's dtype).");
  py::class_<LossScaleOptimizer>(
      m, "LossScaleOptimizer",
      "Loss scaling around an optimizer (tf.keras.mixed_precision.LossScaleOptimizer).")
      .def(py::init([](optimizers::Optimizer& inner, bool dynamic, double initial_scale,
                       std::int64_t dynamic_growth_steps) {
             return std::make_unique<LossScaleOptimizer>(
                 inner, mixed_precision::LossScaleOptions{.dynamic = dynamic,
                                                          .initial_scale = initial_scale,
                                                          .dynamic_growth_steps = dynamic_growth_steps});
           }),
           py::arg("inner_optimizer"), py::arg("dynamic") = true, py::arg("initial_scale") = 32768.0,
           py::arg("dynamic_growth_steps") = 2000, py::keep_alive<1, 2>())
      .def(
          "get_scaled_loss",
          [](const LossScaleOptimizer& opt, py::handle loss) {
            return opt.get_scaled_loss(to_tensor(loss, "LossScaleOptimizer"));
          },
          py::arg("loss"))
      .def(
          "get_unscaled_gradients",
          [](const LossScaleOptimizer& opt, py::handle grads) {
            std::vector<Gradient> tensors;
            for (py::handle g : grads)
              tensors.emplace_back(g.is_none() ? Gradient() : Gradient(to_tensor(g, "LossScaleOptimizer")));
            return opt.get_unscaled_gradients(tensors);
          },
          py::arg("grads"))
      .def(
          "apply_gradients",
          [](LossScaleOptimizer& opt, py::handle grads_and_vars) {
            apply_pairs(opt, grads_and_vars, "LossScaleOptimizer");
            return opt.inner_optimizer().iterations();
          },
          py::arg("grads_and_vars"),
          "Updates the variables from unscaled gradients, skipping steps that overflow.")
      .def(
          "minimize",
          [](LossScaleOptimizer& opt, py::handle loss, py::handle var_list, py::handle tape) {
            minimize(opt, loss, var_list, tape, "LossScaleOptimizer");
            return opt.inner_optimizer().iterations();
          },
          py::arg("loss"), py::arg("var_list"), py::arg("tape") = py::none())
      .def_property_readonly("inner_optimizer", &LossScaleOptimizer::inner_optimizer,
                             py::return_value_policy::reference_internal)
      .def_property_readonly("loss_scale", &LossScaleOptimizer::loss_scale)
      .def_property_readonly("dynamic_counter", &LossScaleOptimizer::dynamic_counter)
      .def_property_readonly("skipped_steps", &LossScaleOptimizer::skipped_steps)
      .def_property_readonly("dynamic", &LossScaleOptimizer::dynamic)
      .def_property_readonly("initial_scale",
                             [](const LossScaleOptimizer& opt) { return opt.options().initial_scale; })
      .def_property_readonly("dynamic_growth_steps",
                             [](const LossScaleOptimizer& opt) { return opt.options().dynamic_growth_steps; })
      .def_property_readonly("iterations",
                             [](const LossScaleOptimizer& opt) { return opt.inner_optimizer().iterations(); })
      .def_property_readonly("variables",
                             [](const LossScaleOptimizer& opt) { return state_of(opt.variables()); });
}

}  // namespace

void bind_optimizers(py::module_& m) {
  py::module_ optimizers =
      m.def_submodule("optimizers", "tf.keras.optimizers over tapeflow's C++ optimizers.");
  bind_optimizer_classes(optimizers);
  py::module_ schedules = optimizers.def_submodule("schedules", "tf.keras.optimizers.schedules.");
  bind_schedules(schedules);
  py::module_ mixed_precision = m.def_submodule("mixed_precision", "tf.keras.mixed_precision.");
  bind_mixed_precision(mixed_precision);
}

}  // namespace tapeflow::python
