#include "graph/passes.h"

#include <fmt/format.h>

#include <array>

#include "graph/check.h"
#include "graph/fusion.h"
#include "graph/optimize.h"

namespace tapeflow::graph {

namespace {

constexpr std::array kPasses = {
    Pass{"eliminate_dead_code", eliminate_dead_code},
    Pass{"fold_constants", fold_constants},
    Pass{"eliminate_common_subexpressions", eliminate_common_subexpressions},
    Pass{"eliminate_dead_code", eliminate_dead_code},
    Pass{"drop_stop_gradients", drop_stop_gradients, /*fast_only=*/true},
    Pass{"relu_gradient_before_max_pool_gradient", relu_gradient_before_max_pool_gradient,
         /*fast_only=*/true},
    Pass{"fuse_elementwise", fuse_elementwise, /*fast_only=*/true},
};

}  // namespace

std::span<const Pass> passes() { return kPasses; }

Graph optimized(Graph g, bool fuse) {
  const bool checking = checking_after_passes();
  if (checking) check_after(g, "its builder (the tracer, a file's reader or an instantiation at new sizes)");
  for (const Pass& pass : kPasses) {
    if (pass.fast_only && !fuse) continue;
    pass.run(g);
    if (checking) check_after(g, fmt::format("the pass {}", pass.name));
  }
  return g;
}

}  // namespace tapeflow::graph
