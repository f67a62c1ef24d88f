#include "server/models/gguf_summary.h"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <cctype>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <mutex>
#include <random>

#include "engine/gguf/gguf_file.h"
#include "engine/gguf/inline_projector.h"
#include "engine/gguf/ollama_layout.h"
#include "registry/errors.h"

namespace vkllm::models {
namespace {

namespace fs = std::filesystem;

nlohmann::ordered_json value_to_json(const gguf::Value& v);

nlohmann::ordered_json array_to_json(const gguf::Array& a) {
  nlohmann::ordered_json out = nlohmann::ordered_json::array();
  for (const auto& item : a.items) out.push_back(value_to_json(item));
  return out;
}

nlohmann::ordered_json value_to_json(const gguf::Value& v) {
  return std::visit(
      [](const auto& x) -> nlohmann::ordered_json {
        using T = std::decay_t<decltype(x)>;
        if constexpr (std::is_same_v<T, std::shared_ptr<gguf::Array>>) {
          return x ? array_to_json(*x) : nlohmann::ordered_json::array();
        } else if constexpr (std::is_same_v<T, float>) {
          // Keep what the file says without float→double noise (0.1f prints as 0.1).
          char buf[32];
          std::snprintf(buf, sizeof buf, "%.9g", static_cast<double>(x));
          return std::strtod(buf, nullptr);
        } else if constexpr (std::is_same_v<T, std::string>) {
          return x;
        } else {
          return x;
        }
      },
      v.v);
}

std::optional<uint64_t> as_u64(const gguf::Value* v) {
  if (v == nullptr) return std::nullopt;
  return std::visit(
      [](const auto& x) -> std::optional<uint64_t> {
        using T = std::decay_t<decltype(x)>;
        if constexpr (std::is_integral_v<T> && !std::is_same_v<T, bool>) {
          if (x < 0) return std::nullopt;
          return static_cast<uint64_t>(x);
        } else {
          return std::nullopt;
        }
      },
      v->v);
}

std::string as_string(const gguf::Value* v) {
  if (v == nullptr) return {};
  if (const auto* s = std::get_if<std::string>(&v->v)) return *s;
  return {};
}

std::string upper(std::string_view s) {
  std::string out(s);
  for (auto& c : out) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  return out;
}

// Opens a GGUF image of `size` bytes whose first prefix.size() bytes are real: a sparse temp
// file (holes read as zeros and take no disk), memory-mapped by GgufFile and unlinked at once.
// The caller trusts the result only if the header ended inside the real prefix.
gguf::GgufFile open_sparse(const fs::path& dir, std::span<const std::byte> prefix, uint64_t size) {
  std::random_device rd;
  const fs::path path = dir / ("gguf-header-" + std::to_string(rd()) + std::to_string(rd()));
  const int fd = ::open(path.c_str(), O_CREAT | O_EXCL | O_RDWR | O_CLOEXEC, 0600);
  if (fd < 0) throw std::runtime_error("cannot create " + path.string());
  struct Closer {
    int fd;
    fs::path path;
    ~Closer() {
      ::close(fd);
      std::error_code ec;
      fs::remove(path, ec);
    }
  } closer{fd, path};
  size_t done = 0;
  while (done < prefix.size()) {
    const auto n = ::write(fd, prefix.data() + done, prefix.size() - done);
    if (n <= 0) throw std::runtime_error("cannot write " + path.string());
    done += static_cast<size_t>(n);
  }
  if (::ftruncate(fd, static_cast<off_t>(size)) != 0) {
    throw std::runtime_error("cannot size " + path.string());
  }
  // Raw: past a short prefix the header reads as zeros; only a whole header is translated.
  return gguf::GgufFile::open(path, gguf::ReadLayout::Raw);
}

// The header as stored (ReadLayout::Raw): the caller translates it after looking for an embedded
// vision tower, which the text view hides.
gguf::GgufFile open_gguf_header(const registry::BlobStore& blobs, const registry::Digest& digest) {
  const auto info = blobs.info(digest);
  if (!info) {
    throw registry::RegistryError(registry::ErrorKind::not_found,
                                  "blob " + digest.str() + " not found");
  }
  if (info->encoding == registry::BlobEncoding::raw) {
    if (const auto path = blobs.stored_path(digest))
      return gguf::GgufFile::open(*path, gguf::ReadLayout::Raw);
  }
  auto reader = blobs.open(digest);
  uint64_t want = std::min<uint64_t>(info->size, 4u << 20);
  std::vector<std::byte> prefix;
  for (;;) {
    const size_t have = prefix.size();
    prefix.resize(want);
    const size_t got = reader.read_at(have, std::span(prefix).subspan(have));
    prefix.resize(have + got);
    std::optional<gguf::GgufFile> file;
    std::string error;
    try {
      file.emplace(open_sparse(blobs.temp_dir(), prefix, info->size));
    } catch (const gguf::GgufError& e) {
      error = e.what();
    }
    if (file && file->data_offset() <= prefix.size()) return std::move(*file);
    if (prefix.size() >= info->size) throw gguf::GgufError(error.empty() ? "bad header" : error);
    want = std::min<uint64_t>(info->size, want * 4);
  }
}

constexpr std::array<const char*, 39> kFileTypes = {
    "F32",    "F16",     "Q4_0",    "Q4_1",    "Q4_1_SOME_F16", "Q4_2",   "Q4_3",   "Q8_0",
    "Q5_0",   "Q5_1",    "Q2_K",    "Q3_K_S",  "Q3_K_M",        "Q3_K_L", "Q4_K_S", "Q4_K_M",
    "Q5_K_S", "Q5_K_M",  "Q6_K",    "IQ2_XXS", "IQ2_XS",        "Q2_K_S", "IQ3_XS", "IQ3_XXS",
    "IQ1_S",  "IQ4_NL",  "IQ3_S",   "IQ3_M",   "IQ2_S",         "IQ2_M",  "IQ4_XS", "IQ1_M",
    "BF16",   "unknown", "unknown", "unknown", "TQ1_0",         "TQ2_0",  "MXFP4"};

// Reading a summary parses the GGUF header (milliseconds); blobs are immutable, so the last few
// summaries are kept. Failures are not kept: a blob may be repaired by a re-pull.
std::mutex cache_mutex;
std::map<registry::Digest, std::shared_ptr<const GgufSummary>> cache;
constexpr size_t kCacheLimit = 256;

}  // namespace

std::string human_number(uint64_t n) {
  char buf[32];
  auto fmt = [&](double x, const char* whole, const char* frac) {
    std::snprintf(buf, sizeof buf, x == std::floor(x) ? whole : frac, x);
    return std::string(buf);
  };
  if (n >= 1000000000ull) return fmt(n / 1e9, "%.0fB", "%.1fB");
  if (n >= 1000000ull) return fmt(n / 1e6, "%.0fM", "%.2fM");
  if (n >= 1000ull) {
    std::snprintf(buf, sizeof buf, "%.0fK", n / 1e3);
    return buf;
  }
  return std::to_string(n);
}

std::string file_type_name(uint64_t id) {
  return id < kFileTypes.size() ? kFileTypes[id] : "unknown";
}

bool GgufSummary::is_projector() const {
  if (general_type == "projector" || general_type == "mmproj") return true;
  return architecture == "clip" && !model_info.contains("clip.block_count");
}

registry::ModelDetails GgufSummary::details() const {
  registry::ModelDetails d;
  d.format = "gguf";
  d.family = architecture;
  if (!architecture.empty()) d.families = {architecture};
  d.parameter_size = human_number(parameter_count);
  d.quantization_level = file_type;
  return d;
}

nlohmann::ordered_json GgufSummary::show_model_info(bool verbose) const {
  nlohmann::ordered_json out = nlohmann::ordered_json::object();
  for (auto it = model_info.begin(); it != model_info.end(); ++it) {
    if (it.key() == "general.name" || it.key() == "tokenizer.chat_template") continue;
    if (!verbose && it.value().is_array() && it.value().size() > 5) {
      out[it.key()] = nlohmann::ordered_json::array();
    } else {
      out[it.key()] = it.value();
    }
  }
  return out;
}

std::shared_ptr<const GgufSummary> read_gguf_summary(const registry::BlobStore& blobs,
                                                     const registry::Digest& blob) {
  {
    std::lock_guard lock(cache_mutex);
    if (const auto it = cache.find(blob); it != cache.end()) return it->second;
  }
  GgufSummary s;
  try {
    auto file = open_gguf_header(blobs, blob);
    s.inline_projector = gguf::inline_projector_arch(file);
    // A tower the translation hides (Ollama's qwen25vl) still makes the file a vision model, one
    // whose encoder vkllm does not run yet (model_facts sets it aside, and says so).
    const auto raw_arch = file.get_optional<std::string>("general.architecture");
    const bool raw_tower = raw_arch && file.has(*raw_arch + ".vision.block_count");
    // Likewise an audio encoder (Ollama's gemma4): listed, and set aside as not run.
    const bool raw_audio = raw_arch && file.has(*raw_arch + ".audio.block_count");
    gguf::translate_known_layouts(file);
    for (const auto& [key, value] : file.metadata()) s.model_info[key] = value_to_json(value);
    s.architecture = as_string(file.find("general.architecture"));
    s.general_type = as_string(file.find("general.type"));
    s.chat_template = as_string(file.find("tokenizer.chat_template"));
    uint64_t elements = 0;
    for (const auto& t : file.tensors()) {
      elements += t.element_count();
      nlohmann::json shape = nlohmann::json::array();
      for (auto d : t.shape) shape.push_back(d);
      nlohmann::json entry;
      entry["name"] = t.name;
      entry["type"] = upper(gguf::type_name(t.type));
      entry["shape"] = std::move(shape);
      s.tensors.push_back(std::move(entry));
    }
    s.parameter_count = as_u64(file.find("general.parameter_count")).value_or(elements);
    s.model_info["general.parameter_count"] = s.parameter_count;
    if (const auto ft = as_u64(file.find("general.file_type"))) {
      s.file_type = file_type_name(*ft);
    } else if (!file.tensors().empty()) {
      s.file_type = upper(gguf::type_name(file.tensors().front().type));
    }
    const std::string& a = s.architecture;
    s.context_length = as_u64(file.find(a + ".context_length"));
    s.embedding_length = as_u64(file.find(a + ".embedding_length"));
    s.capabilities.push_back(file.has(a + ".pooling_type") ? "embedding" : "completion");
    // vkllm's own: a cross-encoder (rank pooling) answers /api/rerank and /v1/rerank.
    if (as_u64(file.find(a + ".pooling_type")) == 4u) s.capabilities.push_back("rerank");
    if (file.has(a + ".vision.block_count") || raw_tower || !s.inline_projector.empty())
      s.capabilities.push_back("vision");
    if (file.has(a + ".audio.block_count") || raw_audio) s.capabilities.push_back("audio");
  } catch (const gguf::GgufError& e) {
    throw registry::RegistryError(registry::ErrorKind::invalid_input,
                                  std::string("supplied file was not in GGUF format: ") + e.what());
  } catch (const gguf::LayoutError& e) {
    throw registry::RegistryError(registry::ErrorKind::invalid_input, e.what());
  }
  auto shared = std::make_shared<const GgufSummary>(std::move(s));
  std::lock_guard lock(cache_mutex);
  if (cache.size() >= kCacheLimit) cache.erase(cache.begin());
  cache.emplace(blob, shared);
  return shared;
}

}  // namespace vkllm::models
