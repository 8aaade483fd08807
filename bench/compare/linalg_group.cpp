// compare --group linalg (see linalg_group.h). Both sides run the same LAPACK (the OpenBLAS both
// link): tapeflow single-threaded per matrix with a batch split over its pool, LibTorch with
// --threads threads in OpenBLAS and its intra-op pool. Inputs are made once, outside the timing:
// symmetric positive definite matrices for cholesky and eigh, matrices of norm about 1 for expm
// (a dominant one's exponential overflows), diagonally dominant ones elsewhere.

#include "linalg_group.h"

#include <torch/torch.h>

#include <functional>
#include <string>

#include "workloads.h"

namespace compare {
namespace {

struct Case {
  std::string name;
  /// The op on tapeflow's side and on LibTorch's: (matrix, right-hand sides) -> the output whose
  /// weighted sum is differentiated.
  std::function<tf::Tensor(const tf::Tensor&, const tf::Tensor&)> tapeflow;
  std::function<torch::Tensor(const torch::Tensor&, const torch::Tensor&)> torch;
  enum class Input { kDominant, kSpd, kUnitNorm } input = Input::kDominant;
};

std::vector<Case> cases() {
  return {
      {"cholesky", [](const tf::Tensor& a, const tf::Tensor&) { return tf::linalg::cholesky(a); },
       [](const torch::Tensor& a, const torch::Tensor&) { return torch::linalg::cholesky(a); },
       Case::Input::kSpd},
      {"triangular_solve",
       [](const tf::Tensor& a, const tf::Tensor& b) { return tf::linalg::triangular_solve(a, b); },
       [](const torch::Tensor& a, const torch::Tensor& b) {
         return at::linalg_solve_triangular(a, b, /*upper=*/false);
       }},
      {"solve", [](const tf::Tensor& a, const tf::Tensor& b) { return tf::linalg::solve(a, b); },
       [](const torch::Tensor& a, const torch::Tensor& b) {
         return torch::linalg::solve(a, b, /*left=*/true);
       }},
      {"inv", [](const tf::Tensor& a, const tf::Tensor&) { return tf::linalg::inv(a); },
       [](const torch::Tensor& a, const torch::Tensor&) { return torch::linalg::inv(a); }},
      {"slogdet",
       [](const tf::Tensor& a, const tf::Tensor&) { return tf::linalg::slogdet(a).log_abs_determinant; },
       [](const torch::Tensor& a, const torch::Tensor&) { return std::get<1>(torch::linalg::slogdet(a)); }},
      {"lu", [](const tf::Tensor& a, const tf::Tensor&) { return tf::linalg::lu(a).lu; },
       [](const torch::Tensor& a, const torch::Tensor&) { return std::get<0>(torch::linalg::lu_factor(a)); }},
      {"qr", [](const tf::Tensor& a, const tf::Tensor&) { return tf::linalg::qr(a).r; },
       [](const torch::Tensor& a, const torch::Tensor&) { return std::get<1>(torch::linalg::qr(a)); }},
      {"eigh", [](const tf::Tensor& a, const tf::Tensor&) { return tf::linalg::eigh(a).v; },
       [](const torch::Tensor& a, const torch::Tensor&) { return std::get<1>(torch::linalg::eigh(a, "L")); },
       Case::Input::kSpd},
      {"svd", [](const tf::Tensor& a, const tf::Tensor&) { return tf::linalg::svd(a).u; },
       [](const torch::Tensor& a, const torch::Tensor&) {
         return std::get<0>(torch::linalg::svd(a, false, c10::nullopt));
       }},
      {"expm", [](const tf::Tensor& a, const tf::Tensor&) { return tf::linalg::expm(a); },
       [](const torch::Tensor& a, const torch::Tensor&) { return torch::linalg::matrix_exp(a); },
       Case::Input::kUnitNorm},
  };
}

}  // namespace

void linalg_group(const Options& o, std::vector<Row>& rows) {
  struct Size {
    std::int64_t batch, n, k;  // k right-hand sides
  };
  for (const Size size : {Size{64, 64, 8}, Size{1, 1024, 64}}) {
    const tf::Shape matrix_shape =
        size.batch == 1 ? tf::Shape{size.n, size.n} : tf::Shape{size.batch, size.n, size.n};
    const tf::Shape rhs_shape =
        size.batch == 1 ? tf::Shape{size.n, size.k} : tf::Shape{size.batch, size.n, size.k};
    const tf::Tensor x = tf::random::normal(matrix_shape, 0, 1, tf::float32, 1);
    const tf::Tensor eye = tf::eye(size.n, size.n, tf::float32);
    const tf::Tensor dominant = x + eye * static_cast<double>(2 * size.n);
    const tf::Tensor spd = tf::matmul(x, x, false, true) + eye * static_cast<double>(size.n);
    const tf::Tensor unit_norm = x / static_cast<double>(size.n);
    const tf::Tensor rhs = tf::random::normal(rhs_shape, 0, 1, tf::float32, 2);
    const torch::Tensor t_rhs = to_torch(rhs);
    for (const Case& c : cases()) {
      const tf::Tensor a = c.input == Case::Input::kSpd        ? spd
                           : c.input == Case::Input::kUnitNorm ? unit_norm
                                                               : dominant;
      const torch::Tensor ta = to_torch(a);
      const tf::Tensor weights = tf::random::normal(c.tapeflow(a, rhs).shape(), 0, 1, tf::float32, 3);
      const torch::Tensor t_weights = to_torch(weights);
      std::vector<Side> sides{
          {"tapeflow",
           [&] {
             return seconds([&] {
               tf::Tensor source = a;
               tf::GradientTape tape;
               tape.watch(source);
               const tf::Tensor loss = tf::reduce_sum(c.tapeflow(source, rhs) * weights);
               (void)tape.gradient(loss, source);
             });
           },
           {}},
          {"LibTorch",
           [&] {
             return seconds([&] {
               torch::Tensor source = ta.detach().requires_grad_(true);
               (c.torch(source, t_rhs) * t_weights).sum().backward();
             });
           },
           {}},
      };
      const std::vector<double> m = alternate(sides, o.rounds);
      const std::string shape =
          size.batch == 1 ? fmt2("%.0f x %.0f", size.n, size.n) : fmt2("64 x %.0f x %.0f", size.n, size.n);
      rows.push_back({"L " + c.name + " fwd+bwd, float32, " + shape, "s", m[0], m[1], "", o.config, ""});
    }
  }
}

}  // namespace compare
