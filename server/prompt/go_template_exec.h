// Internal interface between the executor and the builtin functions of go_template_funcs.cpp.
#pragma once

#include <cstddef>
#include <string>
#include <vector>

#include "server/prompt/go_value.h"

namespace vkllm::prompt {

// An execution error at the current node; the executor adds the location.
struct ExecError {
  std::string msg;
};

// Calls an eagerly evaluated builtin (not and/or); throws ExecError.
Value go_call_function(const std::string& name, const std::vector<Value>& args, size_t max_output);
// fmt.Sprint / Sprintf / Sprintln over values.
std::string go_sprint(const std::vector<Value>& args);
std::string go_sprintf(const std::string& format, const std::vector<Value>& args,
                       size_t max_output);

}  // namespace vkllm::prompt
