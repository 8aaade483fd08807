// tapeflow.distributed: data-parallel training over MPI from Python, as Horovod's
// horovod.tensorflow (init, rank, size, the collectives, broadcast_variables). Its
// DistributedGradientTape is tape.cpp's ScopedTape with reduce options: the C++
// DistributedGradientTape averages the gradients over the ranks during the backward pass.
// Run the script under `mpirun -np N python3 train.py`; without mpirun it is one rank of one.
#include <fmt/format.h>
#include <pybind11/stl.h>

#include "bindings.h"

namespace tapeflow::python {

namespace {

distributed::ReduceOp reduce_op(const std::string& name) {
  if (name == "average") return distributed::ReduceOp::Average;
  if (name == "sum") return distributed::ReduceOp::Sum;
  if (name == "min") return distributed::ReduceOp::Min;
  if (name == "max") return distributed::ReduceOp::Max;
  throw InvalidArgumentError(
      fmt::format("[distributed] unknown reduce op '{}': use 'average', 'sum', 'min' or 'max'", name));
}

distributed::Compression compression(const std::string& name) {
  if (name == "none") return distributed::Compression::None;
  if (name == "bfloat16") return distributed::Compression::BFloat16;
  if (name == "float16" || name == "fp16") return distributed::Compression::Float16;
  throw InvalidArgumentError(
      fmt::format("[distributed] unknown compression '{}': use 'none', 'bfloat16' or 'float16'", name));
}

/// Runs a collective without the GIL: it waits for the other ranks.
template <class F>
auto collective(F&& f) {
  py::gil_scoped_release released;
  return f();
}

distributed::Overlap overlap(const std::string& name) {
  if (name == "auto") return distributed::Overlap::Auto;
  if (name == "always") return distributed::Overlap::Always;
  if (name == "never") return distributed::Overlap::Never;
  throw InvalidArgumentError(
      fmt::format("[distributed] unknown overlap '{}': use 'auto', 'always' or 'never'", name));
}

}  // namespace

void bind_distributed(py::module_& m) {
  py::module_ d = m.def_submodule("distributed", "Data-parallel training over MPI (tapeflow/distributed.h).");
  py::class_<distributed::GradientOptions>(d, "ReduceOptions",
                                           "How a DistributedGradientTape reduces gradients over the ranks.")
      .def(py::init([](const std::string& op, const std::string& compression_name,
                       double gradient_predivide_factor, std::int64_t bucket_bytes,
                       int backward_passes_per_step, const std::string& overlap_name) {
             return distributed::GradientOptions{.op = reduce_op(op),
                                                 .compression = compression(compression_name),
                                                 .gradient_predivide_factor = gradient_predivide_factor,
                                                 .bucket_bytes = bucket_bytes,
                                                 .backward_passes_per_step = backward_passes_per_step,
                                                 .overlap = overlap(overlap_name)};
           }),
           py::arg("op") = "average", py::arg("compression") = "none",
           py::arg("gradient_predivide_factor") = 1.0, py::arg("bucket_bytes") = std::int64_t{25} << 20,
           py::arg("backward_passes_per_step") = 1, py::arg("overlap") = "auto");
  d.def(
      "init",
      [](double stall_warning_seconds, double timeout_seconds) {
        distributed::init(
            {.stall_warning_seconds = stall_warning_seconds, .timeout_seconds = timeout_seconds});
      },
      py::arg("stall_warning_seconds") = 60.0, py::arg("timeout_seconds") = 600.0,
      "Joins the MPI job (rank and size from mpirun; one rank of one without it).");
  d.def("initialized", &distributed::initialized);
  d.def("is_mpi", &distributed::is_mpi, "Whether the process runs under mpirun.");
  d.def("rank", &distributed::rank);
  d.def("size", &distributed::size);
  d.def("local_rank", &distributed::local_rank);
  d.def("local_size", &distributed::local_size);
  d.def("barrier", [] { collective([] { distributed::barrier(); }); });
  d.def(
      "allreduce",
      [](py::handle tensor, const std::string& op, const std::string& name) {
        const Tensor t = to_tensor(tensor, "Allreduce");
        return collective([&] { return distributed::allreduce(t, reduce_op(op), name); });
      },
      py::arg("tensor"), py::arg("op") = "average", py::arg("name") = "");
  d.def(
      "allgather",
      [](py::handle tensor, const std::string& name) {
        const Tensor t = to_tensor(tensor, "Allgather");
        return collective([&] { return distributed::allgather(t, name); });
      },
      py::arg("tensor"), py::arg("name") = "");
  d.def(
      "broadcast",
      [](py::handle tensor, int root_rank, const std::string& name) {
        const Tensor t = to_tensor(tensor, "Broadcast");
        return collective([&] { return distributed::broadcast(t, root_rank, name); });
      },
      py::arg("tensor"), py::arg("root_rank") = 0, py::arg("name") = "");
  d.def(
      "alltoall",
      [](py::handle tensor, std::vector<std::int64_t> splits, const std::string& name) {
        const Tensor t = to_tensor(tensor, "Alltoall");
        return collective([&] { return distributed::alltoall(t, splits, name); });
      },
      py::arg("tensor"), py::arg("splits") = std::vector<std::int64_t>{}, py::arg("name") = "");
  d.def(
      "broadcast_variables",
      [](const std::vector<Variable>& variables, int root_rank) {
        collective([&] { distributed::broadcast_variables(variables, root_rank); });
      },
      py::arg("variables"), py::arg("root_rank") = 0,
      "Gives every rank root_rank's values of the variables.");
}

}  // namespace tapeflow::python
