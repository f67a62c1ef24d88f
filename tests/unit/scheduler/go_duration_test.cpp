#include "server/scheduler/go_duration.h"

#include <gtest/gtest.h>

#include "server/scheduler/model_manager.h"

namespace vkllm::sched {
namespace {

using namespace std::chrono;

TEST(GoDuration, ParsesGoDurations) {
  EXPECT_EQ(parse_go_duration("0"), nanoseconds(0));
  EXPECT_EQ(parse_go_duration("300ms"), milliseconds(300));
  EXPECT_EQ(parse_go_duration("1.5h"), minutes(90));
  EXPECT_EQ(parse_go_duration("1h30m"), minutes(90));
  EXPECT_EQ(parse_go_duration("-1m"), -minutes(1));
  EXPECT_EQ(parse_go_duration("2us"), microseconds(2));
  EXPECT_EQ(parse_go_duration("10s"), seconds(10));
}

TEST(GoDuration, RejectsWithGoMessages) {
  try {
    parse_go_duration("300");
    FAIL();
  } catch (const std::invalid_argument& e) {
    EXPECT_STREQ(e.what(), "time: missing unit in duration \"300\"");
  }
  EXPECT_THROW(parse_go_duration(""), std::invalid_argument);
  EXPECT_THROW(parse_go_duration("5x"), std::invalid_argument);
  EXPECT_THROW(parse_go_duration("m"), std::invalid_argument);
  EXPECT_THROW(parse_go_duration("99999999999h"), std::invalid_argument);
}

TEST(GoDuration, EnvironmentTakesBareSecondsToo) {
  EXPECT_EQ(parse_keep_alive_env("300"), seconds(300));
  EXPECT_EQ(parse_keep_alive_env("-1"), seconds(-1));
  EXPECT_EQ(parse_keep_alive_env("5m"), minutes(5));
}

}  // namespace
}  // namespace vkllm::sched
