#pragma once
// One line of the training history: what `tapeflow train` prints after each epoch, saves in the
// checkpoint and plots.

#include <cstdint>
#include <vector>

#include "tapeflow/tensor.h"

namespace tapeflow::cli {

struct EpochRecord {
  std::int64_t epoch = 0;  // 1-based
  double train_loss = 0, train_accuracy = 0;
  double test_loss = 0, test_accuracy = 0;
  double seconds = 0;  // wall time of the epoch (training and evaluation)
};

using History = std::vector<EpochRecord>;

/// The columns of a history as a checkpoint holds it: epoch, train loss, train accuracy, test
/// loss, test accuracy, seconds.
inline constexpr std::int64_t kHistoryColumns = 6;

/// `history` as a float64 tensor of shape (epochs, kHistoryColumns).
Tensor history_tensor(const History& history);

/// The history a history_tensor() holds.
History history_from(const Tensor& t);

}  // namespace tapeflow::cli
