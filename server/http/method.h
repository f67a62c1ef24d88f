// HTTP request methods the server distinguishes.
#pragma once

#include <string_view>

namespace vkllm::http {

enum class Method { get, head, post, put, patch, del, options, other };

Method parse_method(std::string_view name);  // case-sensitive, like HTTP
std::string_view method_name(Method m);

}  // namespace vkllm::http
