#include "engine/gguf/gguf_file.h"

#include <algorithm>
#include <cstring>
#include <limits>
#include <numeric>
#include <system_error>
#include <type_traits>
#include <unordered_map>
#include <utility>

#include "engine/gguf/gguf_file_impl.h"
#include "engine/gguf/gguf_mapped_file.h"
#include "engine/gguf/gguf_value_convert.h"
#include "engine/gguf/ollama_layout.h"

namespace vkllm::gguf {

namespace {

constexpr uint32_t kMaxDims = 4;
constexpr size_t kMaxTensorNameBytes = 64;  // the GGUF spec's limit
// Arrays of arrays are legal GGUF; nobody needs them deeper than this, and a limit keeps
// hostile files from exhausting the stack.
constexpr int kMaxArrayDepth = 8;

}  // namespace

std::string value_type_name(ValueType t) {
  switch (t) {
    case ValueType::U8:
      return "u8";
    case ValueType::I8:
      return "i8";
    case ValueType::U16:
      return "u16";
    case ValueType::I16:
      return "i16";
    case ValueType::U32:
      return "u32";
    case ValueType::I32:
      return "i32";
    case ValueType::F32:
      return "f32";
    case ValueType::BOOL:
      return "bool";
    case ValueType::STRING:
      return "string";
    case ValueType::ARRAY:
      return "array";
    case ValueType::U64:
      return "u64";
    case ValueType::I64:
      return "i64";
    case ValueType::F64:
      return "f64";
  }
  return "type " + std::to_string(static_cast<uint32_t>(t));
}

namespace {

bool valid_value_type(uint32_t raw) {
  return raw <= static_cast<uint32_t>(ValueType::F64);
}

// Smallest encoding of one value of type t, used to reject counts that cannot fit the file
// before anything is allocated for them.
uint64_t min_encoded_size(ValueType t) {
  switch (t) {
    case ValueType::U8:
    case ValueType::I8:
    case ValueType::BOOL:
      return 1;
    case ValueType::U16:
    case ValueType::I16:
      return 2;
    case ValueType::U32:
    case ValueType::I32:
    case ValueType::F32:
      return 4;
    case ValueType::U64:
    case ValueType::I64:
    case ValueType::F64:
    case ValueType::STRING:
      return 8;  // length prefix
    case ValueType::ARRAY:
      return 12;  // element type + count
  }
  return 1;
}

}  // namespace

namespace detail {

// Where in the file a value sits, described lazily so the happy path builds no strings.
struct Where {
  std::string_view what;  // "metadata key", "tensor info", ...
  std::string_view name;  // key or tensor name, may be empty
  const Where* parent = nullptr;
  uint64_t index = 0;
  bool is_item = false;  // true: this is item `index` of the parent array

  std::string describe() const {
    if (is_item && parent) return parent->describe() + "[" + std::to_string(index) + "]";
    std::string s(what);
    if (!name.empty()) s += " '" + std::string(name) + "'";
    return s;
  }
};

class Cursor {
 public:
  explicit Cursor(std::span<const uint8_t> bytes) : bytes_(bytes) {}

  size_t pos() const { return pos_; }
  uint64_t remaining() const { return bytes_.size() - pos_; }

  [[noreturn]] void fail(const std::string& field, uint64_t offset, const std::string& msg) const {
    throw GgufError("GGUF: " + field + " at byte offset " + std::to_string(offset) + ": " + msg);
  }

  void need(uint64_t n, const std::string& field) const {
    if (n > remaining()) {
      fail(field, pos_,
           "needs " + std::to_string(n) + " bytes but only " + std::to_string(remaining()) +
               " remain in the file (truncated?)");
    }
  }

  template <typename T>
  T read(const char* field) {
    if (sizeof(T) > remaining()) need(sizeof(T), field);
    T v;
    std::memcpy(&v, bytes_.data() + pos_, sizeof(T));
    pos_ += sizeof(T);
    return v;
  }
  template <typename T>
  T read(const Where& w) {
    if (sizeof(T) > remaining()) need(sizeof(T), w.describe());
    T v;
    std::memcpy(&v, bytes_.data() + pos_, sizeof(T));
    pos_ += sizeof(T);
    return v;
  }

  std::string_view read_string(const Where& w) {
    uint64_t len = read<uint64_t>(w);
    if (len > remaining()) {
      fail(w.describe(), pos_ - 8,
           "string length " + std::to_string(len) + " exceeds the " + std::to_string(remaining()) +
               " bytes left in the file");
    }
    std::string_view s(reinterpret_cast<const char*>(bytes_.data() + pos_), len);
    pos_ += len;
    return s;
  }

 private:
  std::span<const uint8_t> bytes_;
  size_t pos_ = 0;
};

Value read_value(Cursor& c, ValueType type, const Where& w, int depth);

std::shared_ptr<Array> read_array(Cursor& c, const Where& w, int depth) {
  const uint64_t start = c.pos();
  if (depth >= kMaxArrayDepth) {
    c.fail(w.describe(), start,
           "arrays nested deeper than " + std::to_string(kMaxArrayDepth) + " levels");
  }
  uint32_t raw_type = c.read<uint32_t>(w);
  if (!valid_value_type(raw_type)) {
    c.fail(w.describe(), start, "unknown array element type " + std::to_string(raw_type));
  }
  auto elem = static_cast<ValueType>(raw_type);
  uint64_t count = c.read<uint64_t>(w);
  if (count > c.remaining() / min_encoded_size(elem)) {
    c.fail(w.describe(), start + 4,
           "array of " + std::to_string(count) + " " + value_type_name(elem) +
               " items cannot fit in the " + std::to_string(c.remaining()) +
               " bytes left in the file");
  }
  auto arr = std::make_shared<Array>();
  arr->element_type = elem;
  arr->items.reserve(count);
  Where item{"", "", &w, 0, true};
  for (uint64_t i = 0; i < count; ++i) {
    item.index = i;
    arr->items.push_back(read_value(c, elem, item, depth + 1));
  }
  return arr;
}

Value read_value(Cursor& c, ValueType type, const Where& w, int depth) {
  switch (type) {
    case ValueType::U8:
      return Value{c.read<uint8_t>(w)};
    case ValueType::I8:
      return Value{c.read<int8_t>(w)};
    case ValueType::U16:
      return Value{c.read<uint16_t>(w)};
    case ValueType::I16:
      return Value{c.read<int16_t>(w)};
    case ValueType::U32:
      return Value{c.read<uint32_t>(w)};
    case ValueType::I32:
      return Value{c.read<int32_t>(w)};
    case ValueType::F32:
      return Value{c.read<float>(w)};
    case ValueType::BOOL: {
      const uint64_t at = c.pos();
      uint8_t b = c.read<uint8_t>(w);
      if (b > 1) c.fail(w.describe(), at, "bool value " + std::to_string(b) + " is not 0 or 1");
      return Value{b == 1};
    }
    case ValueType::STRING:
      return Value{std::string(c.read_string(w))};
    case ValueType::ARRAY:
      return Value{read_array(c, w, depth)};
    case ValueType::U64:
      return Value{c.read<uint64_t>(w)};
    case ValueType::I64:
      return Value{c.read<int64_t>(w)};
    case ValueType::F64:
      return Value{c.read<double>(w)};
  }
  c.fail(w.describe(), c.pos(), "unknown value type");
}

}  // namespace detail

using detail::Cursor;
using detail::read_value;
using detail::Where;

uint64_t TensorInfo::element_count() const {
  uint64_t n = 1;
  for (uint64_t d : shape) n *= d;  // validated not to overflow when parsed
  return n;
}

void GgufFile::Impl::parse() {
  Cursor c(bytes);
  uint32_t magic = c.read<uint32_t>("magic");
  if (magic != kGgufMagic) {
    char shown[5] = {};
    std::memcpy(shown, &magic, 4);
    for (char& ch : shown) {
      if (ch != 0 && (ch < 0x20 || ch > 0x7e)) ch = '?';
    }
    c.fail("magic", 0,
           "expected \"GGUF\" but found \"" + std::string(shown) + "\" — not a GGUF file");
  }
  version = c.read<uint32_t>("version");
  if (version == 1) {
    c.fail("version", 4, "GGUF v1 files are not supported (only v2 and v3); re-convert the model");
  }
  if (version != 2 && version != 3) {
    std::string hint;
    if (version == 0x02000000 || version == 0x03000000) hint = " (a big-endian GGUF file?)";
    c.fail("version", 4,
           "unsupported GGUF version " + std::to_string(version) + hint + "; expected 2 or 3");
  }
  const uint64_t tensor_count = c.read<uint64_t>("tensor_count");
  const uint64_t kv_count = c.read<uint64_t>("metadata_kv_count");
  // Each key-value pair takes at least 13 bytes (key length, type, one-byte value) and each
  // tensor info at least 32 (name length, n_dims, one dim, type, offset).
  if (tensor_count > c.remaining() / 32) {
    c.fail("tensor_count", 8,
           std::to_string(tensor_count) + " tensor infos cannot fit in the file's " +
               std::to_string(bytes.size()) + " bytes");
  }
  if (kv_count > c.remaining() / 13) {
    c.fail("metadata_kv_count", 16,
           std::to_string(kv_count) + " metadata entries cannot fit in the file's " +
               std::to_string(bytes.size()) + " bytes");
  }

  for (uint64_t i = 0; i < kv_count; ++i) {
    const uint64_t entry_at = c.pos();
    std::string index_name = "metadata entry " + std::to_string(i);
    Where key_where{index_name, ""};
    std::string_view key = c.read_string(key_where);
    Where w{"metadata key", key};
    const uint64_t type_at = c.pos();
    uint32_t raw_type = c.read<uint32_t>(w);
    if (!valid_value_type(raw_type)) {
      c.fail(w.describe(), type_at, "unknown value type " + std::to_string(raw_type));
    }
    Value value = read_value(c, static_cast<ValueType>(raw_type), w, 0);
    auto [it, inserted] = metadata.try_emplace(std::string(key), std::move(value));
    if (!inserted) c.fail(w.describe(), entry_at, "duplicate metadata key");
    key_order.push_back(&it->first);
  }

  if (auto it = metadata.find("general.alignment"); it != metadata.end()) {
    std::string why;
    auto a = detail::convert<uint64_t>(it->second, why);
    if (!a) throw GgufError("GGUF: metadata key 'general.alignment' " + why);
    if (*a == 0 || (*a & (*a - 1)) != 0) {
      throw GgufError("GGUF: metadata key 'general.alignment' is " + std::to_string(*a) +
                      ", which is not a nonzero power of two");
    }
    alignment = *a;
  }

  parse_tensor_infos(c, tensor_count);
}

void GgufFile::Impl::parse_tensor_infos(Cursor& c, uint64_t count) {
  tensors.reserve(count);
  std::vector<uint64_t> info_offsets;
  info_offsets.reserve(count);
  for (uint64_t i = 0; i < count; ++i) {
    const uint64_t info_at = c.pos();
    info_offsets.push_back(info_at);
    std::string index_name = "tensor info " + std::to_string(i);
    Where name_where{index_name, ""};
    TensorInfo t;
    t.name = std::string(c.read_string(name_where));
    if (t.name.size() > kMaxTensorNameBytes) {
      c.fail(index_name + " name", info_at,
             "tensor name of " + std::to_string(t.name.size()) + " bytes exceeds the " +
                 std::to_string(kMaxTensorNameBytes) + "-byte limit");
    }
    std::string field = "tensor '" + t.name + "'";
    const uint64_t dims_at = c.pos();
    uint32_t n_dims = c.read<uint32_t>(field.c_str());
    if (n_dims == 0 || n_dims > kMaxDims) {
      c.fail(field + " n_dims", dims_at,
             std::to_string(n_dims) + " dimensions; expected 1 to " + std::to_string(kMaxDims));
    }
    t.shape.resize(n_dims);
    uint64_t elements = 1;
    for (uint32_t d = 0; d < n_dims; ++d) {
      const uint64_t dim_at = c.pos();
      uint64_t dim = c.read<uint64_t>(field.c_str());
      const std::string dim_field = field + " shape[" + std::to_string(d) + "]";
      if (dim == 0) c.fail(dim_field, dim_at, "dimension is zero");
      // ggml stores dimensions as int64_t.
      if (dim > static_cast<uint64_t>(std::numeric_limits<int64_t>::max())) {
        c.fail(dim_field, dim_at, "dimension " + std::to_string(dim) + " exceeds int64 range");
      }
      if (__builtin_mul_overflow(elements, dim, &elements) ||
          elements > static_cast<uint64_t>(std::numeric_limits<int64_t>::max())) {
        c.fail(dim_field, dim_at, "element count overflows 64 bits");
      }
      t.shape[d] = dim;
    }
    const uint64_t type_at = c.pos();
    uint32_t raw_type = c.read<uint32_t>(field.c_str());
    auto tr = type_traits(raw_type);
    if (!tr) c.fail(field + " type", type_at, "unknown tensor type id " + std::to_string(raw_type));
    t.type = static_cast<TensorType>(raw_type);
    if (t.shape[0] % tr->block_elements != 0) {
      c.fail(field + " shape[0]", dims_at + 4,
             std::to_string(t.shape[0]) + " is not a multiple of " + std::string(tr->name) +
                 "'s block size " + std::to_string(tr->block_elements));
    }
    uint64_t bytes_per_row = 0;
    if (__builtin_mul_overflow(t.shape[0] / tr->block_elements, uint64_t{tr->block_bytes},
                               &bytes_per_row) ||
        __builtin_mul_overflow(bytes_per_row, elements / t.shape[0], &t.byte_size)) {
      c.fail(field, type_at, "byte size overflows 64 bits");
    }
    const uint64_t offset_at = c.pos();
    t.offset = c.read<uint64_t>(field.c_str());
    if (t.offset % alignment != 0) {
      c.fail(field + " offset", offset_at,
             "data offset " + std::to_string(t.offset) + " is not a multiple of the alignment " +
                 std::to_string(alignment));
    }
    tensors.push_back(std::move(t));
    auto [it, inserted] = tensor_index.try_emplace(tensors.back().name, tensors.size() - 1);
    if (!inserted) c.fail("tensor '" + tensors.back().name + "'", info_at, "duplicate tensor name");
  }
  // tensor_index holds string_views into tensors[i].name; reserve() above keeps them stable.
  validate_tensor_layout(c, info_offsets);
}

void GgufFile::Impl::validate_tensor_layout(const Cursor& c,
                                            const std::vector<uint64_t>& info_offsets) {
  const uint64_t infos_end = c.pos();
  const uint64_t misalign = infos_end % alignment;
  data_offset = infos_end;
  if (misalign != 0 && __builtin_add_overflow(infos_end, alignment - misalign, &data_offset)) {
    c.fail("data section", infos_end, "aligned start overflows 64 bits");
  }
  if (tensors.empty()) return;  // vocab-only files may end before the padding
  if (data_offset > file_size) {
    c.fail("data section", infos_end,
           "starts at " + std::to_string(data_offset) + ", past the end of the " +
               std::to_string(file_size) + "-byte file");
  }
  const uint64_t data_size = file_size - data_offset;
  for (size_t i = 0; i < tensors.size(); ++i) {
    const TensorInfo& t = tensors[i];
    if (t.offset > data_size || t.byte_size > data_size - t.offset) {
      c.fail("tensor '" + t.name + "' data", info_offsets[i],
             "bytes [" + std::to_string(t.offset) + ", " + std::to_string(t.offset) + "+" +
                 std::to_string(t.byte_size) + ") lie outside the " + std::to_string(data_size) +
                 "-byte data section starting at file offset " + std::to_string(data_offset));
    }
  }
  std::vector<size_t> order(tensors.size());
  std::iota(order.begin(), order.end(), size_t{0});
  std::sort(order.begin(), order.end(),
            [&](size_t a, size_t b) { return tensors[a].offset < tensors[b].offset; });
  for (size_t k = 1; k < order.size(); ++k) {
    const TensorInfo& prev = tensors[order[k - 1]];
    const TensorInfo& cur = tensors[order[k]];
    if (cur.offset < prev.offset + prev.byte_size) {
      c.fail("tensor '" + cur.name + "' data", info_offsets[order[k]],
             "bytes starting at data offset " + std::to_string(cur.offset) + " overlap tensor '" +
                 prev.name + "' (" + std::to_string(prev.offset) + "+" +
                 std::to_string(prev.byte_size) + ")");
    }
  }
}

GgufFile::GgufFile(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
GgufFile::GgufFile(GgufFile&&) noexcept = default;
GgufFile& GgufFile::operator=(GgufFile&&) noexcept = default;
GgufFile::~GgufFile() = default;

GgufFile GgufFile::open(const std::filesystem::path& path, ReadLayout layout) {
  auto impl = std::make_unique<Impl>();
  try {
    impl->mapping.emplace(path);
  } catch (const std::system_error& e) {
    throw GgufError(std::string("GGUF: ") + e.what());
  }
  impl->bytes = impl->mapping->bytes();
  impl->file_size = impl->bytes.size();
  try {
    impl->parse();
  } catch (const GgufError& e) {
    throw GgufError(path.string() + ": " + e.what());
  }
  GgufFile file(std::move(impl));
  if (layout == ReadLayout::Translated) translate_known_layouts(file);
  return file;
}

GgufFile GgufFile::parse(std::span<const uint8_t> bytes, ReadLayout layout) {
  auto impl = std::make_unique<Impl>();
  impl->bytes = bytes;
  impl->file_size = bytes.size();
  impl->parse();
  GgufFile file(std::move(impl));
  if (layout == ReadLayout::Translated) translate_known_layouts(file);
  return file;
}

GgufFile GgufFile::parse_header(std::span<const uint8_t> prefix, uint64_t file_size,
                                ReadLayout layout) {
  if (prefix.size() > file_size) throw GgufError("GGUF: header prefix longer than the file");
  auto impl = std::make_unique<Impl>();
  impl->owned.assign(prefix.begin(), prefix.end());
  impl->bytes = impl->owned;
  impl->file_size = file_size;
  impl->parse();
  // The tensor data lies beyond the copy: drop it so nothing can read past the header.
  const uint64_t keep = std::min<uint64_t>(impl->data_offset, impl->owned.size());
  impl->owned.resize(keep);
  impl->owned.shrink_to_fit();
  impl->bytes = impl->owned;
  GgufFile file(std::move(impl));
  if (layout == ReadLayout::Translated) translate_known_layouts(file);
  return file;
}

bool GgufFile::header_only() const {
  return impl_->bytes.size() < impl_->file_size;
}

uint32_t GgufFile::version() const {
  return impl_->version;
}
uint64_t GgufFile::alignment() const {
  return impl_->alignment;
}
uint64_t GgufFile::data_offset() const {
  return impl_->data_offset;
}

bool GgufFile::has(std::string_view key) const {
  return find(key) != nullptr;
}

const Value* GgufFile::find(std::string_view key) const {
  auto it = impl_->metadata.find(key);
  return it == impl_->metadata.end() ? nullptr : &it->second;
}

const std::map<std::string, Value, std::less<>>& GgufFile::metadata() const {
  return impl_->metadata;
}

std::vector<std::string_view> GgufFile::metadata_keys() const {
  std::vector<std::string_view> keys;
  keys.reserve(impl_->key_order.size());
  for (const std::string* k : impl_->key_order) keys.emplace_back(*k);
  return keys;
}

const std::vector<TensorInfo>& GgufFile::tensors() const {
  return impl_->tensors;
}

const TensorInfo* GgufFile::find_tensor(std::string_view name) const {
  auto it = impl_->tensor_index.find(name);
  return it == impl_->tensor_index.end() ? nullptr : &impl_->tensors[it->second];
}

std::span<const uint8_t> GgufFile::tensor_data(const TensorInfo& t) const {
  if (t.strided()) {
    throw GgufError("GGUF: tensor '" + t.name +
                    "' is a strided view of a stacked tensor (read it expert by expert)");
  }
  return tensor_extent(t);
}

std::span<const uint8_t> GgufFile::tensor_extent(const TensorInfo& t) const {
  // Spans were validated at parse time; this guards against TensorInfos from another file.
  const uint64_t size = impl_->bytes.size(), extent = t.extent();
  if (impl_->data_offset > size || t.offset > size - impl_->data_offset ||
      extent > size - impl_->data_offset - t.offset) {
    throw GgufError("GGUF: tensor '" + t.name + "' data lies outside this file");
  }
  return impl_->bytes.subspan(impl_->data_offset + t.offset, extent);
}

std::span<const uint8_t> GgufFile::bytes() const {
  return impl_->bytes;
}

bool GgufFile::file_mapped() const {
  return impl_->mapping.has_value();
}

}  // namespace vkllm::gguf
