// Converting one GGUF metadata Value to the C++ type a caller asks for, with the wording
// GgufError uses when it cannot ("is array of string, not u32", "value 300 does not fit in u8").
// Shared by the parser (general.alignment) and GgufFile's typed getters. Internal to gguf/.
#pragma once

#include <optional>
#include <string>
#include <type_traits>
#include <utility>
#include <variant>

#include "engine/gguf/gguf_file.h"

namespace vkllm::gguf::detail {

template <typename T>
constexpr bool is_int_v = std::is_integral_v<T> && !std::is_same_v<T, bool>;

// Integer value of v if it holds any integer type (not bool).
template <typename To>
std::optional<To> integer_as(const Value& v, bool& is_integer) {
  std::optional<To> out;
  is_integer = false;
  std::visit(
      [&](const auto& x) {
        using X = std::decay_t<decltype(x)>;
        if constexpr (is_int_v<X>) {
          is_integer = true;
          if (std::in_range<To>(x)) out = static_cast<To>(x);
        }
      },
      v.v);
  return out;
}

inline std::string type_of(const Value& v) {
  if (v.type() == ValueType::ARRAY) {
    const auto& a = std::get<std::shared_ptr<Array>>(v.v);
    return "array of " + value_type_name(a->element_type);
  }
  return value_type_name(v.type());
}

inline std::string value_text_for_error(const Value& v) {
  std::string s;
  std::visit(
      [&](const auto& x) {
        using X = std::decay_t<decltype(x)>;
        if constexpr (is_int_v<X>) s = std::to_string(x);
      },
      v.v);
  return s;
}

template <typename T>
std::string requested_name() {
  if constexpr (std::is_same_v<T, std::string>) {
    return "string";
  } else if constexpr (std::is_same_v<T, bool>) {
    return "bool";
  } else if constexpr (std::is_same_v<T, float>) {
    return "f32";
  } else if constexpr (std::is_same_v<T, double>) {
    return "f64";
  } else {
    constexpr bool s = std::is_signed_v<T>;
    if constexpr (sizeof(T) == 1) return s ? "i8" : "u8";
    if constexpr (sizeof(T) == 2) return s ? "i16" : "u16";
    if constexpr (sizeof(T) == 4) return s ? "i32" : "u32";
    return s ? "i64" : "u64";
  }
}

// Converts one value to T, or explains why not (returns nullopt and fills why).
template <typename T>
std::optional<T> convert(const Value& v, std::string& why) {
  if constexpr (std::is_same_v<T, std::string>) {
    if (auto* s = std::get_if<std::string>(&v.v)) return *s;
  } else if constexpr (std::is_same_v<T, bool>) {
    if (auto* b = std::get_if<bool>(&v.v)) return *b;
  } else if constexpr (std::is_floating_point_v<T>) {
    if (auto* f = std::get_if<float>(&v.v)) return static_cast<T>(*f);
    if (auto* d = std::get_if<double>(&v.v)) return static_cast<T>(*d);
  } else {
    bool is_integer = false;
    auto out = integer_as<T>(v, is_integer);
    if (out) return out;
    if (is_integer) {
      why = "value " + value_text_for_error(v) + " does not fit in " + requested_name<T>();
      return std::nullopt;
    }
  }
  why = "is " + type_of(v) + ", not " + requested_name<T>();
  return std::nullopt;
}

}  // namespace vkllm::gguf::detail
