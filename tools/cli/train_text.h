#pragma once
// `tapeflow train --model char-lstm|char-transformer`: a character-level language model trained
// with layers::Model::fit on UTF-8 text files (by default the fortunes of Debian's fortunes-min).
//
// The text is read as Unicode code points (data::Dataset::text_line_dataset, one "\n" after each
// line); its distinct characters, in code point order, are the vocabulary. It is cut into
// windows of --sequence-length + 1 characters, one after the other; each window's first
// sequence-length characters are an example and the same window shifted by one its labels. The
// last tenth of the windows (the end of the text, never trained on) is the validation set, whose
// loss, in nats per character, gives the perplexity exp(loss) printed after every epoch.
//
// The checkpoint holds the model's variables, the optimizer's state, the vocabulary and the
// configuration (entries "text/..."); `tapeflow sample` rebuilds the model from it alone. Resuming
// from an epoch's end is exact: fit's shuffle of epoch e depends only on (seed, e), so `--epochs 2`
// and `--epochs 1` then `--epochs 2 --resume` end with bitwise identical variables. Ctrl-C stops
// after the current step; the checkpoint keeps the last finished epoch.

#include <cstdint>
#include <optional>
#include <ostream>
#include <string>
#include <vector>

#include "history.h"
#include "tapeflow/tensor.h"
#include "train.h"

namespace tapeflow::cli {

/// The files --text reads when it is not given: fortunes-min's three collections.
const std::vector<std::string>& default_text_files();

/// A text as character ids: its vocabulary (distinct code points, in order) and the ids.
struct Corpus {
  std::vector<std::int32_t> vocabulary;
  std::vector<std::int32_t> ids;
};

/// Reads `paths` one after the other, each line followed by "\n". Throws UsageError naming the
/// file for one that cannot be read or is not UTF-8 (with the byte offset).
Corpus read_corpus(const std::vector<std::string>& paths);

/// Training and validation examples: (windows, sequence_length) int32 ids and the next characters.
struct TextData {
  Tensor train_x, train_y, validation_x, validation_y;
};

/// Cuts the corpus into windows of `sequence_length` + 1 characters (see the file comment), the
/// first `limit` training windows only if limit > 0. Throws UsageError naming `where` for a text
/// too short for one training and one validation window.
TextData make_windows(const Corpus& corpus, std::int64_t sequence_length, std::int64_t limit,
                      const std::string& where);

/// What a text model's checkpoint says of the model: all `tapeflow sample` needs to rebuild it.
struct TextModelConfig {
  std::string model;                     ///< one of text_model_names()
  std::vector<std::int32_t> vocabulary;  ///< the characters (code points) of ids 0, 1, ...
  std::int64_t sequence_length = 0;      ///< the steps of a training example
  std::string precision;                 ///< one of precisions()
  std::uint64_t seed = 0;                ///< the initialisers' seed (the layers' names follow it)
};

/// Reads the configuration of the text model whose checkpoint is `path`. Throws UsageError for a
/// file that cannot be read, is corrupt, or was not written by a text model's training.
TextModelConfig read_text_model_config(const std::string& path);

/// The text model whose checkpoint `path` is, or nullopt for a file that is missing, unreadable
/// or not a text model's checkpoint (a resume without --model trains what the checkpoint holds).
std::optional<std::string> text_checkpoint_model(const std::string& path);

/// Trains options.model, a text model (is_text_model), on options.text. Per-epoch results go to
/// `out`, fit's progress to `log` (a redrawn bar when `log_is_terminal`, else a line per epoch).
/// Returns the history of every epoch so far. Throws UsageError for a text that cannot be read,
/// is not UTF-8 or is too short for two windows, and for a checkpoint that does not fit; Interrupted
/// when stopped early; other tapeflow errors propagate.
History train_text(const TrainOptions& options, std::ostream& out, std::ostream& log, bool log_is_terminal);

}  // namespace tapeflow::cli
