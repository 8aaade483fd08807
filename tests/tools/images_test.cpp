// tools/cli/images.h: the user's images for `tapeflow predict` in the three formats give the
// same tensor, and a bad file of any kind is a UsageError naming it.
#ifdef TAPEFLOW_HAVE_CLI

#include "images.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmath>
#include <filesystem>
#include <string>
#include <vector>

#include "image_files.h"
#include "support/temp_dir.h"
#include "tapeflow/tapeflow.h"
#include "train.h"

namespace tf = tapeflow;
namespace cli = tapeflow::cli;
namespace fs = std::filesystem;
using ::testing::HasSubstr;
using tf::testing::bytes_of;
using tf::testing::write_bytes;
using tf::testing::write_idx;
using tf::testing::write_npy;
using tf::testing::write_png;

namespace {

/// A fresh directory for one test, removed at its end.
class ImagesTest : public ::testing::Test {
 protected:
  std::string path(const std::string& file) const { return dir_ / file; }

  tf::testing::TempDir dir_;
};

/// `n` images of pixels 0..255 in a pattern that differs from image to image.
std::vector<std::uint8_t> pixels(int n) {
  std::vector<std::uint8_t> p;
  for (int i = 0; i < n * 28 * 28; ++i) p.push_back(static_cast<std::uint8_t>((i * 37 + i / 784 * 11) % 256));
  return p;
}

TEST_F(ImagesTest, IdxNpyAndPngOfTheSamePixelsGiveTheSameImagesDividedBy255) {
  const std::vector<std::uint8_t> p = pixels(2);
  std::vector<float> expected, f32;
  std::vector<double> f64;
  for (std::uint8_t v : p) {
    expected.push_back(static_cast<float>(v) / 255.0f);
    f32.push_back(static_cast<float>(v) / 255.0f);
    f64.push_back(v / 255.0);
  }
  write_idx(path("two.idx"), {2, 28, 28}, p);
  write_npy(path("u1.npy"), "|u1", "(2, 28, 28)", bytes_of(p));
  write_npy(path("f4.npy"), "<f4", "(2, 28, 28, 1)", bytes_of(f32));
  write_npy(path("f8.npy"), "<f8", "(2,28,28)", bytes_of(f64));
  for (const char* file : {"two.idx", "u1.npy", "f4.npy", "f8.npy"}) {
    const tf::Tensor images = cli::read_images(path(file));
    EXPECT_EQ(images.shape(), tf::Shape({2, 28, 28, 1})) << file;
    EXPECT_EQ(images.dtype(), tf::DType::Float32) << file;
    const std::vector<float> got = images.to_vector<float>();
    for (std::size_t i = 0; i < got.size(); ++i) ASSERT_NEAR(got[i], expected[i], 1e-7) << file << " " << i;
  }
  // A PNG holds one image; grey RGB stays its grey level.
  const std::vector<std::uint8_t> first(p.begin(), p.begin() + 784);
  write_png(path("one.png"), 28, 28, first);
  write_npy(path("one.npy"), "|u1", "(28, 28)", bytes_of(first));
  const tf::Tensor png = cli::read_images(path("one.png"));
  EXPECT_EQ(png.shape(), tf::Shape({1, 28, 28, 1}));
  EXPECT_EQ(png.to_vector<float>(), cli::read_images(path("one.npy")).to_vector<float>());
}

TEST_F(ImagesTest, GzippedIdxIsReadToo) {
  // The data set's own files: the first ten test images.
  const std::string t10k = std::string(tf::data::kFashionMnistDir) + "/t10k-images-idx3-ubyte.gz";
  if (!fs::exists(t10k)) GTEST_SKIP() << "dataset-fashion-mnist is not installed";
  const tf::Tensor images = cli::read_images(t10k);
  EXPECT_EQ(images.shape(), tf::Shape({10000, 28, 28, 1}));
}

TEST_F(ImagesTest, EveryKindOfBadFileIsAUsageErrorNamingIt) {
  const std::vector<std::uint8_t> p = pixels(1);
  const std::vector<float> two(784, 2.0f), nan(784, std::nanf(""));
  write_bytes(path("empty.npy"), {});
  write_bytes(path("text.png"), {'h', 'e', 'l', 'l', 'o'});
  write_png(path("small.png"), 27, 28, std::vector<std::uint8_t>(p.begin(), p.begin() + 27 * 28));
  write_png(path("cut.png"), 28, 28, p);
  std::vector<unsigned char> png_cut = tf::testing::read_bytes(path("cut.png"));
  png_cut.resize(png_cut.size() / 2);
  write_bytes(path("cut.png"), png_cut);
  write_npy(path("shape.npy"), "|u1", "(27, 28)", bytes_of(std::vector<std::uint8_t>(27 * 28)));
  write_npy(path("rgb.npy"), "|u1", "(28, 28, 3)", bytes_of(std::vector<std::uint8_t>(28 * 28 * 3)));
  write_npy(path("dtype.npy"), "<i4", "(28, 28)", bytes_of(std::vector<std::int32_t>(784)));
  write_npy(path("big_endian.npy"), ">f4", "(28, 28)", bytes_of(std::vector<float>(784)));
  write_npy(path("short.npy"), "|u1", "(2, 28, 28)", bytes_of(p));
  write_npy(path("long.npy"), "|u1", "(28, 28)", bytes_of(pixels(2)));
  write_npy(path("fortran.npy"), "|u1", "(28, 28)", bytes_of(p), /*fortran_order=*/true);
  write_npy(path("range.npy"), "<f4", "(28, 28)", bytes_of(two));
  write_npy(path("nan.npy"), "<f8", "(28, 28)", bytes_of(std::vector<double>(nan.begin(), nan.end())));
  write_npy(path("no_shape.npy"), "|u1", "28", bytes_of(p));
  write_npy(path("bad_size.npy"), "|u1", "(28, 2x8)", bytes_of(p));
  std::vector<unsigned char> header_cut = tf::testing::read_bytes(path("shape.npy"));
  header_cut.resize(40);
  write_bytes(path("header_cut.npy"), header_cut);
  write_idx(path("labels.idx"), {10}, std::vector<std::uint8_t>(10));
  write_idx(path("cut.idx"), {2, 28, 28}, p);
  write_bytes(path("broken.gz"), {0x1f, 0x8b, 8, 0, 0, 0, 0, 0, 0, 3, 'x', 'y'});
  fs::create_directory(path("directory.npy"));
  ASSERT_EQ(::mkfifo(path("fifo.npy").c_str(), 0600), 0);
  for (const char* file :
       {"empty.npy", "text.png",       "small.png",    "cut.png",        "shape.npy",   "rgb.npy",
        "dtype.npy", "big_endian.npy", "short.npy",    "long.npy",       "fortran.npy", "range.npy",
        "nan.npy",   "no_shape.npy",   "bad_size.npy", "header_cut.npy", "labels.idx",  "cut.idx",
        "broken.gz", "directory.npy",  "fifo.npy",     "missing.npy"}) {
    try {
      cli::read_images(path(file));
      ADD_FAILURE() << file << " was read";
    } catch (const cli::UsageError& e) {
      EXPECT_THAT(e.what(), HasSubstr(path(file))) << file;
    } catch (const std::exception& e) {
      ADD_FAILURE() << file << ": not a UsageError: " << e.what();
    }
  }
}

}  // namespace

#endif  // TAPEFLOW_HAVE_CLI
