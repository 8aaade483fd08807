// The broadcasting kernels (zip, zip3) against a reference that indexes every operand element by
// element: for every pair of shapes of rank up to 4 with dims in {1, 2, 3} (and missing leading
// dims), which covers the dimension merging of BroadcastWalk (size-1 dims, runs of broadcast and
// contiguous dims on each side).

#include "kernels/cpu/elementwise.h"

#include <gtest/gtest.h>

#include <vector>

#include "tapeflow/errors.h"
#include "tapeflow/shape.h"

namespace tapeflow::cpu {
namespace {

std::vector<Shape> all_shapes() {
  std::vector<Shape> shapes{Shape()};
  const std::int64_t sizes[] = {1, 2, 3};
  for (int rank = 1; rank <= 4; ++rank) {
    std::vector<std::int64_t> dims(static_cast<std::size_t>(rank), 1);
    for (int code = 0; code < 81; ++code) {  // 3^4 choices, trimmed to rank
      int c = code;
      for (auto& d : dims) {
        d = sizes[c % 3];
        c /= 3;
      }
      if (c != 0) continue;  // only the codes that fit this rank
      shapes.emplace_back(std::span<const std::int64_t>(dims));
    }
  }
  return shapes;
}

/// Element index into an operand of shape s for the output multi-index idx (NumPy broadcasting).
std::int64_t operand_index(const Shape& s, const Shape& out, std::int64_t flat) {
  std::int64_t index = 0, stride = 1;
  for (int o = out.rank() - 1, i = s.rank() - 1; o >= 0; --o, --i) {
    const std::int64_t coord = flat % out[o];
    flat /= out[o];
    if (i < 0) continue;
    if (s[i] != 1) index += coord * stride;
    stride *= s[i];
  }
  return index;
}

std::vector<double> iota(const Shape& s, double start) {
  std::vector<double> v(static_cast<std::size_t>(s.num_elements()));
  for (std::size_t i = 0; i < v.size(); ++i) v[i] = start + static_cast<double>(i);
  return v;
}

TEST(Zip, MatchesElementByElementBroadcastingForEveryShapePair) {
  const auto shapes = all_shapes();
  int checked = 0;
  for (const Shape& sa : shapes)
    for (const Shape& sb : shapes) {
      Shape so;
      try {
        so = broadcast_shapes(sa, sb, "test");
      } catch (const Error&) {
        continue;
      }
      const auto a = iota(sa, 1), b = iota(sb, 100);
      std::vector<double> out(static_cast<std::size_t>(so.num_elements()));
      zip(a.data(), sa, b.data(), sb, out.data(), so, [](double x, double y) { return x * 1000 + y; });
      for (std::int64_t i = 0; i < so.num_elements(); ++i)
        ASSERT_EQ(out[static_cast<std::size_t>(i)],
                  a[static_cast<std::size_t>(operand_index(sa, so, i))] * 1000 +
                      b[static_cast<std::size_t>(operand_index(sb, so, i))])
            << sa.to_string() << " with " << sb.to_string() << " at " << i;
      ++checked;
    }
  EXPECT_GT(checked, 1000);
}

TEST(Zip3, MatchesElementByElementBroadcasting) {
  const auto shapes = all_shapes();
  const Shape third[] = {Shape(), Shape{3}, Shape{2, 1}, Shape{1, 3, 1}};
  int checked = 0;
  for (const Shape& sa : shapes)
    for (const Shape& sb : shapes)
      for (const Shape& sc : third) {
        Shape so;
        try {
          so = broadcast_shapes(broadcast_shapes(sa, sb, "test"), sc, "test");
        } catch (const Error&) {
          continue;
        }
        const auto a = iota(sa, 1), b = iota(sb, 100), c = iota(sc, 10000);
        std::vector<double> out(static_cast<std::size_t>(so.num_elements()));
        zip3(a.data(), sa, b.data(), sb, c.data(), sc, out.data(), so,
             [](double x, double y, double z) { return x * 1e6 + y * 1e3 + z; });
        for (std::int64_t i = 0; i < so.num_elements(); ++i)
          ASSERT_EQ(out[static_cast<std::size_t>(i)],
                    a[static_cast<std::size_t>(operand_index(sa, so, i))] * 1e6 +
                        b[static_cast<std::size_t>(operand_index(sb, so, i))] * 1e3 +
                        c[static_cast<std::size_t>(operand_index(sc, so, i))])
              << sa.to_string() << ", " << sb.to_string() << ", " << sc.to_string() << " at " << i;
        ++checked;
      }
  EXPECT_GT(checked, 1000);
}

}  // namespace
}  // namespace tapeflow::cpu
