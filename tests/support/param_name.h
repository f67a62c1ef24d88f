// Names for parameterised tests over test-data names ("llama-spm", "phi-3"): gtest allows only
// letters, digits and '_', so everything else becomes '_'.
#pragma once

#include <gtest/gtest.h>

#include <cctype>
#include <string>

namespace vkllm::test {

inline std::string param_name(std::string text) {
  for (char& c : text) {
    if (!std::isalnum(static_cast<unsigned char>(c))) c = '_';
  }
  return text;
}

// The name generator for INSTANTIATE_TEST_SUITE_P.
struct ParamName {
  template <class Param>
  std::string operator()(const ::testing::TestParamInfo<Param>& info) const {
    return param_name(std::string(info.param));
  }
};

}  // namespace vkllm::test
