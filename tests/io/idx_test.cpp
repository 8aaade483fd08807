// read_idx: every IDX element type, raw and gzip, and every kind of malformed file.
// The files are written by the tests into a fresh temporary directory.

#include <fcntl.h>
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zlib.h>

#include <bit>
#include <chrono>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <future>
#include <limits>

#include "tapeflow/tapeflow.h"

namespace tf = tapeflow;
namespace fs = std::filesystem;
using ::testing::AllOf;
using ::testing::HasSubstr;

namespace {

using Bytes = std::vector<unsigned char>;

// A fresh directory per test, removed afterwards.
class ReadIdx : public ::testing::Test {
 protected:
  void SetUp() override {
    const auto* info = ::testing::UnitTest::GetInstance()->current_test_info();
    dir_ = fs::temp_directory_path() /
           (std::string("tapeflow_idx_") + info->name() + "_" + std::to_string(::getpid()));
    fs::remove_all(dir_);
    fs::create_directories(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }

  std::string write_raw(const std::string& name, const Bytes& bytes) {
    const std::string path = (dir_ / name).string();
    std::ofstream out(path, std::ios::binary);
    out.write(reinterpret_cast<const char*>(bytes.data()), static_cast<std::streamsize>(bytes.size()));
    return path;
  }
  std::string write_gzip(const std::string& name, const Bytes& bytes) {
    const std::string path = (dir_ / name).string();
    gzFile gz = gzopen(path.c_str(), "wb");
    EXPECT_NE(gz, nullptr);
    if (!bytes.empty()) {
      EXPECT_EQ(gzwrite(gz, bytes.data(), static_cast<unsigned>(bytes.size())),
                static_cast<int>(bytes.size()));
    }
    EXPECT_EQ(gzclose(gz), Z_OK);
    return path;
  }
  Bytes read_file(const std::string& path) {
    std::ifstream in(path, std::ios::binary);
    return Bytes(std::istreambuf_iterator<char>(in), {});
  }

  fs::path dir_;
};

void put_be(Bytes& b, std::uint64_t v, int nbytes) {
  for (int i = nbytes - 1; i >= 0; --i) b.push_back(static_cast<unsigned char>(v >> (8 * i)));
}

// The header `00 00 type ndims dims...`.
Bytes header(unsigned char type, std::vector<std::uint32_t> dims) {
  Bytes b = {0, 0, type, static_cast<unsigned char>(dims.size())};
  for (auto d : dims) put_be(b, d, 4);
  return b;
}

Bytes cat(Bytes a, const Bytes& b) {
  a.insert(a.end(), b.begin(), b.end());
  return a;
}

// A valid uint8 file of shape (2, 3) holding 0, 1, 2, 250, 254, 255.
Bytes small_uint8() { return cat(header(0x08, {2, 3}), {0, 1, 2, 250, 254, 255}); }

}  // namespace

TEST_F(ReadIdx, Uint8IsReturnedAsInt32WithTheFileShape) {
  const tf::Tensor t = tf::data::read_idx(write_raw("u8.idx", small_uint8()));
  EXPECT_EQ(t.dtype(), tf::DType::Int32);
  EXPECT_EQ(t.shape(), (tf::Shape{2, 3}));
  EXPECT_EQ(t.to_vector<std::int32_t>(), (std::vector<std::int32_t>{0, 1, 2, 250, 254, 255}));
}

TEST_F(ReadIdx, GzipFileGivesTheSameTensorAsTheRawFile) {
  const tf::Tensor raw = tf::data::read_idx(write_raw("u8.idx", small_uint8()));
  // Gzip is detected from the magic bytes, not the name.
  const tf::Tensor gz = tf::data::read_idx(write_gzip("u8_compressed.idx", small_uint8()));
  EXPECT_EQ(gz.shape(), raw.shape());
  EXPECT_EQ(gz.to_vector<std::int32_t>(), raw.to_vector<std::int32_t>());
}

TEST_F(ReadIdx, Int8IsSignExtended) {
  const Bytes file = cat(header(0x09, {4}), {0x00, 0x7f, 0x80, 0xff});
  for (const auto& path : {write_raw("i8.idx", file), write_gzip("i8.idx.gz", file)}) {
    const tf::Tensor t = tf::data::read_idx(path);
    EXPECT_EQ(t.dtype(), tf::DType::Int32);
    EXPECT_EQ(t.to_vector<std::int32_t>(), (std::vector<std::int32_t>{0, 127, -128, -1}));
  }
}

TEST_F(ReadIdx, Int16IsBigEndianAndSigned) {
  const Bytes file = cat(header(0x0B, {1, 3}), {0x01, 0x02, 0x80, 0x00, 0xff, 0xfe});
  for (const auto& path : {write_raw("i16.idx", file), write_gzip("i16.idx.gz", file)}) {
    const tf::Tensor t = tf::data::read_idx(path);
    EXPECT_EQ(t.shape(), (tf::Shape{1, 3}));
    EXPECT_EQ(t.to_vector<std::int32_t>(), (std::vector<std::int32_t>{0x0102, -32768, -2}));
  }
}

TEST_F(ReadIdx, Int32IsBigEndianAndSigned) {
  Bytes file = header(0x0C, {3});
  put_be(file, 0x01020304u, 4);
  put_be(file, 0x80000000u, 4);
  put_be(file, 0xfffffffdu, 4);
  for (const auto& path : {write_raw("i32.idx", file), write_gzip("i32.idx.gz", file)}) {
    EXPECT_EQ(tf::data::read_idx(path).to_vector<std::int32_t>(),
              (std::vector<std::int32_t>{0x01020304, std::numeric_limits<std::int32_t>::min(), -3}));
  }
}

TEST_F(ReadIdx, Float32IsBigEndianIeee) {
  const std::vector<float> values = {1.5f, -0.25f, 3.0e38f, -0.0f};
  Bytes file = header(0x0D, {2, 2});
  for (float v : values) put_be(file, std::bit_cast<std::uint32_t>(v), 4);
  for (const auto& path : {write_raw("f32.idx", file), write_gzip("f32.idx.gz", file)}) {
    const tf::Tensor t = tf::data::read_idx(path);
    EXPECT_EQ(t.dtype(), tf::DType::Float32);
    EXPECT_EQ(t.shape(), (tf::Shape{2, 2}));
    EXPECT_EQ(t.to_vector<float>(), values);
    EXPECT_TRUE(std::signbit(t.values<float>()[3]));
  }
}

TEST_F(ReadIdx, Float64IsBigEndianIeee) {
  const std::vector<double> values = {0.1, -1e300, 2.0};
  Bytes file = header(0x0E, {3, 1, 1});
  for (double v : values) put_be(file, std::bit_cast<std::uint64_t>(v), 8);
  for (const auto& path : {write_raw("f64.idx", file), write_gzip("f64.idx.gz", file)}) {
    const tf::Tensor t = tf::data::read_idx(path);
    EXPECT_EQ(t.dtype(), tf::DType::Float64);
    EXPECT_EQ(t.shape(), (tf::Shape{3, 1, 1}));
    EXPECT_EQ(t.to_vector<double>(), values);
  }
}

TEST_F(ReadIdx, ZeroSizedDimensionGivesAnEmptyTensor) {
  const tf::Tensor t = tf::data::read_idx(write_raw("empty.idx", header(0x0D, {0, 28, 28})));
  EXPECT_EQ(t.shape(), (tf::Shape{0, 28, 28}));
  EXPECT_EQ(t.num_elements(), 0);
  EXPECT_EQ(tf::data::read_idx(write_gzip("empty.idx.gz", header(0x08, {5, 0}))).shape(), (tf::Shape{5, 0}));
}

TEST_F(ReadIdx, EightDimensionsAreAccepted) {
  const Bytes file = cat(header(0x08, {1, 1, 1, 1, 1, 1, 1, 2}), {7, 9});
  EXPECT_EQ(tf::data::read_idx(write_raw("r8.idx", file)).shape(), (tf::Shape{1, 1, 1, 1, 1, 1, 1, 2}));
}

TEST_F(ReadIdx, MissingFileThrowsFailedPreconditionNamingThePath) {
  const std::string path = (dir_ / "no_such_file.idx").string();
  EXPECT_THAT([&] { tf::data::read_idx(path); }, ::testing::ThrowsMessage<tf::FailedPreconditionError>(
                                                     AllOf(HasSubstr("[read_idx]"), HasSubstr(path))));
}

TEST_F(ReadIdx, DirectoryThrowsFailedPrecondition) {
  EXPECT_THROW(tf::data::read_idx(dir_.string()), tf::FailedPreconditionError);
}

TEST_F(ReadIdx, FifoThrowsFailedPreconditionAtOnceInsteadOfWaitingForAWriter) {
  const std::string pipe = (dir_ / "pipe.idx").string();
  ASSERT_EQ(::mkfifo(pipe.c_str(), 0600), 0);
  auto read = std::async(std::launch::async, [&] { tf::data::read_idx(pipe); });
  if (read.wait_for(std::chrono::seconds(10)) != std::future_status::ready) {
    // Release the blocked open() so the test ends.
    const int writer = ::open(pipe.c_str(), O_WRONLY);
    ::close(writer);
    ADD_FAILURE() << "read_idx blocked opening a FIFO";
  }
  EXPECT_THAT([&] { read.get(); },
              ::testing::ThrowsMessage<tf::FailedPreconditionError>(
                  AllOf(HasSubstr("[read_idx]"), HasSubstr(pipe), HasSubstr("a FIFO (named pipe)"))));
}

TEST_F(ReadIdx, BadMagicThrowsDataLoss) {
  Bytes file = small_uint8();
  file[0] = 0x12;
  file[1] = 0x34;
  const std::string path = write_raw("bad_magic.idx", file);
  EXPECT_THAT([&] { tf::data::read_idx(path); },
              ::testing::ThrowsMessage<tf::DataLossError>(AllOf(HasSubstr(path), HasSubstr("12 34"))));
  EXPECT_THROW(tf::data::read_idx(write_gzip("bad_magic.idx.gz", file)), tf::DataLossError);
}

TEST_F(ReadIdx, UnknownTypeCodeThrowsDataLoss) {
  for (unsigned char code : {0x00, 0x07, 0x0A, 0x0F, 0xff}) {
    Bytes file = small_uint8();
    file[2] = code;
    const std::string path = write_raw("bad_type.idx", file);
    EXPECT_THAT([&] { tf::data::read_idx(path); },
                ::testing::ThrowsMessage<tf::DataLossError>(HasSubstr("unknown IDX type code")))
        << "type code " << int{code};
  }
}

TEST_F(ReadIdx, ZeroDimensionsThrowsDataLoss) {
  const std::string path = write_raw("rank0.idx", Bytes{0, 0, 0x08, 0, 42});
  EXPECT_THAT([&] { tf::data::read_idx(path); },
              ::testing::ThrowsMessage<tf::DataLossError>(HasSubstr("declares 0 dimensions")));
}

TEST_F(ReadIdx, MoreThanEightDimensionsThrowsDataLoss) {
  const std::string path = write_raw("rank9.idx", cat(header(0x08, {1, 1, 1, 1, 1, 1, 1, 1, 1}), {5}));
  EXPECT_THAT([&] { tf::data::read_idx(path); },
              ::testing::ThrowsMessage<tf::DataLossError>(HasSubstr("declares 9 dimensions")));
  EXPECT_THROW(tf::data::read_idx(write_raw("rank255.idx", Bytes{0, 0, 0x08, 255})), tf::DataLossError);
}

TEST_F(ReadIdx, DimensionsWhoseProductOverflowsThrowDataLoss) {
  const std::string path = write_raw("huge.idx", header(0x08, {0xffffffffu, 0xffffffffu, 0xffffffffu}));
  EXPECT_THAT([&] { tf::data::read_idx(path); },
              ::testing::ThrowsMessage<tf::DataLossError>(HasSubstr("exceeds the")));
  EXPECT_THROW(tf::data::read_idx(write_gzip("huge.idx.gz", header(0x0E, {0xffffffffu, 0xffffffffu}))),
               tf::DataLossError);
}

TEST_F(ReadIdx, DimensionsAboveTheAllocationLimitThrowResourceExhaustedBeforeReading) {
  // 2^48 uint8 elements: a valid shape, but 1 PiB as int32. Nothing is allocated.
  const std::string path = write_gzip("big.idx.gz", header(0x08, {1u << 16, 1u << 16, 1u << 16}));
  EXPECT_THAT([&] { tf::data::read_idx(path); },
              ::testing::ThrowsMessage<tf::ResourceExhaustedError>(HasSubstr("allocation limit")));
}

TEST_F(ReadIdx, TruncatedRawFileThrowsDataLossAtEveryOffset) {
  const Bytes full = small_uint8();  // 4 + 8 header bytes, 6 data bytes
  for (std::size_t keep = 0; keep < full.size(); ++keep) {
    const std::string path =
        write_raw("truncated.idx", Bytes(full.begin(), full.begin() + static_cast<long>(keep)));
    EXPECT_THROW(tf::data::read_idx(path), tf::DataLossError) << "kept " << keep << " bytes";
  }
}

TEST_F(ReadIdx, TruncatedDataMessageGivesExpectedAndActualByteCounts) {
  const Bytes full = small_uint8();
  const std::string path = write_raw("truncated.idx", Bytes(full.begin(), full.end() - 2));
  EXPECT_THAT([&] { tf::data::read_idx(path); },
              ::testing::ThrowsMessage<tf::DataLossError>(AllOf(HasSubstr(path), HasSubstr("truncated"),
                                                                HasSubstr("needs 6 data bytes"),
                                                                HasSubstr("holds 4 data bytes"))));
}

TEST_F(ReadIdx, TruncatedDecompressedStreamThrowsDataLossAtEveryOffset) {
  const Bytes full = small_uint8();
  for (std::size_t keep = 0; keep < full.size(); ++keep) {
    const std::string path =
        write_gzip("short.idx.gz", Bytes(full.begin(), full.begin() + static_cast<long>(keep)));
    EXPECT_THROW(tf::data::read_idx(path), tf::DataLossError) << "kept " << keep << " bytes";
  }
}

TEST_F(ReadIdx, TruncatedGzipFileThrowsDataLossAtEveryOffset) {
  const Bytes gz = read_file(write_gzip("full.idx.gz", small_uint8()));
  // Cut the compressed file itself (keep at least the 1f 8b magic so it is read as gzip).
  for (std::size_t keep = 2; keep < gz.size(); ++keep) {
    const std::string path = write_raw("cut.idx.gz", Bytes(gz.begin(), gz.begin() + static_cast<long>(keep)));
    EXPECT_THROW(tf::data::read_idx(path), tf::DataLossError)
        << "kept " << keep << " of " << gz.size() << " bytes";
  }
}

TEST_F(ReadIdx, TrailingBytesThrowDataLossWithBothByteCounts) {
  const Bytes file = cat(small_uint8(), {1, 2, 3});
  const std::string raw = write_raw("trailing.idx", file);
  EXPECT_THAT([&] { tf::data::read_idx(raw); },
              ::testing::ThrowsMessage<tf::DataLossError>(AllOf(
                  HasSubstr("trailing"), HasSubstr("needs 6 data bytes"), HasSubstr("holds 9 data bytes"))));
  const std::string gz = write_gzip("trailing.idx.gz", file);
  EXPECT_THAT([&] { tf::data::read_idx(gz); },
              ::testing::ThrowsMessage<tf::DataLossError>(AllOf(
                  HasSubstr("trailing"), HasSubstr("needs 6 data bytes"), HasSubstr("holds 9 data bytes"))));
}

TEST_F(ReadIdx, CorruptGzipStreamThrowsDataLossWithZlibsMessage) {
  Bytes gz = read_file(write_gzip("good.idx.gz", small_uint8()));
  // Byte 10 starts the deflate data (after the 10-byte gzip header); 0xff there is an invalid
  // block type (3).
  gz[10] = 0xff;
  const std::string path = write_raw("corrupt.idx.gz", gz);
  EXPECT_THAT([&] { tf::data::read_idx(path); },
              ::testing::ThrowsMessage<tf::DataLossError>(AllOf(HasSubstr(path), HasSubstr("zlib"))));
}

TEST_F(ReadIdx, GzipChecksumMismatchThrowsDataLoss) {
  Bytes gz = read_file(write_gzip("good.idx.gz", small_uint8()));
  gz[gz.size() - 8] ^= 0x01;  // the CRC-32 in the 8-byte trailer
  const std::string path = write_raw("bad_crc.idx.gz", gz);
  EXPECT_THAT([&] { tf::data::read_idx(path); },
              ::testing::ThrowsMessage<tf::DataLossError>(HasSubstr("zlib")));
}

TEST_F(ReadIdx, EveryCorruptionOfEveryByteEndsInATypedErrorOrATensor) {
  // No crash and nothing but tapeflow errors, whichever byte of a small gzip file is damaged.
  const Bytes good = read_file(write_gzip("good.idx.gz", small_uint8()));
  for (std::size_t i = 0; i < good.size(); ++i) {
    for (unsigned char flip : {0x01, 0x80, 0xff}) {
      Bytes bad = good;
      bad[i] ^= flip;
      const std::string path = write_raw("fuzz.idx.gz", bad);
      try {
        (void)tf::data::read_idx(path);
      } catch (const tf::Error&) {
      }
    }
  }
}

TEST(PixelsToFloat, ScalesTo0To1AndAppendsAChannelAxis) {
  const tf::Tensor px = tf::constant(std::vector<std::int32_t>{0, 51, 255, 102}, tf::Shape{1, 2, 2});
  const tf::Tensor f = tf::data::pixels_to_float(px);
  EXPECT_EQ(f.dtype(), tf::DType::Float32);
  EXPECT_EQ(f.shape(), (tf::Shape{1, 2, 2, 1}));
  EXPECT_EQ(f.to_vector<float>(), (std::vector<float>{0.f, 0.2f, 1.f, 0.4f}));
}

TEST(PixelsToFloat, RejectsValuesOutside0To255AndOtherDtypes) {
  EXPECT_THAT(
      [] {
        tf::data::pixels_to_float(tf::constant({0, 256}));
      },
      ::testing::ThrowsMessage<tf::InvalidArgumentError>(
          AllOf(HasSubstr("[pixels_to_float]"), HasSubstr("256"), HasSubstr("position 1"))));
  EXPECT_THROW(tf::data::pixels_to_float(tf::constant({-1})), tf::InvalidArgumentError);
  EXPECT_THAT([] { tf::data::pixels_to_float(tf::constant({1.f})); },
              ::testing::ThrowsMessage<tf::InvalidArgumentError>(HasSubstr("float32")));
  EXPECT_THROW(tf::data::pixels_to_float(tf::constant(3)), tf::InvalidArgumentError);
}
