#pragma once
/// \file tapeflow.h
/// tapeflow: eager tensors with TensorFlow-style automatic differentiation, in C++20.
///
/// A five-minute tour:
///
///   #include <tapeflow/tapeflow.h>
///   namespace tf = tapeflow;
///
///   tf::Variable w(tf::random::normal({3, 2}, 0, 1, tf::float32, /*seed=*/1), {.name = "w"});
///   tf::Variable b(tf::zeros({2}), {.name = "b"});
///   tf::Tensor x = tf::constant({{1.f, 2.f, 3.f}});
///
///   tf::GradientTape tape;                    // records while alive
///   tf::Tensor y = tf::matmul(x, w) + b;      // variables are watched when read
///   tf::Tensor loss = tf::reduce_mean(y * y);
///   auto [dw, db] = tape.gradient(loss, std::pair{w, b});   // tf::Gradient each
///   std::cout << *db << "\n";                 // tf.Tensor([...], shape=(2,), dtype=float32)
///
/// - Tensors are immutable values with shared storage (tensor.h); Variables hold mutable state
///   (variable.h).
/// - Ops live in ops/*.h, grouped as in TensorFlow: math, reduce, array, linalg, nn, image,
///   training (optimizer update rules).
/// - GradientTape (tape.h) records ops and computes gradients; registry.h lets you register or
///   disable gradients; errors.h lists the exceptions (named like TensorFlow's).

#include "tapeflow/checkpoint.h"
#include "tapeflow/control_flow.h"
#include "tapeflow/custom_gradient.h"
#include "tapeflow/data.h"
#include "tapeflow/data/dataset.h"
#include "tapeflow/debug.h"
#include "tapeflow/debugging.h"
#include "tapeflow/denormals.h"
#include "tapeflow/distributed.h"
#include "tapeflow/dtype.h"
#include "tapeflow/errors.h"
#include "tapeflow/forward_accumulator.h"
#include "tapeflow/function.h"
#include "tapeflow/gradient.h"
#include "tapeflow/indexed_slices.h"
#include "tapeflow/logging.h"
#include "tapeflow/memory.h"
#include "tapeflow/mixed_precision.h"
#include "tapeflow/module.h"
#include "tapeflow/nest.h"
#include "tapeflow/nn/batch_normalization.h"
#include "tapeflow/nn/callbacks.h"
#include "tapeflow/nn/conv1d.h"
#include "tapeflow/nn/conv2d.h"
#include "tapeflow/nn/dense.h"
#include "tapeflow/nn/dropout.h"
#include "tapeflow/nn/embedding.h"
#include "tapeflow/nn/flatten.h"
#include "tapeflow/nn/functional.h"
#include "tapeflow/nn/global_pooling.h"
#include "tapeflow/nn/keras_tensor.h"
#include "tapeflow/nn/layer.h"
#include "tapeflow/nn/layer_normalization.h"
#include "tapeflow/nn/loss.h"
#include "tapeflow/nn/losses.h"
#include "tapeflow/nn/merge.h"
#include "tapeflow/nn/metrics.h"
#include "tapeflow/nn/model.h"
#include "tapeflow/nn/multi_head_attention.h"
#include "tapeflow/nn/pooling.h"
#include "tapeflow/nn/recurrent.h"
#include "tapeflow/nn/sequential.h"
#include "tapeflow/nn/softmax.h"
#include "tapeflow/no_recording.h"
#include "tapeflow/onnx.h"
#include "tapeflow/ops/array.h"
#include "tapeflow/ops/creation.h"
#include "tapeflow/ops/gradient_control.h"
#include "tapeflow/ops/image.h"
#include "tapeflow/ops/linalg.h"
#include "tapeflow/ops/math.h"
#include "tapeflow/ops/matrix.h"
#include "tapeflow/ops/nn.h"
#include "tapeflow/ops/raw.h"
#include "tapeflow/ops/reduce.h"
#include "tapeflow/ops/scan.h"
#include "tapeflow/ops/segment.h"
#include "tapeflow/ops/sort.h"
#include "tapeflow/ops/training.h"
#include "tapeflow/optim/loss_scale_optimizer.h"
#include "tapeflow/optim/optimizer.h"
#include "tapeflow/registry.h"
#include "tapeflow/shape.h"
#include "tapeflow/tape.h"
#include "tapeflow/tensor.h"
#include "tapeflow/threads.h"
#include "tapeflow/variable.h"
#include "tapeflow/vectorized_map.h"
#include "tapeflow/version.h"
