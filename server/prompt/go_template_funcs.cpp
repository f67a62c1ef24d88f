// text/template's builtin functions (funcs.go) and Ollama's additions (json, currentDate,
// yesterdayDate, toTypeScriptType), over Value.
#include <cmath>
#include <cstdio>
#include <ctime>
#include <string_view>

#include "server/prompt/go_template_exec.h"

namespace vkllm::prompt {

namespace {

constexpr std::string_view kFunctions[] = {"and",
                                           "or",
                                           "not",
                                           "eq",
                                           "ne",
                                           "lt",
                                           "le",
                                           "gt",
                                           "ge",
                                           "len",
                                           "index",
                                           "slice",
                                           "print",
                                           "printf",
                                           "println",
                                           "html",
                                           "js",
                                           "urlquery",
                                           "call",
                                           "json",
                                           "currentDate",
                                           "yesterdayDate",
                                           "toTypeScriptType"};

[[noreturn]] void err(std::string msg) {
  throw ExecError{std::move(msg)};
}

void want_args(const std::string& name, const std::vector<Value>& a, size_t n) {
  if (a.size() != n)
    err("wrong number of args for " + name + ": want " + std::to_string(n) + " got " +
        std::to_string(a.size()));
}

enum class Basic { Invalid, Bool, Int, Float, String };
Basic basic(const Value& v) {
  switch (v.kind()) {
    case Value::Kind::Bool:
      return Basic::Bool;
    case Value::Kind::Int:
      return Basic::Int;
    case Value::Kind::Float:
      return Basic::Float;
    case Value::Kind::String:
      return Basic::String;
    default:
      return Basic::Invalid;
  }
}

bool eq(const Value& a, const std::vector<Value>& rest) {
  if (rest.empty()) err("missing argument for comparison");
  Basic k1 = basic(a);
  for (const auto& b : rest) {
    Basic k2 = basic(b);
    bool truth = false;
    if (k1 != k2) {
      if (!a.is_nil() && !b.is_nil()) err("incompatible types for comparison");
    } else {
      switch (k1) {
        case Basic::Bool:
          truth = a.as_bool() == b.as_bool();
          break;
        case Basic::Int:
          truth = a.as_int() == b.as_int();
          break;
        case Basic::Float:
          truth = a.as_float() == b.as_float();
          break;
        case Basic::String:
          truth = a.as_string() == b.as_string();
          break;
        case Basic::Invalid:
          if (a.is_nil() || b.is_nil()) {
            truth = a.is_nil() && b.is_nil();
          } else if (a.kind() == Value::Kind::Struct && b.kind() == Value::Kind::Struct) {
            truth = go_json(a) == go_json(b);
          } else {
            err("non-comparable type " + go_sprint_value(a) + ": " + a.type_name());
          }
      }
    }
    if (truth) return true;
  }
  return false;
}

bool less(const Value& a, const Value& b) {
  Basic k1 = basic(a), k2 = basic(b);
  if (k1 == Basic::Invalid || k2 == Basic::Invalid || k1 == Basic::Bool || k2 == Basic::Bool)
    err("invalid type for comparison");
  if (k1 != k2) err("incompatible types for comparison");
  switch (k1) {
    case Basic::Int:
      return a.as_int() < b.as_int();
    case Basic::Float:
      return a.as_float() < b.as_float();
    default:
      return a.as_string() < b.as_string();
  }
}

int64_t index_arg(const Value& v, size_t cap, const char* what) {
  if (v.is_nil()) err(std::string("cannot index ") + what + " with nil");
  if (v.kind() != Value::Kind::Int)
    err(std::string("cannot index ") + what + " with type " + v.type_name());
  int64_t x = v.as_int();
  if (x < 0 || static_cast<uint64_t>(x) > cap) err("index out of range: " + std::to_string(x));
  return x;
}

Value index(const std::vector<Value>& a) {
  if (a.empty()) err("wrong number of args for index: want at least 1 got 0");
  Value item = a[0];
  if (item.is_nil()) err("index of untyped nil");
  for (size_t i = 1; i < a.size(); ++i) {
    if (item.is_nil()) err("index of nil pointer");
    switch (item.kind()) {
      case Value::Kind::List: {
        int64_t x = index_arg(a[i], item.as_list().size(), "slice/array");
        if (static_cast<size_t>(x) >= item.as_list().size())
          err("index out of range: " + std::to_string(x));
        Value next = item.as_list()[x];
        item = next;
        break;
      }
      case Value::Kind::String: {
        int64_t x = index_arg(a[i], item.as_string().size(), "slice/array");
        if (static_cast<size_t>(x) >= item.as_string().size())
          err("index out of range: " + std::to_string(x));
        item = Value::integer(static_cast<unsigned char>(item.as_string()[x]));
        break;
      }
      case Value::Kind::Map: {
        if (a[i].kind() != Value::Kind::String)
          err("value has type " + a[i].type_name() + "; should be string");
        auto it = item.as_map().find(a[i].as_string());
        Value next = it == item.as_map().end() ? Value() : it->second;
        item = next;
        break;
      }
      default:
        err("can't index item of type " + item.type_name());
    }
  }
  return item;
}

Value slice(const std::vector<Value>& a) {
  if (a.empty()) err("wrong number of args for slice: want at least 1 got 0");
  const Value& item = a[0];
  if (item.is_nil()) err("slice of untyped nil");
  if (a.size() > 4) err("too many slice indexes: " + std::to_string(a.size() - 1));
  size_t len = 0;
  if (item.kind() == Value::Kind::String) {
    if (a.size() == 4) err("cannot 3-index slice a string");
    len = item.as_string().size();
  } else if (item.kind() == Value::Kind::List) {
    len = item.as_list().size();
  } else {
    err("can't slice item of type " + item.type_name());
  }
  int64_t idx[3] = {0, static_cast<int64_t>(len), static_cast<int64_t>(len)};
  for (size_t i = 1; i < a.size(); ++i) idx[i - 1] = index_arg(a[i], len, "slice/array");
  if (idx[0] > idx[1])
    err("invalid slice index: " + std::to_string(idx[0]) + " > " + std::to_string(idx[1]));
  if (a.size() == 4 && idx[1] > idx[2])
    err("invalid slice index: " + std::to_string(idx[1]) + " > " + std::to_string(idx[2]));
  if (item.kind() == Value::Kind::String)
    return Value::string(item.as_string().substr(idx[0], idx[1] - idx[0]));
  const auto& l = item.as_list();
  return Value::list(Value::List(l.begin() + idx[0], l.begin() + idx[1]));
}

std::string eval_args_string(const std::vector<Value>& a) {
  if (a.size() == 1 && a[0].kind() == Value::Kind::String) return a[0].as_string();
  return go_sprint(a);
}

std::string html_escape(const std::string& s) {
  std::string out;
  for (char c : s) {
    switch (c) {
      case '<':
        out += "&lt;";
        break;
      case '>':
        out += "&gt;";
        break;
      case '&':
        out += "&amp;";
        break;
      case '\'':
        out += "&#39;";
        break;
      case '"':
        out += "&#34;";
        break;
      case '\0':
        out += "\xEF\xBF\xBD";
        break;
      default:
        out += c;
    }
  }
  return out;
}

std::string js_escape(const std::string& s) {
  static const char* hex = "0123456789ABCDEF";
  std::string out;
  for (char ch : s) {
    auto c = static_cast<unsigned char>(ch);
    switch (c) {
      case '\\':
        out += "\\\\";
        break;
      case '\'':
        out += "\\'";
        break;
      case '"':
        out += "\\\"";
        break;
      case '<':
        out += "\\u003C";
        break;
      case '>':
        out += "\\u003E";
        break;
      case '&':
        out += "\\u0026";
        break;
      case '=':
        out += "\\u003D";
        break;
      default:
        if (c < ' ' || c == 0x7f) {
          out += "\\u00";
          out += hex[c >> 4];
          out += hex[c & 15];
        } else {
          out += ch;
        }
    }
  }
  return out;
}

std::string query_escape(const std::string& s) {
  static const char* hex = "0123456789ABCDEF";
  std::string out;
  for (char ch : s) {
    auto c = static_cast<unsigned char>(ch);
    if (std::isalnum(c) || c == '-' || c == '_' || c == '.' || c == '~') {
      out += ch;
    } else if (c == ' ') {
      out += '+';
    } else {
      out += '%';
      out += hex[c >> 4];
      out += hex[c & 15];
    }
  }
  return out;
}

std::string date(int days_back) {
  std::time_t t = std::time(nullptr) - static_cast<std::time_t>(days_back) * 86400;
  std::tm tm{};
  localtime_r(&t, &tm);
  char buf[16];
  std::strftime(buf, sizeof buf, "%Y-%m-%d", &tm);
  return buf;
}

std::string ts_type(const std::string& json_type) {
  if (json_type == "string") return "string";
  if (json_type == "number" || json_type == "integer") return "number";
  if (json_type == "boolean") return "boolean";
  if (json_type == "array") return "any[]";
  if (json_type == "object") return "Record<string, any>";
  if (json_type == "null") return "null";
  return "any";
}

std::string to_typescript(const Value& v) {
  if (v.kind() != Value::Kind::Struct || v.type_name() != "api.ToolProperty") return "any";
  const Value* any_of = v.field("AnyOf");
  if (any_of && any_of->kind() == Value::Kind::List && !any_of->as_list().empty()) {
    std::string out;
    for (const auto& p : any_of->as_list()) {
      if (!out.empty()) out += " | ";
      out += to_typescript(p);
    }
    return out;
  }
  const Value* type = v.field("Type");
  if (!type || type->kind() != Value::Kind::List || type->as_list().empty()) return "any";
  std::string out;
  for (const auto& t : type->as_list()) {
    if (!out.empty()) out += " | ";
    out += ts_type(t.kind() == Value::Kind::String ? t.as_string() : "");
  }
  return out;
}

}  // namespace

bool go_has_function(std::string_view name) {
  for (auto f : kFunctions)
    if (f == name) return true;
  return false;
}

std::string go_sprint(const std::vector<Value>& args) {
  std::string out;
  for (size_t i = 0; i < args.size(); ++i) {
    bool is_string = args[i].kind() == Value::Kind::String && !args[i].stringer();
    bool prev_string =
        i > 0 && args[i - 1].kind() == Value::Kind::String && !args[i - 1].stringer();
    if (i > 0 && !is_string && !prev_string) out += ' ';
    out += go_sprint_value(args[i]);
  }
  return out;
}

Value go_call_function(const std::string& name, const std::vector<Value>& a, size_t max_output) {
  auto bounded = [&](std::string s) {
    if (s.size() > max_output) err("output exceeds the size limit");
    return Value::string(std::move(s));
  };
  if (name == "not") {
    want_args(name, a, 1);
    return Value::boolean(!a[0].truthy());
  }
  if (name == "eq") {
    if (a.empty()) err("wrong number of args for eq: want at least 1 got 0");
    return Value::boolean(eq(a[0], std::vector<Value>(a.begin() + 1, a.end())));
  }
  if (name == "ne") {
    want_args(name, a, 2);
    return Value::boolean(!eq(a[0], {a[1]}));
  }
  if (name == "lt" || name == "le" || name == "gt" || name == "ge") {
    want_args(name, a, 2);
    bool lt = less(a[0], a[1]);
    if (name == "lt") return Value::boolean(lt);
    if (name == "ge") return Value::boolean(!lt);
    bool e = eq(a[0], {a[1]});
    if (name == "le") return Value::boolean(lt || e);
    return Value::boolean(!lt && !e);
  }
  if (name == "len") {
    want_args(name, a, 1);
    switch (a[0].kind()) {
      case Value::Kind::String:
        return Value::integer(static_cast<int64_t>(a[0].as_string().size()));
      case Value::Kind::List:
        return Value::integer(static_cast<int64_t>(a[0].as_list().size()));
      case Value::Kind::Map:
        return Value::integer(static_cast<int64_t>(a[0].as_map().size()));
      case Value::Kind::Nil:
        err("len of nil pointer");
      default:
        err("len of type " + a[0].type_name());
    }
  }
  if (name == "index") return index(a);
  if (name == "slice") return slice(a);
  if (name == "print") return bounded(go_sprint(a));
  if (name == "println") {
    std::string out;
    for (size_t i = 0; i < a.size(); ++i) {
      if (i > 0) out += ' ';
      out += go_sprint_value(a[i]);
    }
    return bounded(out + "\n");
  }
  if (name == "printf") {
    if (a.empty()) err("wrong number of args for printf: want at least 1 got 0");
    if (a[0].kind() != Value::Kind::String)
      err("wrong type for value; expected string; got " + a[0].type_name());
    return bounded(
        go_sprintf(a[0].as_string(), std::vector<Value>(a.begin() + 1, a.end()), max_output));
  }
  if (name == "html") return bounded(html_escape(eval_args_string(a)));
  if (name == "js") return bounded(js_escape(eval_args_string(a)));
  if (name == "urlquery") return bounded(query_escape(eval_args_string(a)));
  if (name == "call") {
    if (a.empty()) err("wrong number of args for call: want at least 1 got 0");
    if (a[0].is_nil()) err("call of nil");
    err("non-function of type " + a[0].type_name());
  }
  if (name == "json") {
    want_args(name, a, 1);
    return bounded(go_json(a[0]));
  }
  if (name == "currentDate") return Value::string(date(0));
  if (name == "yesterdayDate") return Value::string(date(1));
  if (name == "toTypeScriptType") {
    want_args(name, a, 1);
    return Value::string(to_typescript(a[0]));
  }
  err("function \"" + name + "\" not defined");
}

}  // namespace vkllm::prompt
