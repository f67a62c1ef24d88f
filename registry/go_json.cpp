#include "registry/go_json.h"

#include <charconv>
#include <cmath>
#include <cstdio>
#include <cstdlib>

namespace vkllm::registry {

std::string go_json_escape(std::string text) {
  std::string out;
  out.reserve(text.size());
  for (size_t i = 0; i < text.size(); ++i) {
    char c = text[i];
    if (c == '<')
      out += "\\u003c";
    else if (c == '>')
      out += "\\u003e";
    else if (c == '&')
      out += "\\u0026";
    else if (c == '\xe2' && i + 2 < text.size() && text[i + 1] == '\x80' &&
             (text[i + 2] == '\xa8' || text[i + 2] == '\xa9')) {
      out += text[i + 2] == '\xa8' ? "\\u2028" : "\\u2029";
      i += 2;
    } else {
      out.push_back(c);
    }
  }
  return out;
}

std::string go_json_dump(const nlohmann::ordered_json& value) {
  return go_json_escape(value.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace));
}

namespace {

// fmt's %v of a float64: strconv 'g' with the shortest digits, which switches to exponent
// form when the decimal exponent is < -4 or >= 6 ("1e+06", "1.234567e+06", "0.0001").
std::string go_float(double v) {
  if (v == 0) return std::signbit(v) ? "-0" : "0";
  char buf[64];
  auto [end, ec] = std::to_chars(buf, buf + sizeof buf, v, std::chars_format::scientific);
  std::string sci(buf, end);  // e.g. "-1.2345e+06"
  bool negative = sci[0] == '-';
  if (negative) sci.erase(0, 1);
  size_t e = sci.find('e');
  std::string mantissa = sci.substr(0, e);
  int exponent = std::stoi(sci.substr(e + 1));
  std::string digits;
  for (char c : mantissa)
    if (c != '.') digits.push_back(c);
  std::string out;
  if (exponent < -4 || exponent >= 6) {
    char exp_buf[16];
    std::snprintf(exp_buf, sizeof exp_buf, "e%c%02d", exponent < 0 ? '-' : '+', std::abs(exponent));
    out = mantissa + exp_buf;
  } else if (exponent < 0) {
    out = "0." + std::string(static_cast<size_t>(-exponent - 1), '0') + digits;
  } else {
    size_t point = static_cast<size_t>(exponent) + 1;
    out = digits.size() <= point ? digits + std::string(point - digits.size(), '0')
                                 : digits.substr(0, point) + "." + digits.substr(point);
  }
  return negative ? "-" + out : out;
}

}  // namespace

std::string go_quote(const std::string& s) {
  std::string out = "\"";
  for (unsigned char c : s) {
    switch (c) {
      case '"':
        out += "\\\"";
        break;
      case '\\':
        out += "\\\\";
        break;
      case '\n':
        out += "\\n";
        break;
      case '\t':
        out += "\\t";
        break;
      case '\r':
        out += "\\r";
        break;
      default:
        if (c < 0x20 || c == 0x7f) {
          char buf[8];
          std::snprintf(buf, sizeof buf, "\\x%02x", c);
          out += buf;
        } else {
          out.push_back(static_cast<char>(c));
        }
    }
  }
  return out + "\"";
}

std::string go_format_value(const nlohmann::ordered_json& value) {
  if (value.is_string()) return value.get<std::string>();
  if (value.is_boolean()) return value.get<bool>() ? "true" : "false";
  if (value.is_number()) return go_float(value.get<double>());
  if (value.is_null()) return "<nil>";
  return value.dump();
}

std::string go_format_value_sharp(const nlohmann::ordered_json& value) {
  if (value.is_string()) return go_quote(value.get<std::string>());
  return go_format_value(value);
}

}  // namespace vkllm::registry
