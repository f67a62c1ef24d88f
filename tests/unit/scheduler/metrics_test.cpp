#include "server/scheduler/metrics.h"

#include <gtest/gtest.h>

namespace vkllm::sched {
namespace {

TEST(Metrics, RendersPrometheusTextWithLabelsAndHistograms) {
  Metrics m;
  m.add("vkllm_generated_tokens_total", {{"model", "a:latest"}}, 3);
  m.add("vkllm_generated_tokens_total", {{"model", "a:latest"}}, 2);
  m.set("vkllm_kv_blocks", {{"state", "used"}, {"model", "a\"b"}}, 7);
  m.observe("vkllm_step_tokens", {{"model", "a:latest"}}, 3);
  m.observe("vkllm_step_tokens", {{"model", "a:latest"}}, 600);
  const std::string text = m.render();
  EXPECT_NE(text.find("# TYPE vkllm_generated_tokens_total counter\n"), std::string::npos);
  EXPECT_NE(text.find("vkllm_generated_tokens_total{model=\"a:latest\"} 5\n"), std::string::npos);
  // Labels sorted by name, quotes escaped.
  EXPECT_NE(text.find("vkllm_kv_blocks{model=\"a\\\"b\",state=\"used\"} 7\n"), std::string::npos);
  // Buckets are cumulative: 3 falls in le=4 and above, 600 only in le=1024 and above.
  EXPECT_NE(text.find("vkllm_step_tokens_bucket{model=\"a:latest\",le=\"2\"} 0\n"),
            std::string::npos);
  EXPECT_NE(text.find("vkllm_step_tokens_bucket{model=\"a:latest\",le=\"4\"} 1\n"),
            std::string::npos);
  EXPECT_NE(text.find("vkllm_step_tokens_bucket{model=\"a:latest\",le=\"1024\"} 2\n"),
            std::string::npos);
  EXPECT_NE(text.find("vkllm_step_tokens_bucket{model=\"a:latest\",le=\"+Inf\"} 2\n"),
            std::string::npos);
  EXPECT_NE(text.find("vkllm_step_tokens_sum{model=\"a:latest\"} 603\n"), std::string::npos);
  EXPECT_NE(text.find("vkllm_step_tokens_count{model=\"a:latest\"} 2\n"), std::string::npos);
  EXPECT_EQ(m.value("vkllm_generated_tokens_total", {{"model", "a:latest"}}), 5);
}

TEST(Metrics, ForgetDropsAnUnloadedModelsSeries) {
  Metrics m;
  m.set("vkllm_kv_blocks", {{"model", "a"}, {"state", "free"}}, 1);
  m.set("vkllm_kv_blocks", {{"model", "b"}, {"state", "free"}}, 2);
  m.forget("vkllm_kv_blocks", {"model", "a"});
  EXPECT_EQ(m.render().find("model=\"a\""), std::string::npos);
  EXPECT_EQ(m.value("vkllm_kv_blocks", {{"model", "b"}, {"state", "free"}}), 2);
}

TEST(Metrics, UndeclaredNamesAreAProgrammingError) {
  Metrics m;
  EXPECT_THROW(m.add("vkllm_no_such_metric", {}), std::logic_error);
}

}  // namespace
}  // namespace vkllm::sched
