#include "engine/gguf/gguf_writer.h"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <stdexcept>
#include <system_error>
#include <utility>

#include "engine/gguf/gguf_mapped_file.h"

namespace vkllm::gguf {

namespace {

constexpr uint32_t kVersion = 3;
constexpr std::string_view kAlignmentKey = "general.alignment";

class ByteSink {
 public:
  explicit ByteSink(std::vector<uint8_t>& out) : out_(out) {}
  template <typename T>
  void put(T v) {
    const size_t at = out_.size();
    out_.resize(at + sizeof(T));
    std::memcpy(out_.data() + at, &v, sizeof(T));
  }
  void put_string(std::string_view s) {
    put<uint64_t>(s.size());
    out_.insert(out_.end(), s.begin(), s.end());
  }
  void pad_to(uint64_t alignment) { out_.resize(align_up(out_.size(), alignment), 0); }
  static uint64_t align_up(uint64_t n, uint64_t a) { return (n + a - 1) / a * a; }

 private:
  std::vector<uint8_t>& out_;
};

// Writes the payload of v (no type tag) as element type `type`.
void put_value(ByteSink& s, const Value& v, ValueType type, std::string_view key) {
  if (v.type() != type) {
    throw std::invalid_argument(
        "GGUF writer: metadata key '" + std::string(key) + "' holds an item of type " +
        std::to_string(static_cast<uint32_t>(v.type())) + " inside an array of type " +
        std::to_string(static_cast<uint32_t>(type)));
  }
  std::visit(
      [&](const auto& x) {
        using X = std::decay_t<decltype(x)>;
        if constexpr (std::is_same_v<X, std::string>) {
          s.put_string(x);
        } else if constexpr (std::is_same_v<X, std::shared_ptr<Array>>) {
          if (!x) {
            throw std::invalid_argument("GGUF writer: metadata key '" + std::string(key) +
                                        "' holds a null array");
          }
          s.put<uint32_t>(static_cast<uint32_t>(x->element_type));
          s.put<uint64_t>(x->items.size());
          for (const Value& item : x->items) put_value(s, item, x->element_type, key);
        } else if constexpr (std::is_same_v<X, bool>) {
          s.put<uint8_t>(x ? 1 : 0);
        } else {
          s.put<X>(x);
        }
      },
      v.v);
}

uint64_t alignment_from(const Value& v) {
  uint64_t a = 0;
  std::visit(
      [&](const auto& x) {
        using X = std::decay_t<decltype(x)>;
        if constexpr (std::is_integral_v<X> && !std::is_same_v<X, bool>) {
          if (std::in_range<uint64_t>(x)) a = static_cast<uint64_t>(x);
        }
      },
      v.v);
  if (a == 0 || (a & (a - 1)) != 0) {
    throw std::invalid_argument("GGUF writer: general.alignment must be a nonzero power of two");
  }
  return a;
}

template <typename T>
Value array_of(ValueType type, const std::vector<T>& items) {
  auto arr = std::make_shared<Array>();
  arr->element_type = type;
  arr->items.reserve(items.size());
  for (const T& x : items) arr->items.push_back(Value{x});
  return Value{std::move(arr)};
}

void write_all(int fd, const uint8_t* data, size_t n, const std::filesystem::path& path) {
  while (n > 0) {
    ssize_t w = ::write(fd, data, n);
    if (w < 0) {
      if (errno == EINTR) continue;
      throw std::system_error(errno, std::generic_category(),
                              "cannot write '" + path.string() + "'");
    }
    data += w;
    n -= static_cast<size_t>(w);
  }
}

}  // namespace

void GgufWriter::set(std::string key, Value value) {
  if (key == kAlignmentKey) {
    // ggml reads general.alignment strictly as u32, whatever integer type we were given.
    const uint64_t a = alignment_from(value);
    if (a > UINT32_MAX)
      throw std::invalid_argument("GGUF writer: general.alignment must fit in u32");
    alignment_ = a;
    value = Value{static_cast<uint32_t>(alignment_)};
  }
  for (auto& [k, v] : metadata_) {
    if (k == key) {  // replacing keeps the original position; GGUF forbids duplicate keys
      v = std::move(value);
      return;
    }
  }
  metadata_.emplace_back(std::move(key), std::move(value));
}

void GgufWriter::set_u32(std::string key, uint32_t v) {
  set(std::move(key), Value{v});
}
void GgufWriter::set_i32(std::string key, int32_t v) {
  set(std::move(key), Value{v});
}
void GgufWriter::set_u64(std::string key, uint64_t v) {
  set(std::move(key), Value{v});
}
void GgufWriter::set_f32(std::string key, float v) {
  set(std::move(key), Value{v});
}
void GgufWriter::set_bool(std::string key, bool v) {
  set(std::move(key), Value{v});
}
void GgufWriter::set_string(std::string key, std::string v) {
  set(std::move(key), Value{std::move(v)});
}
void GgufWriter::set_strings(std::string key, const std::vector<std::string>& v) {
  set(std::move(key), array_of(ValueType::STRING, v));
}
void GgufWriter::set_f32s(std::string key, const std::vector<float>& v) {
  set(std::move(key), array_of(ValueType::F32, v));
}
void GgufWriter::set_i32s(std::string key, const std::vector<int32_t>& v) {
  set(std::move(key), array_of(ValueType::I32, v));
}

void GgufWriter::copy_metadata(const GgufFile& src, std::string_view prefix) {
  for (std::string_view key : src.metadata_keys()) {
    if (key.starts_with(prefix)) set(std::string(key), *src.find(key));
  }
}

const Value* GgufWriter::find(std::string_view key) const {
  for (const auto& [k, v] : metadata_) {
    if (k == key) return &v;
  }
  return nullptr;
}

void GgufWriter::erase(std::string_view key) {
  std::erase_if(metadata_, [&](const auto& kv) { return kv.first == key; });
}

std::vector<std::string> GgufWriter::keys() const {
  std::vector<std::string> out;
  out.reserve(metadata_.size());
  for (const auto& [k, v] : metadata_) out.push_back(k);
  return out;
}

void GgufWriter::rename_tensor(std::string_view from, std::string to) {
  PendingTensor* found = nullptr;
  for (auto& t : tensors_) {
    if (t.name == to) throw std::invalid_argument("GGUF writer: tensor " + to + " already exists");
    if (t.name == from) found = &t;
  }
  if (!found) {
    throw std::invalid_argument("GGUF writer: no tensor " + std::string(from) + " to rename");
  }
  found->name = std::move(to);
}

bool GgufWriter::has_tensor(std::string_view name) const {
  return std::any_of(tensors_.begin(), tensors_.end(),
                     [&](const auto& t) { return t.name == name; });
}

void GgufWriter::stack_tensors(std::string_view first, std::string_view second, std::string name) {
  const auto find = [&](std::string_view n) {
    const auto it =
        std::find_if(tensors_.begin(), tensors_.end(), [&](const auto& t) { return t.name == n; });
    if (it == tensors_.end())
      throw std::invalid_argument("GGUF writer: no tensor " + std::string(n) + " to stack");
    return it;
  };
  auto a = find(first);
  const auto b = find(second);
  if (a->shape.size() != 3 || a->shape.size() != b->shape.size() || a->type != b->type ||
      a->shape[0] != b->shape[0] || a->shape[2] != b->shape[2]) {
    throw std::invalid_argument("GGUF writer: tensors " + a->name + " and " + b->name +
                                " are not 3-D slices of one type and width to stack");
  }
  for (const auto& t : tensors_)
    if (t.name == name) throw std::invalid_argument("GGUF writer: tensor " + name + " exists");
  PendingTensor st{std::move(name), a->type, a->shape, {}, a->byte_size + b->byte_size, nullptr};
  st.shape[1] += b->shape[1];
  const uint64_t slices = a->shape[2];
  st.fill = [ta = *a, tb = *b, slices](std::span<uint8_t> out) {
    const std::vector<uint8_t> da = materialize(ta), db = materialize(tb);
    const uint64_t na = da.size() / slices, nb = db.size() / slices;
    for (uint64_t e = 0; e < slices; ++e) {
      std::memcpy(out.data() + e * (na + nb), da.data() + e * na, na);
      std::memcpy(out.data() + e * (na + nb) + na, db.data() + e * nb, nb);
    }
  };
  *a = std::move(st);
  tensors_.erase(find(second));
}

std::optional<GgufWriter::TensorCopy> GgufWriter::copy_tensor(std::string_view name) const {
  for (const auto& t : tensors_)
    if (t.name == name) return TensorCopy{t.type, t.shape, materialize(t)};
  return std::nullopt;
}

void GgufWriter::set_alignment(uint64_t a) {
  if (a == 0 || (a & (a - 1)) != 0 || a > UINT32_MAX) {
    throw std::invalid_argument("GGUF writer: alignment " + std::to_string(a) +
                                " is not a power of two that fits in u32");
  }
  set_u32(std::string(kAlignmentKey), static_cast<uint32_t>(a));
}

void GgufWriter::add_tensor(std::string name, TensorType type, std::vector<uint64_t> shape,
                            std::vector<uint8_t> data) {
  const uint64_t size = data.size();
  add_pending({std::move(name), type, std::move(shape), std::move(data), size, nullptr});
}

void GgufWriter::add_lazy_tensor(std::string name, TensorType type, std::vector<uint64_t> shape,
                                 TensorFiller fill) {
  if (!fill) throw std::invalid_argument("GGUF writer: tensor '" + name + "' has no filler");
  add_pending({std::move(name), type, std::move(shape), {}, 0, std::move(fill)});
}

void GgufWriter::add_pending(PendingTensor t) {
  auto tr = type_traits(static_cast<uint32_t>(t.type));
  const std::string what = "GGUF writer: tensor '" + t.name + "'";
  if (!tr) throw std::invalid_argument(what + " has an unknown type");
  // ggml keeps names in char[GGML_MAX_NAME = 64] with a terminating NUL.
  if (t.name.empty() || t.name.size() > 63) {
    throw std::invalid_argument(what + " needs a name of 1 to 63 bytes (llama.cpp's limit)");
  }
  if (t.shape.empty() || t.shape.size() > 4) {
    throw std::invalid_argument(what + " needs 1 to 4 dimensions, got " +
                                std::to_string(t.shape.size()));
  }
  uint64_t elements = 1;
  for (uint64_t d : t.shape) {
    if (d == 0 || __builtin_mul_overflow(elements, d, &elements)) {
      throw std::invalid_argument(what + " has a zero or overflowing dimension");
    }
  }
  const uint64_t bytes = row_bytes(t.type, t.shape[0]) * (elements / t.shape[0]);
  if (t.fill) {
    t.byte_size = bytes;
  } else if (t.data.size() != bytes) {
    throw std::invalid_argument(what + " needs " + std::to_string(bytes) + " bytes of data, got " +
                                std::to_string(t.data.size()));
  }
  for (const auto& other : tensors_) {
    if (other.name == t.name) throw std::invalid_argument(what + " was added twice");
  }
  tensors_.push_back(std::move(t));
}

namespace {
// Header, metadata and tensor infos, padded to the data section start.
std::vector<uint8_t> serialize_head(const std::vector<std::pair<std::string, Value>>& metadata,
                                    const auto& tensors, uint64_t alignment) {
  std::vector<uint8_t> out;
  ByteSink s(out);
  s.put<uint32_t>(kGgufMagic);
  s.put<uint32_t>(kVersion);
  s.put<uint64_t>(tensors.size());
  s.put<uint64_t>(metadata.size());
  for (const auto& [key, value] : metadata) {
    s.put_string(key);
    s.put<uint32_t>(static_cast<uint32_t>(value.type()));
    put_value(s, value, value.type(), key);
  }
  uint64_t offset = 0;  // relative to the data section, as the spec requires
  for (const auto& t : tensors) {
    s.put_string(t.name);
    s.put<uint32_t>(static_cast<uint32_t>(t.shape.size()));
    for (uint64_t d : t.shape) s.put<uint64_t>(d);
    s.put<uint32_t>(static_cast<uint32_t>(t.type));
    s.put<uint64_t>(offset);
    offset = ByteSink::align_up(offset + t.byte_size, alignment);
  }
  s.pad_to(alignment);
  return out;
}
}  // namespace

std::vector<uint8_t> GgufWriter::materialize(const PendingTensor& t) {
  if (!t.fill) return t.data;
  std::vector<uint8_t> data(t.byte_size);
  t.fill(data);
  return data;
}

std::vector<uint8_t> GgufWriter::serialize() const {
  std::vector<uint8_t> out = serialize_head(metadata_, tensors_, alignment_);
  ByteSink s(out);
  for (const auto& t : tensors_) {
    const std::vector<uint8_t> data = materialize(t);
    out.insert(out.end(), data.begin(), data.end());
    s.pad_to(alignment_);
  }
  return out;
}

std::vector<uint8_t> GgufWriter::serialize_header() const {
  return serialize_head(metadata_, tensors_, alignment_);
}

uint64_t GgufWriter::file_size() const {
  uint64_t size = serialize_head(metadata_, tensors_, alignment_).size();
  for (const auto& t : tensors_) size = ByteSink::align_up(size + t.byte_size, alignment_);
  return size;
}

void GgufWriter::write_to(const BytesOut& sink) const {
  sink(serialize_head(metadata_, tensors_, alignment_));
  const std::vector<uint8_t> zeros(alignment_, 0);
  for (const auto& t : tensors_) {
    const std::vector<uint8_t> data = materialize(t);
    sink(data);
    const uint64_t pad = (alignment_ - data.size() % alignment_) % alignment_;
    sink(std::span(zeros.data(), pad));
  }
}

void GgufWriter::write(const std::filesystem::path& path) const {
  const std::filesystem::path tmp = path.string() + ".tmp." + std::to_string(::getpid());
  UniqueFd fd(::open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644));
  if (fd.get() < 0) {
    throw std::system_error(errno, std::generic_category(), "cannot create '" + tmp.string() + "'");
  }
  try {
    // Stream the tensor data instead of building the whole image, so big models need no copy.
    write_to([&](std::span<const uint8_t> b) { write_all(fd.get(), b.data(), b.size(), tmp); });
    if (::fsync(fd.get()) != 0) {
      throw std::system_error(errno, std::generic_category(),
                              "cannot fsync '" + tmp.string() + "'");
    }
    if (::close(fd.release()) != 0) {
      throw std::system_error(errno, std::generic_category(),
                              "cannot close '" + tmp.string() + "'");
    }
    std::filesystem::rename(tmp, path);
  } catch (...) {
    std::error_code ignored;
    std::filesystem::remove(tmp, ignored);
    throw;
  }
  // Make the rename itself durable.
  auto dir = path.parent_path();
  UniqueFd dfd(::open(dir.empty() ? "." : dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
  if (dfd.get() >= 0) ::fsync(dfd.get());
}

}  // namespace vkllm::gguf
