#include "registry/insecure_registries.h"

#include <gtest/gtest.h>

#include <stdexcept>

using vkllm::registry::InsecureRegistries;
using vkllm::registry::ModelName;

namespace {

bool allows(const InsecureRegistries& r, const char* name) {
  return r.allows(ModelName::parse(name));
}

TEST(InsecureRegistries, EmptyListAllowsNothing) {
  const auto r = InsecureRegistries::parse("");
  EXPECT_TRUE(r.empty());
  EXPECT_FALSE(allows(r, "registry.svc:5000/models/tiny:v1"));
  EXPECT_FALSE(allows(r, "llama3.2"));
  EXPECT_TRUE(InsecureRegistries::parse(" , ,").empty());
}

TEST(InsecureRegistries, EntryWithPortMatchesThatHostAndPortOnly) {
  const auto r = InsecureRegistries::parse("registry.svc:5000, Other.Example:8080");
  EXPECT_TRUE(allows(r, "registry.svc:5000/models/tiny:v1"));
  EXPECT_TRUE(allows(r, "REGISTRY.svc:5000/models/tiny"));
  EXPECT_FALSE(allows(r, "registry.svc:5001/models/tiny"));
  EXPECT_FALSE(allows(r, "registry.svc/models/tiny"));
  EXPECT_TRUE(allows(r, "other.example:8080/a/b:c"));
  EXPECT_FALSE(allows(r, "registry.svc.evil:5000/models/tiny"));
  EXPECT_FALSE(allows(r, "tiny"));  // registry.ollama.ai
}

TEST(InsecureRegistries, EntryWithoutPortMatchesEveryPort) {
  const auto r = InsecureRegistries::parse("registry.svc");
  EXPECT_TRUE(allows(r, "registry.svc/models/tiny"));
  EXPECT_TRUE(allows(r, "registry.svc:5000/models/tiny"));
  EXPECT_FALSE(allows(r, "registry.svc2:5000/models/tiny"));
}

TEST(InsecureRegistries, IpAddresses) {
  const auto r = InsecureRegistries::parse("10.0.0.7:5000,[fd00::1]:5000");
  EXPECT_TRUE(allows(r, "10.0.0.7:5000/m/x"));
  EXPECT_FALSE(allows(r, "10.0.0.70:5000/m/x"));
}

TEST(InsecureRegistries, RejectsWhatIsNotHostAndPort) {
  for (const char* bad :
       {"http://registry:5000", "registry:5000/path", "registry:port", "registry:0",
        "registry:70000", "reg istry:5000", "registry:", "[::1", "[::1]x"}) {
    EXPECT_THROW(InsecureRegistries::parse(bad), std::invalid_argument) << bad;
  }
  try {
    InsecureRegistries::parse("ok:1,http://bad");
    FAIL() << "no error";
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("'http://bad'"), std::string::npos) << e.what();
  }
}

}  // namespace
