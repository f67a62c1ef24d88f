// env_value: blanks, then quotes, come off the ends (Ollama's envconfig), nothing else changes.
#include <gtest/gtest.h>

#include <cstdlib>

#include "registry/env_value.h"

namespace vkllm::registry {
namespace {

TEST(EnvValue, StripsBlanksThenQuotesAndIsEmptyWhenUnset) {
  const char* name = "VKLLM_TEST_ENV_VALUE";
  unsetenv(name);
  EXPECT_EQ(env_value(name), "");
  setenv(name, " \t\"/srv/my models\"\n", 1);
  EXPECT_EQ(env_value(name), "/srv/my models");
  setenv(name, "' 1 '", 1);
  EXPECT_EQ(env_value(name), " 1 ");  // blanks inside the quotes stay
  setenv(name, "a\"b", 1);
  EXPECT_EQ(env_value(name), "a\"b");
  setenv(name, "\"\"", 1);
  EXPECT_EQ(env_value(name), "");
  unsetenv(name);
}

}  // namespace
}  // namespace vkllm::registry
