// tf::data::Dataset's file sources: CSV, text lines (as code points) and IDX files, and the
// DataLossError each gives for a malformed file.

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <fstream>

#include "data/dataset_testing.h"
#include "support/errors.h"
#include "support/files.h"
#include "support/temp_dir.h"
#include "tapeflow/tapeflow.h"

namespace tf = tapeflow;
using ::testing::AllOf;
using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::IsEmpty;
using tf::data::Dataset;
using tf::data::Element;

namespace {

std::string write_text(const tf::testing::TempDir& dir, const std::string& name, const std::string& text) {
  const std::string path = dir / name;
  std::ofstream(path, std::ios::binary) << text;
  return path;
}

std::vector<Element> elements(const Dataset& ds) {
  std::vector<Element> out;
  for (const Element& e : ds) out.push_back(e);
  return out;
}

}  // namespace

TEST(DatasetFiles, CsvGivesAScalarPerColumnWithTheColumnsInferredType) {
  tf::testing::TempDir dir;
  const std::string path = write_text(dir, "a.csv", "id, weight,label\n1, 0.5, 3\n2, 1e2,4\r\n");
  const std::vector<Element> rows = elements(Dataset::from_csv(path, {.header = true}));
  ASSERT_EQ(rows.size(), 2u);
  ASSERT_EQ(rows[1].size(), 3u);
  EXPECT_EQ(rows[1][0].dtype(), tf::int32);
  EXPECT_EQ(rows[1][1].dtype(), tf::float32);
  EXPECT_EQ(rows[1][1].shape(), tf::Shape{});
  EXPECT_EQ(rows[1][1].item<float>(), 100.f);
  EXPECT_EQ(rows[1][2].item<std::int32_t>(), 4);
  EXPECT_EQ(Dataset::from_csv(path, {.header = true}).cardinality(), 2);
}

TEST(DatasetFiles, CsvPassesOverEmptyLinesAndTakesAPlusSign) {
  tf::testing::TempDir dir;
  const std::string path = write_text(dir, "a.csv", "1,2\n\n+3,-4\n\n");
  EXPECT_THAT(tf::testing::ints(Dataset::from_csv(path).batch(2)), ElementsAre(1, 3));
}

TEST(DatasetFiles, CsvTakesColumnTypesAndADelimiter) {
  tf::testing::TempDir dir;
  const std::string path = write_text(dir, "a.tsv", "1\t2\n3\t4\n");
  const Dataset ds = Dataset::from_csv(path, {.field_delim = '\t', .column_types = {tf::float64, tf::int64}});
  const std::vector<Element> batch = elements(ds.batch(2));
  EXPECT_EQ(batch[0][0].dtype(), tf::float64);
  EXPECT_THAT(batch[0][1].to_vector<std::int64_t>(), ElementsAre(2, 4));
}

// GCC 12 warns (falsely) that the table's CsvOptions temporaries may be destroyed uninitialized.
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#endif
TEST(DatasetFiles, BadCsvFilesNameTheFileLineAndColumn) {
  tf::testing::TempDir dir;
  struct Row {
    const char* mistake;
    std::string text;
    tf::data::CsvOptions options;
    std::vector<std::string> message_parts;
  };
  for (const Row& row : std::vector<Row>{
           {"a word in an int column",
            "1,2\n3,x\n",
            {.column_types = {tf::int32, tf::int32}},
            {"line 2, column 2", "'x' is not a int32 number"}},
           {"a word in an inferred column", "1,2\n3,abc\n", {}, {"line 2, column 2", "'abc'", "float32"}},
           {"a fraction in an int column",
            "1.5\n",
            {.column_types = {tf::int32}},
            {"line 1, column 1", "'1.5'"}},
           {"an empty field", "1,,3\n", {}, {"line 1, column 2", "''"}},
           {"a short line", "1,2\n3\n", {}, {"line 2 has 1 fields", "line 1 has 2"}},
           {"no rows", "a,b\n", {.header = true}, {"has no rows"}},
       }) {
    const std::string path = write_text(dir, "bad.csv", row.text);
    const std::string message =
        tf::testing::error_of<tf::DataLossError>([&] { Dataset::from_csv(path, row.options); });
    EXPECT_THAT(message, AllOf(HasSubstr("[Dataset.from_csv]"), HasSubstr(path))) << row.mistake;
    for (const std::string& part : row.message_parts) EXPECT_THAT(message, HasSubstr(part)) << row.mistake;
  }
  const std::string path = write_text(dir, "ok.csv", "1,2\n");
  EXPECT_THAT(tf::testing::error_of([&] { Dataset::from_csv(path, {.column_types = {tf::int32}}); }),
              HasSubstr("2 columns, but column_types gives 1"));
  EXPECT_THAT(tf::testing::error_of([&] {
                Dataset::from_csv(path, {.column_types = {tf::int32, tf::bool_}});
              }),
              HasSubstr("column 2 has type bool"));
  EXPECT_THROW(Dataset::from_csv(dir / "missing.csv"), tf::FailedPreconditionError);
}
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic pop
#endif

TEST(DatasetFiles, TextLinesAreCodePoints) {
  tf::testing::TempDir dir;
  const std::string path = write_text(dir, "a.txt", "ab\n\nh\xC3\xA9\r\nlast");  // "hé" in UTF-8, CRLF
  const std::vector<Element> lines = elements(Dataset::text_line_dataset(path));
  ASSERT_EQ(lines.size(), 4u);
  EXPECT_THAT(lines[0][0].to_vector<std::int32_t>(), ElementsAre('a', 'b'));
  EXPECT_EQ(lines[1][0].shape(), tf::Shape{0});
  EXPECT_THAT(lines[2][0].to_vector<std::int32_t>(), ElementsAre('h', 0xE9));
  EXPECT_THAT(lines[3][0].to_vector<std::int32_t>(), ElementsAre('l', 'a', 's', 't'));
  EXPECT_THAT(elements(Dataset::text_line_dataset(write_text(dir, "empty.txt", ""))), IsEmpty());
}

TEST(DatasetFiles, TextLinesRejectWhatIsNotUtf8AtItsByteOffset) {
  tf::testing::TempDir dir;
  struct Row {
    const char* mistake;
    std::string text;
    std::string offset;
  };
  for (const Row& row : std::vector<Row>{{"a lone continuation byte", "ok\nab\x80\n", "byte offset 5"},
                                         {"a truncated sequence", "\xC3", "byte offset 0"},
                                         {"an overlong '/'", "x\xC0\xAF", "byte offset 1"},
                                         {"a surrogate", "\xED\xA0\x80", "byte offset 0"},
                                         {"a byte never in UTF-8", "\xFF", "byte offset 0"}}) {
    const std::string path = write_text(dir, "bad.txt", row.text);
    const std::string message = tf::testing::error_of<tf::DataLossError>([&] {
      for (const Element& e : Dataset::text_line_dataset(path)) (void)e;
    });
    EXPECT_THAT(message,
                AllOf(HasSubstr("[Dataset.text_line_dataset]"), HasSubstr(path), HasSubstr(row.offset)))
        << row.mistake;
  }
}

TEST(DatasetFiles, TextLinesGoOnAfterABadLineAndReportAMissingFileWhenIterated) {
  tf::testing::TempDir dir;
  tf::data::Iterator it = Dataset::text_line_dataset(write_text(dir, "a.txt", "\xFF\nok\n")).make_iterator();
  EXPECT_THROW(it.next(), tf::DataLossError);
  EXPECT_THAT(it.next()->at(0).to_vector<std::int32_t>(), ElementsAre('o', 'k'));
  const Dataset missing = Dataset::text_line_dataset(dir / "missing.txt");
  EXPECT_THAT(tf::testing::error_of<tf::FailedPreconditionError>([&] { missing.make_iterator().next(); }),
              HasSubstr("missing.txt"));
}

TEST(DatasetFiles, FromIdxSlicesTheFile) {
  tf::testing::TempDir dir;
  // uint8, 2 dimensions (3, 2): the IDX header, then the bytes 0..5.
  tf::testing::write_bytes(dir / "x.idx", {0, 0, 0x08, 2, 0, 0, 0, 3, 0, 0, 0, 2, 0, 1, 2, 3, 4, 5});
  const std::vector<Element> rows = elements(Dataset::from_idx(dir / "x.idx"));
  ASSERT_EQ(rows.size(), 3u);
  EXPECT_THAT(rows[2][0].to_vector<std::int32_t>(), ElementsAre(4, 5));
  EXPECT_THROW(Dataset::from_idx(dir / "missing.idx"), tf::FailedPreconditionError);
}
