// The one context-shift rule of the scheduler and the request path (context_shift.h).
#include "server/scheduler/context_shift.h"

#include <numeric>

#include <gtest/gtest.h>

namespace vkllm::sched {
namespace {

std::vector<int32_t> iota(int32_t n) {
  std::vector<int32_t> v(static_cast<size_t>(n));
  std::iota(v.begin(), v.end(), 0);
  return v;
}

TEST(ContextShift, TokensThatFitAreUntouched) {
  auto t = iota(8);
  shift_context(t, 2, 8);
  EXPECT_EQ(t, iota(8));
}

TEST(ContextShift, AFullWindowLosesTheOlderHalfAfterTheKeptStart) {
  // A generating sequence one token past its window of 8, keeping 2: (9 - 2) / 2 = 3 go.
  auto t = iota(9);
  shift_context(t, 2, 8);
  EXPECT_EQ(t, (std::vector<int32_t>{0, 1, 5, 6, 7, 8}));
}

TEST(ContextShift, ALongPromptIsHalvedUntilItFitsKeepingItsStartAndNewestTokens) {
  // 100 tokens into 31 keeping 5: 47 go (53 left, too many), then 24 more: 29 remain.
  auto t = iota(100);
  shift_context(t, 5, 31);
  ASSERT_EQ(t.size(), 29u);
  EXPECT_EQ(std::vector<int32_t>(t.begin(), t.begin() + 5), iota(5));
  EXPECT_EQ(t[5], 100 - 24);
  EXPECT_EQ(t.back(), 99);
}

TEST(ContextShift, AtLeastOneTokenGoesAndKeepLeavesRoom) {
  auto t = iota(9);
  shift_context(t, 100, 8);  // keep past the window: at most limit - 1 stay fixed
  ASSERT_EQ(t.size(), 8u);
  EXPECT_EQ(t.back(), 8);
  EXPECT_EQ(t[6], 6);
}

TEST(ContextShift, KeepCountsBosBesideNumKeepAndTheWholePromptWhenNegative) {
  EXPECT_EQ(shift_keep(4, 20, false, 32), 4u);
  EXPECT_EQ(shift_keep(4, 20, true, 32), 5u);
  EXPECT_EQ(shift_keep(-1, 20, true, 32), 20u);  // the prompt already holds its BOS
  EXPECT_EQ(shift_keep(-1, 50, false, 32), 31u);
  EXPECT_EQ(shift_keep(40, 20, false, 32), 31u);
}

}  // namespace
}  // namespace vkllm::sched
