#include "engine/sampling/json_schema_compiler.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <set>

#include "engine/sampling/json_grammar_parts.h"
#include "engine/sampling/regex_compiler.h"
#include "engine/sampling/token_constraint.h"

namespace vkllm::sampling {

namespace {

using grammar::alt;
using grammar::Frag;
using grammar::literal;
using grammar::seq;
using json = nlohmann::ordered_json;
namespace jp = json_parts;

constexpr int kMaxDepth = 64;
constexpr int64_t kMaxCount = 1000;  // minItems/maxItems/minLength/maxLength we unroll
constexpr int kLongString = 256;     // strings are generated with at most this many characters

[[noreturn]] void fail(const std::string& what) {
  throw FormatError("invalid JSON schema in format: " + what);
}

// Keywords that change which values validate and that the compiler does not implement.
const std::set<std::string> kUnsupported = {"not",
                                            "if",
                                            "then",
                                            "else",
                                            "dependentRequired",
                                            "dependentSchemas",
                                            "dependencies",
                                            "patternProperties",
                                            "propertyNames",
                                            "minProperties",
                                            "maxProperties",
                                            "contains",
                                            "minContains",
                                            "maxContains",
                                            "multipleOf",
                                            "unevaluatedItems",
                                            "unevaluatedProperties",
                                            "additionalItems",
                                            "$dynamicRef",
                                            "$recursiveRef",
                                            "contentSchema"};

// Keywords that say nothing about validity.
const std::set<std::string> kAnnotations = {
    "title", "description", "examples",   "default",         "$schema",
    "$id",   "$comment",    "deprecated", "readOnly",        "writeOnly",
    "$defs", "definitions", "$anchor",    "contentEncoding", "contentMediaType"};

bool has(const json& s, const char* key) {
  return s.contains(key);
}

std::optional<int64_t> integral(const json& v, const char* key) {
  if (!v.is_number()) fail(std::string("\"") + key + "\" must be a number");
  const double d = v.get<double>();
  if (!std::isfinite(d) || std::fabs(d) > 1e18)
    fail(std::string("\"") + key + "\" is out of range");
  return static_cast<int64_t>(d);
}

// A count keyword's value; above `clamp` (when given) it is `clamp`, else above kMaxCount an error.
int count(const json& s, const char* key, int fallback, int clamp = -1) {
  if (!has(s, key)) return fallback;
  const json& v = s[key];
  if (!v.is_number_integer() &&
      !(v.is_number() && std::floor(v.get<double>()) == v.get<double>())) {
    fail(std::string("\"") + key + "\" must be a non-negative integer");
  }
  const double d = v.get<double>();
  if (d < 0) fail(std::string("\"") + key + "\" must be a non-negative integer");
  if (clamp >= 0 && d > clamp) return clamp;
  if (d > static_cast<double>(kMaxCount)) {
    fail(std::string("\"") + key + "\" above " + std::to_string(kMaxCount) + " is not supported");
  }
  return static_cast<int>(d);
}

bool matches_type(const json& v, const std::string& type) {
  if (type == "null") return v.is_null();
  if (type == "boolean") return v.is_boolean();
  if (type == "string") return v.is_string();
  if (type == "number") return v.is_number();
  if (type == "integer") {
    return v.is_number_integer() ||
           (v.is_number_float() && std::floor(v.get<double>()) == v.get<double>());
  }
  if (type == "array") return v.is_array();
  if (type == "object") return v.is_object();
  return false;
}

class Compiler {
 public:
  Compiler(const json& root, grammar::GrammarBuilder& gb) : root_(root), gb_(gb) {}

  // The schema as one rule of gb_ (its value, without a root around it).
  int32_t rule() {
    if (root_.is_object() || root_.is_boolean()) {
      return memo(
          "value-of-root:", [&] { return value(root_, 0); }, "the schema");
    }
    fail("a schema must be an object or a boolean");
  }

  grammar::Grammar json_object() {
    const int32_t root = gb_.declare("root");
    gb_.define(root, grammar::call(any_object()));
    return finish(root);
  }

  grammar::Grammar schema() {
    const int32_t root = gb_.declare("root");
    gb_.define(root, value(root_, 0), "the schema");
    return finish(root);
  }

  grammar::Grammar finish(int32_t root) {
    return gb_.finish(root, "the schema refers to itself (\"$ref\") without any value in between",
                      "the schema allows no value (its constraints contradict each other)");
  }

 private:
  // A fragment for one value that validates against `s`.
  Frag value(const json& s, int depth) {
    if (depth > kMaxDepth) fail("nested too deeply");
    if (s.is_boolean()) return s.get<bool>() ? grammar::call(any_value()) : alt({});
    if (!s.is_object()) fail("a schema must be an object or a boolean");
    bool validating = false;  // any keyword besides annotations
    for (auto& [key, v] : s.items()) {
      if (kUnsupported.count(key)) fail("\"" + key + "\" is not supported");
      if (key == "uniqueItems" && v != json(false)) fail("\"uniqueItems\" is not supported");
      if (key == "format" && !v.is_string()) fail("\"format\" must be a string");
      if (!kAnnotations.count(key)) validating = true;
    }
    if (!validating) return grammar::call(any_value());
    if (has(s, "$ref")) {
      only(s, "$ref");
      return grammar::call(ref(s["$ref"], depth));
    }
    if (has(s, "allOf")) {
      only(s, "allOf");
      const json& all = s["allOf"];
      if (!all.is_array() || all.size() != 1)
        fail("\"allOf\" with more than one schema is not supported");
      return value(all[0], depth + 1);
    }
    for (const char* key : {"anyOf", "oneOf"}) {
      if (!has(s, key)) continue;
      only(s, key);
      const json& branches = s[key];
      if (!branches.is_array() || branches.empty())
        fail(std::string("\"") + key + "\" must be a non-empty array");
      std::vector<Frag> choices;
      for (const json& b : branches) choices.push_back(value(b, depth + 1));
      return alt(std::move(choices));
    }

    std::vector<std::string> types;
    if (has(s, "type")) {
      const json& t = s["type"];
      if (t.is_string()) {
        types.push_back(t.get<std::string>());
      } else if (t.is_array() && !t.empty()) {
        for (const json& x : t) {
          if (!x.is_string()) fail("\"type\" must be a string or an array of strings");
          types.push_back(x.get<std::string>());
        }
      } else {
        fail("\"type\" must be a string or an array of strings");
      }
      for (const std::string& x : types) {
        static const std::set<std::string> known = {"null",   "boolean", "integer", "number",
                                                    "string", "array",   "object"};
        if (!known.count(x)) fail("unknown type \"" + x + "\"");
      }
    }

    if (has(s, "const") || has(s, "enum")) {
      std::vector<json> values;
      if (has(s, "enum") && !s["enum"].is_array()) fail("\"enum\" must be an array");
      if (has(s, "const")) {
        values.push_back(s["const"]);
        if (has(s, "enum") &&
            std::find(s["enum"].begin(), s["enum"].end(), s["const"]) == s["enum"].end()) {
          values.clear();
        }
      } else {
        values.assign(s["enum"].begin(), s["enum"].end());
      }
      std::vector<Frag> choices;
      std::set<std::string> seen;
      for (const json& v : values) {
        const bool typed =
            types.empty() || std::any_of(types.begin(), types.end(),
                                         [&](const std::string& t) { return matches_type(v, t); });
        const std::string text = v.dump();
        if (typed && seen.insert(text).second) choices.push_back(literal(text));
      }
      return alt(std::move(choices));
    }

    if (types.empty()) {
      // What the keywords imply; with none that constrain, any value.
      if (has(s, "properties") || has(s, "additionalProperties") || has(s, "required"))
        types = {"object"};
      else if (has(s, "items") || has(s, "prefixItems") || has(s, "minItems") || has(s, "maxItems"))
        types = {"array"};
      else if (has(s, "minLength") || has(s, "maxLength") || has(s, "format") || has(s, "pattern"))
        types = {"string"};
      else if (has(s, "minimum") || has(s, "maximum") || has(s, "exclusiveMinimum") ||
               has(s, "exclusiveMaximum"))
        types = {"number"};
      else
        return grammar::call(any_value());
    }
    std::vector<Frag> choices;
    for (const std::string& t : types) choices.push_back(typed_value(s, t, depth));
    return alt(std::move(choices));
  }

  // `key` must be the only keyword besides annotations.
  static void only(const json& s, const std::string& key) {
    for (auto& [k, v] : s.items()) {
      if (k != key && !kAnnotations.count(k))
        fail("\"" + key + "\" next to \"" + k + "\" is not supported");
    }
  }

  Frag typed_value(const json& s, const std::string& t, int depth) {
    if (t == "null") return literal("null");
    if (t == "boolean") return alt({literal("true"), literal("false")});
    if (t == "integer" || t == "number") return numeric(s, t == "integer");
    if (t == "string") return grammar::call(string_rule(s));
    if (t == "array")
      return grammar::call(memo("array:" + s.dump(), [&] { return array(s, depth); }));
    return grammar::call(memo("object:" + s.dump(), [&] { return object(s, depth); }));
  }

  Frag numeric(const json& s, bool integer) {
    std::optional<int64_t> lo, hi;
    auto raise_lo = [&](int64_t v) { lo = lo ? std::max(*lo, v) : v; };
    auto lower_hi = [&](int64_t v) { hi = hi ? std::min(*hi, v) : v; };
    for (const char* key : {"minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum"}) {
      if (!has(s, key)) continue;
      const json& v = s[key];
      const std::string k = key;
      if (v.is_boolean()) {  // draft 4: exclusiveMinimum/Maximum modify minimum/maximum
        if (v.get<bool>()) fail("boolean \"" + k + "\" is not supported");
        continue;
      }
      integral(v, key);
      const double d = v.get<double>();
      const bool whole = std::floor(d) == d;
      if (!integer && (!whole || k.rfind("exclusive", 0) == 0)) {
        fail("\"" + k + "\" on a number is supported only as an integer \"minimum\"/\"maximum\"");
      }
      if (k == "minimum") raise_lo(static_cast<int64_t>(std::ceil(d)));
      if (k == "maximum") lower_hi(static_cast<int64_t>(std::floor(d)));
      if (k == "exclusiveMinimum") raise_lo(static_cast<int64_t>(std::floor(d)) + 1);
      if (k == "exclusiveMaximum") lower_hi(static_cast<int64_t>(std::ceil(d)) - 1);
    }
    if (integer) return jp::integer_in(lo, hi);
    return lo || hi ? jp::number_in(lo, hi) : jp::number();
  }

  int32_t string_rule(const json& s) {
    const int min = count(s, "minLength", 0);
    // Every character position of a bounded string is a state of its own (with its own token
    // masks), so long bounds are cut to kLongString: shorter strings are still valid ones.
    const int max = has(s, "maxLength") ? count(s, "maxLength", 0, std::max(min, kLongString)) : -1;
    // "format" is an annotation unless a validator opts in (JSON Schema 2019-09 and later): the
    // formats with a grammar are enforced where nothing else constrains the string; unknown
    // ones ("uri", ...) and formats next to a length or a pattern only describe it.
    const bool lengths = has(s, "minLength") || has(s, "maxLength");
    if (has(s, "pattern")) {
      if (!s["pattern"].is_string()) fail("\"pattern\" must be a string");
      if (lengths) fail("\"pattern\" with \"minLength\" or \"maxLength\" is not supported");
      const std::string p = s["pattern"].get<std::string>();
      return memo(
          "pattern:" + p,
          [&] {
            return seq({literal("\""), compile_pattern(p), literal("\"")});
          },
          "\"pattern\" " + json(p).dump());
    }
    if (has(s, "format") && !lengths) {
      const std::string name = s["format"].get<std::string>();
      if (auto body = jp::string_format(name)) {
        return memo("format:" + name, [&] { return seq({literal("\""), *body, literal("\"")}); });
      }
    }
    return memo("string:" + std::to_string(min) + ":" + std::to_string(max),
                [&] { return jp::string_of(min, max); });
  }

  Frag array(const json& s, int depth) {
    std::vector<Frag> prefix;
    std::optional<Frag> rest = grammar::call(any_value());
    if (has(s, "prefixItems")) {
      if (!s["prefixItems"].is_array()) fail("\"prefixItems\" must be an array");
      for (const json& p : s["prefixItems"]) prefix.push_back(value(p, depth + 1));
    }
    if (has(s, "items")) {
      const json& items = s["items"];
      if (items.is_array()) {  // the tuple form of older drafts
        if (has(s, "prefixItems")) fail("\"items\" must be a schema when \"prefixItems\" is given");
        for (const json& p : items) prefix.push_back(value(p, depth + 1));
      } else if (items == json(false)) {
        rest.reset();
      } else {
        rest = value(items, depth + 1);
      }
    }
    const int min = count(s, "minItems", 0);
    int max = has(s, "maxItems") ? count(s, "maxItems", 0) : -1;
    if (!rest)
      max = max < 0 ? static_cast<int>(prefix.size())
                    : std::min<int>(max, static_cast<int>(prefix.size()));
    if (max >= 0 && min > max) return alt({});
    const int unrolled = max >= 0 ? max : std::max<int>({min, static_cast<int>(prefix.size()), 1});
    auto item = [prefix, rest](size_t i) { return i < prefix.size() ? prefix[i] : *rest; };
    std::vector<Frag> items;
    for (int i = 0; i < unrolled; ++i) items.push_back(item(static_cast<size_t>(i)));
    const bool open = max < 0;
    const Frag body = [items, rest, min, open](grammar::NfaBuilder& b, int32_t from) {
      const int32_t end = b.node();
      if (min == 0) b.eps(from, end);
      const Frag comma = seq({literal(","), jp::ws()});
      int32_t cur = from;
      for (size_t i = 0; i < items.size(); ++i) {
        if (i > 0) cur = comma(b, cur);
        cur = jp::ws()(b, items[i](b, cur));
        if (static_cast<int>(i) + 1 >= min) b.eps(cur, end);
      }
      if (open) {
        const int32_t head = cur;
        b.eps(jp::ws()(b, (*rest)(b, comma(b, head))), head);
      }
      return end;
    };
    return seq({literal("["), jp::ws(), body, literal("]")});
  }

  Frag object(const json& s, int depth) {
    struct Item {
      Frag kv;
      bool required;
    };
    std::vector<Item> items;
    std::vector<std::string> names;
    std::set<std::string> required;
    if (has(s, "required")) {
      if (!s["required"].is_array()) fail("\"required\" must be an array of strings");
      for (const json& r : s["required"]) {
        if (!r.is_string()) fail("\"required\" must be an array of strings");
        required.insert(r.get<std::string>());
      }
    }
    const Frag colon = seq({jp::ws(), literal(":"), jp::ws()});
    if (has(s, "properties")) {
      if (!s["properties"].is_object()) fail("\"properties\" must be an object");
      for (auto& [name, sub] : s["properties"].items()) {
        names.push_back(name);
        items.push_back({seq({literal(json(name).dump()), colon, value(sub, depth + 1), jp::ws()}),
                         required.count(name) > 0});
      }
    }
    for (const std::string& r : required) {
      if (std::find(names.begin(), names.end(), r) == names.end()) {
        fail("required property \"" + r + "\" is not in \"properties\"");
      }
    }
    std::optional<Frag> extra;
    const bool any_keys = !has(s, "properties") && !has(s, "additionalProperties");
    if (any_keys || (has(s, "additionalProperties") && s["additionalProperties"] != json(false))) {
      const json addl = has(s, "additionalProperties") ? s["additionalProperties"] : json(true);
      const Frag key =
          names.empty() ? grammar::call(string_rule(json::object())) : jp::key_excluding(names);
      extra = seq({key, colon, value(addl, depth + 1), jp::ws()});
    }
    const Frag body = [items, extra](grammar::NfaBuilder& b, int32_t from) {
      // before[i]: nothing written yet and property i is next; after[i]: something written.
      const size_t n = items.size();
      std::vector<int32_t> before(n + 1), after(n + 1);
      for (size_t i = 0; i <= n; ++i) before[i] = b.node(), after[i] = b.node();
      b.eps(from, before[0]);
      const Frag comma = seq({literal(","), jp::ws()});
      for (size_t i = 0; i < n; ++i) {
        b.eps(items[i].kv(b, before[i]), after[i + 1]);
        b.eps(items[i].kv(b, comma(b, after[i])), after[i + 1]);
        if (!items[i].required) b.eps(before[i], before[i + 1]), b.eps(after[i], after[i + 1]);
      }
      if (extra) {
        b.eps((*extra)(b, before[n]), after[n]);
        b.eps((*extra)(b, comma(b, after[n])), after[n]);
      }
      const int32_t end = b.node();
      b.eps(before[n], end);
      b.eps(after[n], end);
      return end;
    };
    return seq({literal("{"), jp::ws(), body, literal("}")});
  }

  int32_t ref(const json& r, int depth) {
    if (!r.is_string()) fail("\"$ref\" must be a string");
    const std::string target = r.get<std::string>();
    if (target.empty() || target[0] != '#')
      fail("only local \"$ref\"s (\"#/...\") are supported: " + target);
    const json* s = nullptr;
    try {
      s = &root_.at(json::json_pointer(target.substr(1)));
    } catch (const nlohmann::json::exception&) {
      fail("\"$ref\" " + target + " does not resolve");
    }
    return memo("ref:" + target, [&] { return value(*s, depth + 1); });
  }

  // The rule for `key`, defined by `body` the first time it is asked for.
  // A memo key ("object:{...}", "ref:#/$defs/x") as a construct's name in an error.
  static std::string describe(const std::string& key) {
    const size_t colon = key.find(':');
    std::string rest = key.substr(colon + 1);
    if (rest.size() > 80) rest = rest.substr(0, 77) + "...";
    return "the " + key.substr(0, colon) + " " + rest;
  }

  // `what` names the construct in a work-budget error.
  template <typename Body>
  int32_t memo(const std::string& key, Body&& body, const std::string& what = {}) {
    if (auto it = rules_.find(key); it != rules_.end()) return it->second;
    const int32_t id = gb_.declare(key.substr(0, key.find(':')));
    rules_[key] = id;
    gb_.define(id, body(), what.empty() ? describe(key) : what);
    return id;
  }

  int32_t any_value() {
    if (any_value_ >= 0) return any_value_;
    any_value_ = gb_.declare("value");
    const int32_t str = string_rule(json::object());
    const int32_t obj = any_object();
    const int32_t arr = gb_.declare("array");
    const Frag item = seq({grammar::call(any_value_), jp::ws()});
    gb_.define(
        arr,
        seq({literal("["), jp::ws(),
             grammar::opt(seq({item, grammar::repeat(seq({literal(","), jp::ws(), item}), 0, -1)})),
             literal("]")}));
    gb_.define(any_value_, alt({grammar::call(obj), grammar::call(arr), grammar::call(str),
                                jp::number(), literal("true"), literal("false"), literal("null")}));
    return any_value_;
  }

  int32_t any_object() {
    if (any_object_ >= 0) return any_object_;
    any_object_ = gb_.declare("object");
    const int32_t value_rule = any_value();
    const Frag kv = seq({grammar::call(string_rule(json::object())), jp::ws(), literal(":"),
                         jp::ws(), grammar::call(value_rule), jp::ws()});
    gb_.define(
        any_object_,
        seq({literal("{"), jp::ws(),
             grammar::opt(seq({kv, grammar::repeat(seq({literal(","), jp::ws(), kv}), 0, -1)})),
             literal("}")}));
    return any_object_;
  }

  const json& root_;
  grammar::GrammarBuilder& gb_;
  std::map<std::string, int32_t> rules_;
  int32_t any_value_ = -1;
  int32_t any_object_ = -1;
};

}  // namespace

grammar::Grammar compile_json_grammar(const nlohmann::ordered_json& format) {
  grammar::GrammarBuilder gb("invalid JSON schema in format: ");
  try {
    if (format.is_string() && format.get<std::string>() == "json")
      return Compiler(format, gb).json_object();
    if (format.is_object()) return Compiler(format, gb).schema();
  } catch (const nlohmann::json::exception& e) {
    throw FormatError(std::string("invalid JSON schema in format: ") + e.what());
  }
  throw FormatError("invalid format: " + format.dump() +
                    "; expected \"json\" or a valid JSON Schema object");
}

int32_t json_schema_rule(grammar::GrammarBuilder& gb, const nlohmann::ordered_json& schema) {
  try {
    return Compiler(schema, gb).rule();
  } catch (const nlohmann::json::exception& e) {
    throw FormatError(gb.error_prefix() + e.what());
  }
}

}  // namespace vkllm::sampling
