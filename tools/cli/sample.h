#pragma once
// `tapeflow sample CHECKPOINT --prompt "..."`: text from a character-level language model trained
// by `tapeflow train --model char-lstm|char-transformer`, rebuilt from its checkpoint alone.
//
// Each character is drawn from the model's distribution for the next character given the last
// --sequence-length characters so far (the prompt, then what was drawn), its logits divided by the
// temperature: 1 samples the model as it is, lower values sharpen it, 0 takes the likeliest
// character every time. The draws come from a std::mt19937_64 seeded with --seed, so a seed
// gives the same text on every run of the same build.

#include <cstdint>
#include <ostream>
#include <string>

namespace tapeflow::cli {

struct SampleOptions {
  std::string checkpoint;
  std::string prompt;         ///< UTF-8; empty: the text starts after a line break
  std::int64_t length = 200;  ///< characters to generate after the prompt
  double temperature = 0.8;   ///< >= 0
  std::uint64_t seed = 1;
};

/// Writes the prompt and the generated characters, then a line break, to `out`. Throws UsageError
/// for a checkpoint that is not a text model's, a prompt that is not UTF-8 or holds a character
/// the model never saw (naming it), a negative length or temperature.
void sample(const SampleOptions& options, std::ostream& out);

}  // namespace tapeflow::cli
