#include "engine/runtime/lora_merge.h"

#include <algorithm>
#include <atomic>
#include <cstring>
#include <exception>
#include <mutex>
#include <stdexcept>
#include <thread>

#include "engine/gguf/gguf_writer.h"
#include "engine/gguf/quants.h"

namespace vkllm::runtime {

namespace {

bool is_float_type(gguf::TensorType t) {
  return t == gguf::TensorType::F32 || t == gguf::TensorType::F16 || t == gguf::TensorType::BF16;
}

}  // namespace

struct LoraMergedSource::Extent {
  const gguf::TensorInfo* base = nullptr;  // in the base header
  gguf::TensorType type{};                 // in the merged model
  uint64_t offset = 0, size = 0;           // in the merged model's data section
  bool adapted = false;
};

// The base's metadata and tensors in data order, laid out by the GGUF writer as a file of that
// content would be.
gguf::GgufFile lora_merged_header(const gguf::GgufFile& base, const model::LoraAdapter& adapter,
                                  const LoraMergeOptions& options) {
  adapter.check_base(base);
  std::vector<const gguf::TensorInfo*> order;
  for (const gguf::TensorInfo& t : base.tensors()) order.push_back(&t);
  std::stable_sort(order.begin(), order.end(),
                   [](const auto* a, const auto* b) { return a->offset < b->offset; });
  gguf::GgufWriter w;
  w.copy_metadata(base, "");
  for (const gguf::TensorInfo* t : order) {
    const bool widen = adapter.adapts(t->name) && !is_float_type(t->type) && !options.requantize;
    w.add_lazy_tensor(t->name, widen ? gguf::TensorType::F16 : t->type, t->shape,
                      [](std::span<uint8_t>) {
                        throw std::logic_error("a merged model's header has no tensor data");
                      });
  }
  const std::vector<uint8_t> head = w.serialize_header();
  return gguf::GgufFile::parse_header(head, w.file_size());
}

LoraMergedSource::LoraMergedSource(const gguf::GgufFile& base_header,
                                   const gguf::GgufFile& merged_header, TensorDataSource& base,
                                   const model::LoraAdapter& adapter,
                                   const LoraMergeOptions& options)
    : base_(base), adapter_(adapter), options_(options) {
  for (const gguf::TensorInfo& t : merged_header.tensors()) {
    const gguf::TensorInfo* b = base_header.find_tensor(t.name);
    if (!b || b->shape != t.shape || (!adapter.adapts(t.name) && b->type != t.type)) {
      throw std::invalid_argument("merged header does not match the base model at '" + t.name +
                                  "'");
    }
    // Extents are read as contiguous base bytes; a stacked tensor's halves are not.
    if (b->strided()) {
      throw std::invalid_argument("a LoRA adapter cannot be merged into a model with stacked " +
                                  std::string("experts (") + t.name + ")");
    }
    extents_.push_back({b, t.type, t.offset, t.byte_size, adapter.adapts(t.name)});
  }
  std::sort(extents_.begin(), extents_.end(),
            [](const Extent& a, const Extent& b) { return a.offset < b.offset; });
  for (size_t i = 1; i < extents_.size(); ++i) {
    if (extents_[i].base->offset < extents_[i - 1].base->offset) {
      throw std::invalid_argument("merged header orders tensors unlike the base model");
    }
  }
}

LoraMergedSource::~LoraMergedSource() = default;

// Reads the base tensor whole, and writes W + scale * B A in the merged type into cache_, rows
// in chunks over several threads.
void LoraMergedSource::merge(const Extent& e) {
  const gguf::TensorInfo& t = *e.base;
  std::vector<std::byte> raw(t.byte_size);
  base_.read(t.offset, raw);
  cache_.assign(e.size, std::byte{0});

  const uint64_t n = t.shape[0], rows = t.element_count() / n;
  const size_t in_row = gguf::row_bytes(t.type, n), out_row = gguf::row_bytes(e.type, n);
  const uint64_t rows_per_chunk = std::max<uint64_t>(1, 65536 / n);
  const uint64_t chunks = (rows + rows_per_chunk - 1) / rows_per_chunk;
  std::atomic<uint64_t> next{0};
  std::exception_ptr failure;
  std::mutex failure_mutex;
  auto worker = [&] {
    std::vector<float> buf;
    try {
      for (uint64_t c = next++; c < chunks; c = next++) {
        const uint64_t first = c * rows_per_chunk, count = std::min(rows_per_chunk, rows - first);
        buf.resize(count * n);
        gguf::dequantize(t.type, raw.data() + first * in_row, buf.data(), buf.size(), 1);
        adapter_.add_delta(t.name, first, buf);
        gguf::quantize(e.type, buf.data(), cache_.data() + first * out_row, buf.size(), 1);
      }
    } catch (...) {
      const std::lock_guard lock(failure_mutex);
      if (!failure) failure = std::current_exception();
    }
  };
  const unsigned hw =
      options_.threads ? options_.threads : std::max(1u, std::thread::hardware_concurrency());
  const auto n_threads = static_cast<unsigned>(std::min<uint64_t>(hw, chunks));
  {
    std::vector<std::jthread> pool;
    for (unsigned i = 1; i < n_threads; ++i) pool.emplace_back(worker);
    worker();
  }
  if (failure) std::rethrow_exception(failure);
}

void LoraMergedSource::read(uint64_t offset, std::span<std::byte> out) {
  size_t done = 0;
  while (done < out.size()) {
    const uint64_t pos = offset + done;
    // The first extent that ends after pos.
    const auto it =
        std::upper_bound(extents_.begin(), extents_.end(), pos,
                         [](uint64_t p, const Extent& e) { return p < e.offset + e.size; });
    if (it == extents_.end() || pos < it->offset) {
      // Alignment padding between tensors (or past the last one): zeros, as in a file.
      const uint64_t stop = it == extents_.end() ? offset + out.size() : it->offset;
      const size_t n = static_cast<size_t>(std::min<uint64_t>(stop - pos, out.size() - done));
      std::memset(out.data() + done, 0, n);
      done += n;
      continue;
    }
    const Extent& e = *it;
    const size_t n =
        static_cast<size_t>(std::min<uint64_t>(e.offset + e.size - pos, out.size() - done));
    if (!e.adapted) {
      base_.read(e.base->offset + (pos - e.offset), out.subspan(done, n));
    } else {
      const auto index = static_cast<size_t>(it - extents_.begin());
      if (cached_ != index) {
        cached_ = SIZE_MAX;
        merge(e);
        cached_ = index;
      }
      std::memcpy(out.data() + done, cache_.data() + (pos - e.offset), n);
    }
    done += n;
  }
}

}  // namespace vkllm::runtime
