#pragma once
// Each op family registers its ops explicitly (no static self-registration a linker could drop).
// The registry calls every function below once, on first use.

namespace tapeflow::autodiff {

class Registry;

void register_variable_ops(Registry& r);         // src/autodiff/tape.cpp
void register_custom_gradient_ops(Registry& r);  // src/autodiff/custom_gradient.cpp
void register_math_ops(Registry& r);             // src/ops/math_*.cpp
void register_reduce_ops(Registry& r);           // src/ops/reduce.cpp
void register_array_ops(Registry& r);            // src/ops/array_*.cpp
void register_linalg_ops(Registry& r);           // src/ops/linalg.cpp
void register_nn_ops(Registry& r);               // src/ops/nn_*.cpp
void register_image_ops(Registry& r);            // src/ops/image.cpp

}  // namespace tapeflow::autodiff
