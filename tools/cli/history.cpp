#include "history.h"

#include "tapeflow/ops/creation.h"

namespace tapeflow::cli {

Tensor history_tensor(const History& history) {
  std::vector<double> v;
  for (const auto& r : history)
    v.insert(v.end(), {static_cast<double>(r.epoch), r.train_loss, r.train_accuracy, r.test_loss,
                       r.test_accuracy, r.seconds});
  return constant(v, Shape({static_cast<std::int64_t>(history.size()), kHistoryColumns}));
}

History history_from(const Tensor& t) {
  History h;
  auto v = t.values<double>();
  for (std::size_t i = 0; i + kHistoryColumns <= v.size(); i += kHistoryColumns)
    h.push_back({static_cast<std::int64_t>(v[i]), v[i + 1], v[i + 2], v[i + 3], v[i + 4], v[i + 5]});
  return h;
}

}  // namespace tapeflow::cli
