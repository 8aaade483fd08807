// Gradient-check rows for the scans (src/ops/scan.cpp), sorting (src/ops/sort.cpp) and segment
// reductions (src/ops/segment.cpp). The sorts, top_k and the segment maxima and minima take
// samples without near ties (distinct_values), where they are differentiable.

#include "ops/op_cases.h"

namespace tapeflow::testing {

namespace {
using In = std::vector<Tensor>;

const std::vector<std::vector<Shape>> kLines = {{{5}}, {{2, 3}}, {{2, 3, 4}}, {{0, 3}}, {{3, 1}}};
// Two ids per row of data: ids (3,) for data (3,), (3, 2) and (3, 2, 2); a negative id skips a row.
const std::vector<std::vector<Shape>> kSegmentData = {{{3}}, {{3, 2}}, {{3, 2, 2}}};
Tensor unsorted_ids() { return constant<std::int32_t>({2, -1, 0}); }
Tensor sorted_ids() { return constant<std::int64_t>({0, 0, 2}); }  // segment 1 is empty
}  // namespace

void add_scan_cases(std::vector<OpCase>& c) {
  for (const bool exclusive : {false, true}) {
    for (const bool reverse : {false, true}) {
      c.push_back({"Cumsum", kLines, [=](const In& x) { return math::cumsum(x[0], 0, exclusive, reverse); }});
      c.push_back(
          {"Cumprod", kLines, [=](const In& x) { return math::cumprod(x[0], -1, exclusive, reverse); }});
      // exp() of an exclusive scan: its first result is -inf, which differences cannot take.
      c.push_back({"CumulativeLogsumexp", kLines, [=](const In& x) {
                     const Tensor y = math::cumulative_logsumexp(x[0], -1, exclusive, reverse);
                     return exclusive ? exp(y) : y;
                   }});
    }
  }
  c.push_back({"Cumprod", {{{2, 3, 4}}}, [](const In& x) { return math::cumprod(x[0], 1, true); }});
  c.push_back({"CumulativeLogsumexp", {{{2, 3, 4}}}, [](const In& x) {
                 return math::cumulative_logsumexp(x[0], 1, false, true);
               }});
  // Coefficients in [-1, 1] (a / 2) keep the recurrence's products small.
  for (const bool reverse : {false, true}) {
    c.push_back({"LinearRecurrence", {{{5}, {5}}, {{2, 4}, {2, 4}}, {{0, 2}, {0, 2}}}, [=](const In& x) {
                   return math::linear_recurrence(x[0] * 0.5, x[1], -1, reverse);
                 }});
  }
  c.push_back({"LinearRecurrence", {{{3, 2, 2}, {3, 2, 2}}}, [](const In& x) {
                 return math::linear_recurrence(x[0] * 0.5, x[1], 0, true);
               }});

  c.push_back({"TakeAlongAxis",
               {{{5}}, {{2, 3}}, {{3, 4, 2}}, {{0, 2}}},
               [](const In& x) { return sort(x[0]); },
               -2,
               2,
               distinct_values(0)});
  c.push_back({"TakeAlongAxis",
               {{{3, 4, 2}}},
               [](const In& x) { return sort(x[0], 1, SortDirection::kDescending); },
               -2,
               2,
               distinct_values(0)});
  c.push_back({"TakeAlongAxis", {{{3, 2}}}, [](const In& x) {  // repeated indices add up
                 return take_along_axis(x[0], constant<std::int64_t>({{0, 1}, {0, 0}, {2, 1}, {2, 2}}), 0);
               }});
  c.push_back({"TakeAlongAxisGrad", {{{4, 2}}}, [](const In& x) {
                 return backward_of(Shape{3, 2}, x[0], [](const Tensor& p) {
                   return take_along_axis(p, constant<std::int32_t>({{0, 1}, {0, 0}, {2, 1}, {2, 2}}), 0);
                 });
               }});
  c.push_back({"TopKV2",
               {{{5}}, {{2, 4}}, {{2, 3, 3}}},
               [](const In& x) { return math::top_k(x[0], 2).values; },
               -2,
               2,
               distinct_values(0)});
  c.push_back({"TopKV2",
               {{{3, 4}}},
               [](const In& x) { return math::top_k(x[0], 4).values; },
               -2,
               2,
               distinct_values(0)});

  c.push_back({"UnsortedSegmentSum", kSegmentData,
               [](const In& x) { return math::unsorted_segment_sum(x[0], unsorted_ids(), 4); }});
  c.push_back({"UnsortedSegmentSum", kSegmentData,
               [](const In& x) { return math::unsorted_segment_mean(x[0], unsorted_ids(), 3); }});
  c.push_back({"UnsortedSegmentSum", {{{2, 3, 2}}}, [](const In& x) {  // two-dimensional ids
                 return math::unsorted_segment_sum(x[0], constant<std::int32_t>({{1, 0, 1}, {-1, 1, 0}}), 2);
               }});
  c.push_back({"UnsortedSegmentMax", kSegmentData,
               [](const In& x) {
                 return math::unsorted_segment_max(x[0], constant<std::int32_t>({1, 0, 1}), 2);
               },
               -2, 2, distinct_values(0)});
  c.push_back({"UnsortedSegmentMin", kSegmentData,
               [](const In& x) {
                 return math::unsorted_segment_min(x[0], constant<std::int32_t>({1, 0, 1}), 2);
               },
               -2, 2, distinct_values(0)});
  c.push_back(
      {"SegmentSum", kSegmentData, [](const In& x) { return math::segment_sum(x[0], sorted_ids()); }});
  c.push_back(
      {"SegmentSum", kSegmentData, [](const In& x) { return math::segment_mean(x[0], sorted_ids()); }});
  c.push_back({"SegmentMax", kSegmentData, [](const In& x) { return math::segment_max(x[0], sorted_ids()); },
               -2, 2, distinct_values(0)});
  c.push_back({"SegmentMin", kSegmentData, [](const In& x) { return math::segment_min(x[0], sorted_ids()); },
               -2, 2, distinct_values(0)});
}

}  // namespace tapeflow::testing
