#pragma once
// Every entry of a checkpoint as raw bytes, by name, whatever its dtype and shape: to compare two
// checkpoints bit for bit.
//
//   EXPECT_EQ(tf::testing::checkpoint_bytes(a)["model/0/kernel"], tf::testing::checkpoint_bytes(b)[...]);

#include <map>
#include <string>

#include "tapeflow/tapeflow.h"

namespace tapeflow::testing {

inline std::map<std::string, std::string> checkpoint_bytes(const std::string& path) {
  NamedVariables vars;
  for (const auto& e : list_checkpoint(path)) vars.emplace_back(e.name, Variable(zeros(e.shape, e.dtype)));
  restore_checkpoint(path, vars);
  std::map<std::string, std::string> bytes;
  for (const auto& [name, var] : vars) {
    const Tensor v = var.value();
    bytes[name] = std::string(static_cast<const char*>(v.raw_data()), v.nbytes());
  }
  return bytes;
}

}  // namespace tapeflow::testing
