#pragma once
// One line of the training history: what `tapeflow train` prints after each epoch, saves in the
// checkpoint and plots.

#include <cstdint>
#include <vector>

namespace tapeflow::cli {

struct EpochRecord {
  std::int64_t epoch = 0;  // 1-based
  double train_loss = 0, train_accuracy = 0;
  double test_loss = 0, test_accuracy = 0;
  double seconds = 0;  // wall time of the epoch (training and evaluation)
};

using History = std::vector<EpochRecord>;

}  // namespace tapeflow::cli
