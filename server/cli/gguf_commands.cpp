// `vkllm gguf-info FILE [--json] [--raw]`: a GGUF file's header, metadata and tensor table, as
// the loaders see it (after a load-time layout translation, which it names), or --raw as stored.
#include <cstdio>
#include <iostream>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <sstream>
#include <stdexcept>
#include <string>

#include "engine/gguf/gguf_file.h"
#include "engine/gguf/ollama_layout.h"
#include "registry/go_json.h"
#include "server/cli/commands.h"

namespace vkllm::cli {
namespace {

using gguf::Array;
using gguf::GgufFile;
using gguf::Value;
using gguf::ValueType;
using Json = nlohmann::ordered_json;  // keeps metadata in file order

// Text output shortens what would flood a terminal; --json always prints everything.
constexpr size_t kMaxArrayItemsShown = 8;
constexpr size_t kMaxStringCharsShown = 120;

std::string type_label(const Value& v) {
  if (v.type() != ValueType::ARRAY) return gguf::value_type_name(v.type());
  const auto& a = *std::get<std::shared_ptr<Array>>(v.v);
  if (a.element_type == ValueType::ARRAY && !a.items.empty()) {
    return "array[" + type_label(a.items.front()) + "]";
  }
  return "array[" + gguf::value_type_name(a.element_type) + "]";
}

// At most `max_chars` characters of `s`, Go-quoted, then how long it really is.
std::string quoted(const std::string& s, size_t max_chars) {
  if (s.size() <= max_chars) return registry::go_quote(s);
  return registry::go_quote(s.substr(0, max_chars)) + "... (" + std::to_string(s.size()) +
         " bytes)";
}

std::string text_value(const Value& v) {
  return std::visit(
      [&](const auto& x) -> std::string {
        using X = std::decay_t<decltype(x)>;
        if constexpr (std::is_same_v<X, std::string>) {
          return quoted(x, kMaxStringCharsShown);
        } else if constexpr (std::is_same_v<X, std::shared_ptr<Array>>) {
          std::string out = "[";
          const size_t shown = std::min(x->items.size(), kMaxArrayItemsShown);
          for (size_t i = 0; i < shown; ++i) {
            if (i) out += ", ";
            out += x->items[i].type() == ValueType::STRING
                       ? quoted(std::get<std::string>(x->items[i].v), 40)
                       : text_value(x->items[i]);
          }
          if (shown < x->items.size()) out += ", ...";
          out += "] (" + std::to_string(x->items.size()) + " items)";
          return out;
        } else if constexpr (std::is_same_v<X, bool>) {
          return x ? "true" : "false";
        } else if constexpr (std::is_floating_point_v<X>) {
          std::ostringstream s;
          s << x;
          return s.str();
        } else {
          return std::to_string(x);
        }
      },
      v.v);
}

Json json_value(const Value& v) {
  return std::visit(
      [&](const auto& x) -> Json {
        using X = std::decay_t<decltype(x)>;
        if constexpr (std::is_same_v<X, std::shared_ptr<Array>>) {
          Json arr = Json::array();
          for (const Value& item : x->items) arr.push_back(json_value(item));
          return arr;
        } else {
          return Json(x);
        }
      },
      v.v);
}

std::string shape_text(const std::vector<uint64_t>& shape) {
  std::string s = "[";
  for (size_t i = 0; i < shape.size(); ++i) {
    if (i) s += ", ";
    s += std::to_string(shape[i]);
  }
  return s + "]";
}

void print_json(const std::string& path, const GgufFile& f) {
  Json out;
  out["file"] = path;
  out["version"] = f.version();
  out["alignment"] = f.alignment();
  out["data_offset"] = f.data_offset();
  out["file_size"] = f.bytes().size();
  const auto& layout = f.translation();
  out["translation"] =
      layout.applied() ? Json{{"name", layout.name}, {"changes", layout.changes}} : Json(nullptr);
  Json metadata = Json::object();
  Json types = Json::object();
  for (std::string_view key : f.metadata_keys()) {
    const Value& v = *f.find(key);
    metadata[std::string(key)] = json_value(v);
    types[std::string(key)] = type_label(v);
  }
  out["metadata"] = std::move(metadata);
  out["metadata_types"] = std::move(types);
  Json tensors = Json::array();
  for (const auto& t : f.tensors()) {
    tensors.push_back({{"name", t.name},
                       {"type", gguf::type_name(t.type)},
                       {"shape", t.shape},
                       {"elements", t.element_count()},
                       {"offset", t.offset},
                       {"file_offset", f.data_offset() + t.offset},
                       {"bytes", t.byte_size}});
  }
  out["tensors"] = std::move(tensors);
  // Token strings need not be valid UTF-8; replace bad bytes instead of failing.
  std::cout << out.dump(2, ' ', false, Json::error_handler_t::replace) << "\n";
}

void print_text(const std::string& path, const GgufFile& f) {
  std::cout << "file:        " << path << "\n"
            << "version:     " << f.version() << "\n"
            << "size:        " << f.bytes().size() << " bytes\n"
            << "alignment:   " << f.alignment() << "\n"
            << "data offset: " << f.data_offset() << "\n";
  const auto& layout = f.translation();
  std::cout << "layout:      "
            << (layout.applied() ? layout.name + ", translated to llama.cpp's at load"
                                 : std::string("as stored (no translation)"))
            << "\n";
  for (const auto& change : layout.changes) std::cout << "  " << change << "\n";
  std::cout << "\nmetadata (" << f.metadata().size() << " keys):\n";
  for (std::string_view key : f.metadata_keys()) {
    const Value& v = *f.find(key);
    std::cout << "  " << key << " (" << type_label(v) << ") = " << text_value(v) << "\n";
  }

  uint64_t total = 0;
  size_t name_width = 4, shape_width = 5;
  for (const auto& t : f.tensors()) {
    name_width = std::max(name_width, t.name.size());
    shape_width = std::max(shape_width, shape_text(t.shape).size());
    total += t.byte_size;
  }
  std::cout << "\ntensors (" << f.tensors().size() << ", " << total << " bytes):\n";
  auto pad = [](std::string s, size_t w) {
    s.resize(std::max(w, s.size()), ' ');
    return s;
  };
  std::cout << "  " << pad("name", name_width) << "  " << pad("type", 6) << "  "
            << pad("shape", shape_width) << "  " << pad("offset", 12) << "  bytes\n";
  for (const auto& t : f.tensors()) {
    std::cout << "  " << pad(t.name, name_width) << "  "
              << pad(std::string(gguf::type_name(t.type)), 6) << "  "
              << pad(shape_text(t.shape), shape_width) << "  " << pad(std::to_string(t.offset), 12)
              << "  " << t.byte_size << "\n";
  }
  std::cout << "(offsets are relative to the data section at file offset " << f.data_offset()
            << ")\n";
}

struct InfoOptions {
  std::string path;
  bool json = false;
  bool raw = false;
};

int gguf_info(const InfoOptions& opts) {
  std::optional<GgufFile> opened;
  try {
    opened.emplace(
        GgufFile::open(opts.path, opts.raw ? gguf::ReadLayout::Raw : gguf::ReadLayout::Translated));
  } catch (const gguf::LayoutError& e) {
    throw std::runtime_error(std::string(e.what()) + " (--raw shows the file as stored)");
  }
  const GgufFile& f = *opened;
  if (opts.json) {
    print_json(opts.path, f);
  } else {
    print_text(opts.path, f);
  }
  return 0;
}

}  // namespace

void add_gguf_commands(CLI::App& app) {
  auto opts = std::make_shared<InfoOptions>();
  CLI::App* info = app.add_subcommand("gguf-info", "Show a GGUF file's metadata and tensor table");
  info->add_option("file", opts->path, "GGUF file")->required();
  info->add_flag("--json", opts->json, "Print everything as JSON (arrays in full)");
  info->add_flag("--raw", opts->raw,
                 "Show the file as stored, without the load-time translation of another "
                 "converter's layout (e.g. Ollama's)");
  info->callback([opts] { run_command([opts] { return gguf_info(*opts); }); });
}

}  // namespace vkllm::cli
