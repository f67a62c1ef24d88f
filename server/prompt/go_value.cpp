#include "server/prompt/go_value.h"

#include "server/prompt/go_template_literals.h"

#include <charconv>
#include <cmath>
#include <cstdio>

namespace vkllm::prompt {

Value Value::boolean(bool b) {
  Value v;
  v.kind_ = Kind::Bool;
  v.b_ = b;
  return v;
}
Value Value::integer(int64_t i) {
  Value v;
  v.kind_ = Kind::Int;
  v.i_ = i;
  return v;
}
Value Value::floating(double d) {
  Value v;
  v.kind_ = Kind::Float;
  v.d_ = d;
  return v;
}
Value Value::string(std::string s) {
  Value v;
  v.kind_ = Kind::String;
  v.s_ = std::make_shared<const std::string>(std::move(s));
  return v;
}
Value Value::list(List items) {
  Value v;
  v.kind_ = Kind::List;
  v.list_ = std::make_shared<const List>(std::move(items));
  return v;
}
Value Value::map(Map items) {
  Value v;
  v.kind_ = Kind::Map;
  v.map_ = std::make_shared<const Map>(std::move(items));
  return v;
}
Value Value::structure(std::string type_name, std::vector<std::pair<std::string, Value>> fields) {
  Value v;
  v.kind_ = Kind::Struct;
  v.struct_ = std::make_shared<const Struct>(Struct{std::move(type_name), std::move(fields)});
  return v;
}

Value Value::with_stringer(std::string text) const {
  Value v = *this;
  v.stringer_ = std::make_shared<const std::string>(std::move(text));
  return v;
}
Value Value::with_json(std::string json) const {
  Value v = *this;
  v.json_ = std::make_shared<const std::string>(std::move(json));
  return v;
}

const Value* Value::field(const std::string& name) const {
  if (kind_ != Kind::Struct) return nullptr;
  for (const auto& [n, v] : struct_->fields)
    if (n == name) return &v;
  return nullptr;
}

std::string Value::type_name() const {
  switch (kind_) {
    case Kind::Nil:
      return "interface {}";
    case Kind::Bool:
      return "bool";
    case Kind::Int:
      return "int";
    case Kind::Float:
      return "float64";
    case Kind::String:
      return "string";
    case Kind::List:
      return "[]interface {}";
    case Kind::Map:
      return "map[string]interface {}";
    case Kind::Struct:
      return struct_->type_name;
  }
  return "?";
}

bool Value::truthy() const {
  switch (kind_) {
    case Kind::Nil:
      return false;
    case Kind::Bool:
      return b_;
    case Kind::Int:
      return i_ != 0;
    case Kind::Float:
      return d_ != 0;
    case Kind::String:
      return !s_->empty();
    case Kind::List:
      return !list_->empty();
    case Kind::Map:
      return !map_->empty();
    case Kind::Struct:
      return true;
  }
  return false;
}

namespace {

// Shortest round-trip digits of |d| and the decimal exponent: d = 0.DIGITS * 10^(dp).
void shortest_digits(double d, std::string& digits, int& dp) {
  char buf[64];
  auto r = std::to_chars(buf, buf + sizeof buf, std::fabs(d), std::chars_format::scientific);
  std::string s(buf, r.ptr);
  size_t e = s.find('e');
  std::string mant = s.substr(0, e);
  int exp = std::stoi(s.substr(e + 1));
  digits.clear();
  for (char c : mant)
    if (c != '.') digits += c;
  while (digits.size() > 1 && digits.back() == '0') digits.pop_back();
  dp = exp + 1;
}

std::string format_e(bool neg, const std::string& digits, int dp) {
  std::string out = neg ? "-" : "";
  out += digits[0];
  if (digits.size() > 1) {
    out += '.';
    out.append(digits, 1);
  }
  int exp = digits == "0" ? 0 : dp - 1;
  out += 'e';
  out += exp < 0 ? '-' : '+';
  int a = std::abs(exp);
  if (a < 10) out += '0';
  out += std::to_string(a);
  return out;
}

std::string format_f(bool neg, const std::string& digits, int dp) {
  std::string out = neg ? "-" : "";
  if (dp <= 0) {
    out += "0.";
    out += std::string(-dp, '0');
    out += digits;
  } else if (static_cast<size_t>(dp) >= digits.size()) {
    out += digits;
    out += std::string(dp - digits.size(), '0');
  } else {
    out += digits.substr(0, dp) + "." + digits.substr(dp);
  }
  return out;
}

std::string special_float(double d) {
  if (std::isnan(d)) return "NaN";
  return d > 0 ? "+Inf" : "-Inf";
}

}  // namespace

std::string go_format_float(double d) {
  if (!std::isfinite(d)) return special_float(d);
  if (d == 0) return std::signbit(d) ? "-0" : "0";
  std::string digits;
  int dp = 0;
  shortest_digits(d, digits, dp);
  int exp = dp - 1;
  if (exp < -4 || exp >= 6) return format_e(std::signbit(d), digits, dp);
  return format_f(std::signbit(d), digits, dp);
}

std::string go_json_float(double d) {
  if (!std::isfinite(d)) return "null";  // encoding/json refuses these; null keeps output valid
  if (d == 0) return "0";
  std::string digits;
  int dp = 0;
  shortest_digits(d, digits, dp);
  double a = std::fabs(d);
  if (a < 1e-6 || a >= 1e21) {
    std::string s = format_e(std::signbit(d), digits, dp);
    size_t n = s.size();
    if (n >= 4 && s[n - 4] == 'e' && s[n - 3] == '-' && s[n - 2] == '0') s.erase(n - 2, 1);
    return s;
  }
  return format_f(std::signbit(d), digits, dp);
}

namespace {

// Decodes one UTF-8 sequence at s[i]; returns the code point or -1 (invalid) and its length.
int decode_utf8(const std::string& s, size_t i, size_t& len) {
  auto c = static_cast<unsigned char>(s[i]);
  len = 1;
  if (c < 0x80) return c;
  int need = 0;
  int cp = 0;
  if ((c & 0xE0) == 0xC0) {
    need = 1;
    cp = c & 0x1F;
  } else if ((c & 0xF0) == 0xE0) {
    need = 2;
    cp = c & 0x0F;
  } else if ((c & 0xF8) == 0xF0) {
    need = 3;
    cp = c & 0x07;
  } else {
    return -1;
  }
  if (i + need >= s.size()) return -1;
  for (int k = 1; k <= need; ++k) {
    auto cc = static_cast<unsigned char>(s[i + k]);
    if ((cc & 0xC0) != 0x80) return -1;
    cp = (cp << 6) | (cc & 0x3F);
  }
  static const int min_cp[] = {0, 0x80, 0x800, 0x10000};
  if (cp < min_cp[need] || cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF)) return -1;
  len = need + 1;
  return cp;
}

}  // namespace

std::string go_json_string(const std::string& s) {
  static const char* hex = "0123456789abcdef";
  std::string out = "\"";
  for (size_t i = 0; i < s.size();) {
    auto c = static_cast<unsigned char>(s[i]);
    if (c < 0x80) {
      if (const char* e = go_short_escape(c)) {
        out += e;
        ++i;
        continue;
      }
      switch (c) {
        case '<':
        case '>':
        case '&':
          out += "\\u00";
          out += hex[c >> 4];
          out += hex[c & 15];
          break;
        default:
          if (c < 0x20) {
            out += "\\u00";
            out += hex[c >> 4];
            out += hex[c & 15];
          } else {
            out += static_cast<char>(c);
          }
      }
      ++i;
      continue;
    }
    size_t len = 1;
    int cp = decode_utf8(s, i, len);
    if (cp < 0) {
      out += "\\ufffd";
      i += 1;
      continue;
    }
    if (cp == 0x2028 || cp == 0x2029) {
      out += cp == 0x2028 ? "\\u2028" : "\\u2029";
    } else {
      out.append(s, i, len);
    }
    i += len;
  }
  out += '"';
  return out;
}

std::string go_json(const Value& v) {
  if (const std::string* j = v.json_override()) return *j;
  switch (v.kind()) {
    case Value::Kind::Nil:
      return "null";
    case Value::Kind::Bool:
      return v.as_bool() ? "true" : "false";
    case Value::Kind::Int:
      return std::to_string(v.as_int());
    case Value::Kind::Float:
      return go_json_float(v.as_float());
    case Value::Kind::String:
      return go_json_string(v.as_string());
    case Value::Kind::List: {
      std::string out = "[";
      bool first = true;
      for (const auto& e : v.as_list()) {
        if (!first) out += ',';
        first = false;
        out += go_json(e);
      }
      return out + "]";
    }
    case Value::Kind::Map: {
      std::string out = "{";
      bool first = true;
      for (const auto& [k, e] : v.as_map()) {
        if (!first) out += ',';
        first = false;
        out += go_json_string(k) + ":" + go_json(e);
      }
      return out + "}";
    }
    case Value::Kind::Struct: {
      std::string out = "{";
      bool first = true;
      for (const auto& [k, e] : v.as_struct().fields) {
        if (!first) out += ',';
        first = false;
        out += go_json_string(k) + ":" + go_json(e);
      }
      return out + "}";
    }
  }
  return "null";
}

std::string go_sprint_compound(const Value& v,
                               const std::function<std::string(const Value&)>& element) {
  std::string out;
  auto add = [&, first = true](const std::string& text) mutable {
    if (!first) out += ' ';
    first = false;
    out += text;
  };
  if (v.kind() == Value::Kind::List) {
    out = "[";
    for (const auto& e : v.as_list()) add(element(e));
    return out + "]";
  }
  if (v.kind() == Value::Kind::Map) {
    out = "map[";
    for (const auto& [k, e] : v.as_map()) add(element(Value::string(k)) + ":" + element(e));
    return out + "]";
  }
  out = "{";
  for (const auto& [k, e] : v.as_struct().fields) add(element(e));
  return out + "}";
}

std::string go_sprint_value(const Value& v) {
  if (const std::string* s = v.stringer()) return *s;
  switch (v.kind()) {
    case Value::Kind::Nil:
      return "<nil>";
    case Value::Kind::Bool:
      return v.as_bool() ? "true" : "false";
    case Value::Kind::Int:
      return std::to_string(v.as_int());
    case Value::Kind::Float:
      return go_format_float(v.as_float());
    case Value::Kind::String:
      return v.as_string();
    case Value::Kind::List:
    case Value::Kind::Map:
    case Value::Kind::Struct:
      return go_sprint_compound(v, go_sprint_value);
  }
  return "";
}

}  // namespace vkllm::prompt
