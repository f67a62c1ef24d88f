#include "server/requests/stop_matcher.h"

#include <random>

#include <gtest/gtest.h>

namespace vkllm::requests {
namespace {

// Feeds `text` in the given pieces; returns what was emitted and whether it stopped.
std::pair<std::string, bool> run(StopMatcher m, const std::vector<std::string>& pieces) {
  std::string out;
  for (const auto& p : pieces) {
    auto r = m.feed(p);
    out += r.text;
    if (r.stopped) return {out, true};
  }
  return {out + m.flush(), false};
}

TEST(StopMatcher, StopStringSplitAcrossPiecesIsNeverEmitted) {
  auto [out, stopped] = run(StopMatcher({"<|end|>"}), {"Hello <|", "en", "d|> world"});
  EXPECT_EQ(out, "Hello ");
  EXPECT_TRUE(stopped);
}

TEST(StopMatcher, HeldTextIsReleasedWhenItStopsLookingLikeAStop) {
  StopMatcher m({"STOP"});
  EXPECT_EQ(m.feed("abc ST").text, "abc ");
  auto r = m.feed("ART");
  EXPECT_EQ(r.text, "START");
  EXPECT_FALSE(r.stopped);
}

TEST(StopMatcher, EarliestOfSeveralStopsWins) {
  auto [out, stopped] = run(StopMatcher({"world", "lo w"}), {"hello world"});
  EXPECT_EQ(out, "hel");
  EXPECT_TRUE(stopped);
}

TEST(StopMatcher, ReportsWhichStopMatched) {
  StopMatcher m({"world", "lo w", "zzz"});
  auto r = m.feed("hello world");
  EXPECT_TRUE(r.stopped);
  EXPECT_EQ(r.matched, "lo w");  // the earliest in the text, not in the list
  StopMatcher none({"x"});
  EXPECT_EQ(none.feed("abc").matched, "");
}

TEST(StopMatcher, FlushReturnsAHeldPrefixAtTheEnd) {
  auto [out, stopped] = run(StopMatcher({"</s>"}), {"answer </"});
  EXPECT_EQ(out, "answer </");
  EXPECT_FALSE(stopped);
}

TEST(StopMatcher, NoStopsPassesEverythingThrough) {
  auto [out, stopped] = run(StopMatcher({"", ""}), {"a", "b"});
  EXPECT_EQ(out, "ab");
  EXPECT_FALSE(stopped);
}

// Whatever the cut points, the output equals the text before the first stop string.
TEST(StopMatcher, RandomCutPointsGiveTheWholeStringResult) {
  const unsigned seed = std::random_device{}();
  SCOPED_TRACE("seed " + std::to_string(seed));
  std::mt19937 rng(seed);
  const std::vector<std::string> stops{"\n\nUser:", "###", "<|eot_id|>"};
  const std::string alphabet = "ab #\nUser:<|eot_id>";
  for (int round = 0; round < 300; ++round) {
    std::string text;
    const int n = std::uniform_int_distribution<>(0, 60)(rng);
    for (int i = 0; i < n; ++i) text += alphabet[rng() % alphabet.size()];
    size_t first = std::string::npos;
    for (const auto& s : stops) first = std::min(first, text.find(s));
    std::vector<std::string> pieces;
    for (size_t i = 0; i < text.size();) {
      const size_t k = std::uniform_int_distribution<size_t>(1, 5)(rng);
      pieces.push_back(text.substr(i, k));
      i += k;
    }
    auto [out, stopped] = run(StopMatcher(stops), pieces);
    EXPECT_EQ(stopped, first != std::string::npos) << text;
    EXPECT_EQ(out, text.substr(0, first)) << text;
  }
}

}  // namespace
}  // namespace vkllm::requests
