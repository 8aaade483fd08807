// A program outside tapeflow's tree, built by scripts/check_packaging.sh against the installed
// package (find_package, pkg-config) and as a subproject (add_subdirectory). It prints dy/dx of
// x * x at 3, which must be 6.
#include <tapeflow/tapeflow.h>

#include <iostream>

namespace tf = tapeflow;

int main() {
  tf::Variable x(3.0f);
  tf::GradientTape tape;
  tf::Tensor y = x * x;
  std::cout << *tape.gradient(y, x) << "\n";
}
