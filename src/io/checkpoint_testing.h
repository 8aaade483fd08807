#pragma once
// Test hook for the file writer of checkpoints and function files (src/io/file_util.cpp); not part
// of the public API.

#include <cstdint>

namespace tapeflow::detail {

/// Makes every later save_checkpoint (and write_function_file) fail with EIO once `fail_after_bytes` bytes of
/// the temporary file have been written (0 fails the first write), as a full disk or I/O error would midway.
/// Pass -1 (the default state) to turn the fault off. Process-wide; tests only.
void set_checkpoint_write_fault(std::int64_t fail_after_bytes);

}  // namespace tapeflow::detail
