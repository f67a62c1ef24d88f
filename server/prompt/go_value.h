// Values as Go's text/template sees them: nil, bool, int, float64, string, slices, map[string]any
// (printed and ranged in sorted key order) and structs with named fields. A value may carry the
// text of a Go String() method (Ollama's Tools, tool-call arguments, ...), which fmt prints instead
// of the Go syntax, and the JSON encoding/json would produce for it.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <utility>
#include <vector>

namespace vkllm::prompt {

class Value {
 public:
  enum class Kind { Nil, Bool, Int, Float, String, List, Map, Struct };
  using List = std::vector<Value>;
  using Map = std::map<std::string, Value>;  // Go map[string]any: sorted keys
  struct Struct {
    std::string type_name;  // for error messages, e.g. "api.Message"
    std::vector<std::pair<std::string, Value>> fields;
  };

  Value() = default;  // nil
  static Value boolean(bool b);
  static Value integer(int64_t i);
  static Value floating(double d);
  static Value string(std::string s);
  static Value list(List items);
  static Value map(Map items);
  static Value structure(std::string type_name, std::vector<std::pair<std::string, Value>> fields);

  // Attaches a Go String() form (printed by fmt) and/or the encoding/json form of this value.
  Value with_stringer(std::string text) const;
  Value with_json(std::string json) const;

  Kind kind() const { return kind_; }
  bool is_nil() const { return kind_ == Kind::Nil; }
  bool as_bool() const { return b_; }
  int64_t as_int() const { return i_; }
  double as_float() const { return d_; }
  const std::string& as_string() const { return *s_; }
  const List& as_list() const { return *list_; }
  const Map& as_map() const { return *map_; }
  const Struct& as_struct() const { return *struct_; }
  const std::string* stringer() const { return stringer_.get(); }
  const std::string* json_override() const { return json_.get(); }

  // A struct field by name; nullptr when the struct has none.
  const Value* field(const std::string& name) const;
  // Go's type name for messages ("string", "int", "[]interface {}", "map[string]interface {}").
  std::string type_name() const;
  // Go truthiness (text/template isTrue).
  bool truthy() const;

 private:
  Kind kind_ = Kind::Nil;
  bool b_ = false;
  int64_t i_ = 0;
  double d_ = 0;
  std::shared_ptr<const std::string> s_;
  std::shared_ptr<const List> list_;
  std::shared_ptr<const Map> map_;
  std::shared_ptr<const Struct> struct_;
  std::shared_ptr<const std::string> stringer_;
  std::shared_ptr<const std::string> json_;
};

// fmt's %v of a value ("<nil>" for nil, [a b] for slices, map[k:v], {a b}, String() forms).
std::string go_sprint_value(const Value& v);
// fmt's layout of a slice, map or struct ([a b], map[k:v], {a b}) with each element, and each
// map key as a string Value, printed by `element` (fmt's verb and flags apply to the parts).
std::string go_sprint_compound(const Value& v,
                               const std::function<std::string(const Value&)>& element);
// Go's %v of a float64 (strconv 'g' with the shortest digits, exponent from 1e+06 and below 1e-04).
std::string go_format_float(double d);
// Go's %v of a float64 in encoding/json ('f' shortest; 'e' below 1e-6 and from 1e21).
std::string go_json_float(double d);
// encoding/json of a value (map keys sorted, HTML characters escaped as \u003c ...).
std::string go_json(const Value& v);
// encoding/json of a string, quoted.
std::string go_json_string(const std::string& s);

}  // namespace vkllm::prompt
