#include "sample.h"

#include <fmt/format.h>
#include <locale.h>

#include <algorithm>
#include <cmath>
#include <cuchar>
#include <random>
#include <vector>

#include "tapeflow/checkpoint.h"
#include "tapeflow/errors.h"
#include "tapeflow/ops/array.h"
#include "tapeflow/ops/creation.h"
#include "text_models.h"
#include "train.h"
#include "train_text.h"

namespace tapeflow::cli {
namespace {

/// This thread's character type is UTF-8 while it lives (mbrtoc32 and c32rtomb follow it).
class Utf8Locale {
 public:
  Utf8Locale() : utf8_(newlocale(LC_CTYPE_MASK, "C.UTF-8", nullptr)) {
    if (utf8_ == nullptr) throw UsageError("the C.UTF-8 locale is not available: cannot read or write UTF-8");
    previous_ = uselocale(utf8_);
  }
  ~Utf8Locale() {
    uselocale(previous_);
    freelocale(utf8_);
  }
  Utf8Locale(const Utf8Locale&) = delete;
  Utf8Locale& operator=(const Utf8Locale&) = delete;

 private:
  locale_t utf8_, previous_ = nullptr;
};

/// The code points of UTF-8 `text`. Throws UsageError naming the byte offset of an invalid sequence.
std::vector<std::int32_t> decode(const std::string& text) {
  std::vector<std::int32_t> code_points;
  std::mbstate_t state{};
  for (std::size_t i = 0; i < text.size();) {
    char32_t c = 0;
    const std::size_t n = std::mbrtoc32(&c, text.data() + i, text.size() - i, &state);
    if (n == static_cast<std::size_t>(-1) || n == static_cast<std::size_t>(-2))
      throw UsageError(fmt::format("--prompt is not UTF-8 at byte offset {}", i));
    code_points.push_back(static_cast<std::int32_t>(c));
    i += std::max<std::size_t>(n, 1);  // n is 0 for U+0000, one byte
  }
  return code_points;
}

/// The UTF-8 bytes of code point `c`.
std::string encode(std::int32_t c) {
  char bytes[MB_LEN_MAX];
  std::mbstate_t state{};
  const std::size_t n = std::c32rtomb(bytes, static_cast<char32_t>(c), &state);
  return n == static_cast<std::size_t>(-1) ? std::string("\uFFFD") : std::string(bytes, n);
}

/// Index of the character drawn from `logits` / temperature (the likeliest for temperature 0).
/// Throws UsageError for logits that are not all finite (a checkpoint of a run that diverged).
std::int32_t draw(const std::vector<float>& logits, double temperature, std::mt19937_64& random) {
  if (!std::all_of(logits.begin(), logits.end(), [](float l) { return std::isfinite(l); }))
    throw UsageError(
        "the model's logits are not finite (NaN or infinity): its checkpoint holds weights of a run "
        "that diverged");
  const auto likeliest = std::max_element(logits.begin(), logits.end()) - logits.begin();
  if (temperature == 0) return static_cast<std::int32_t>(likeliest);
  // Softmax in double, shifted by the largest logit so that no exponential overflows.
  std::vector<double> weights(logits.size());
  for (std::size_t i = 0; i < logits.size(); ++i)
    weights[i] = std::exp((static_cast<double>(logits[i]) - logits[static_cast<std::size_t>(likeliest)]) /
                          temperature);
  return std::discrete_distribution<std::int32_t>(weights.begin(), weights.end())(random);
}

}  // namespace

void sample(const SampleOptions& o, std::ostream& out) {
  if (o.length < 0) throw UsageError(fmt::format("--length must be 0 or positive, got {}", o.length));
  if (!(o.temperature >= 0) || !std::isfinite(o.temperature))
    throw UsageError(fmt::format("--temperature must be 0 or positive, got {}", o.temperature));
  const TextModelConfig config = read_text_model_config(o.checkpoint);
  const auto vocabulary = static_cast<std::int64_t>(config.vocabulary.size());
  const auto model =
      make_text_model(config.model, vocabulary, config.sequence_length, config.seed, config.precision);
  try {
    restore_checkpoint(o.checkpoint, checkpoint_variables(*model, "model/"), {.allow_unused_entries = true});
  } catch (const Error& e) {
    throw UsageError(fmt::format("cannot read the model from the checkpoint: {}", e.what()));
  }

  const Utf8Locale utf8;
  const auto id_of = [&](std::int32_t c) {
    const auto at = std::lower_bound(config.vocabulary.begin(), config.vocabulary.end(), c);
    return at != config.vocabulary.end() && *at == c
               ? std::optional<std::int32_t>(at - config.vocabulary.begin())
               : std::nullopt;
  };
  std::vector<std::int32_t> ids;
  for (const std::int32_t c : decode(o.prompt.empty() ? "\n" : o.prompt)) {
    const std::optional<std::int32_t> id = id_of(c);
    if (!id)
      throw UsageError(fmt::format(
          "--prompt: the character '{}' (U+{:04X}) is not among the {} characters '{}' was trained on",
          encode(c), c, vocabulary, o.checkpoint));
    ids.push_back(*id);
  }
  std::string text = o.prompt;
  std::mt19937_64 random(o.seed);
  for (std::int64_t i = 0; i < o.length; ++i) {
    const auto steps = std::min<std::int64_t>(static_cast<std::int64_t>(ids.size()), config.sequence_length);
    const Tensor context =
        constant(std::vector<std::int32_t>(ids.end() - steps, ids.end()), Shape({1, steps}));
    const Tensor logits = model->call(context, /*training=*/false);
    const std::vector<float> last = slice(logits, {0, steps - 1, 0}, {1, 1, vocabulary}).to_vector<float>();
    ids.push_back(draw(last, o.temperature, random));
    text += encode(config.vocabulary[static_cast<std::size_t>(ids.back())]);
  }
  out << text << "\n" << std::flush;
}

}  // namespace tapeflow::cli
