#include "engine/runtime/split_model.h"

#include <algorithm>
#include <numeric>
#include <stdexcept>
#include <string>

#include "engine/runtime/row_split.h"

namespace vkllm::runtime {

std::vector<uint32_t> split_layers(uint32_t n_layer, std::span<const uint64_t> free_bytes) {
  const size_t n = free_bytes.size();
  if (n == 0) throw std::invalid_argument("a layer split needs at least one device");
  if (n > n_layer) {
    throw std::invalid_argument(std::to_string(n) + " devices for a model of " +
                                std::to_string(n_layer) + " layers: each needs one at least");
  }
  long double total = 0;
  for (uint64_t b : free_bytes) total += static_cast<long double>(b);
  if (total <= 0) throw std::invalid_argument("no device has free memory for the layer split");
  // One layer each first, the rest by share of the free memory: whole parts, then the largest
  // remainders.
  const uint32_t rest = n_layer - static_cast<uint32_t>(n);
  std::vector<uint32_t> counts(n, 1);
  std::vector<long double> remainder(n);
  uint32_t given = 0;
  for (size_t i = 0; i < n; ++i) {
    const long double share = rest * (static_cast<long double>(free_bytes[i]) / total);
    const auto whole = static_cast<uint32_t>(share);
    counts[i] += whole;
    given += whole;
    remainder[i] = share - whole;
  }
  std::vector<size_t> order(n);
  std::iota(order.begin(), order.end(), size_t{0});
  std::stable_sort(order.begin(), order.end(),
                   [&](size_t a, size_t b) { return remainder[a] > remainder[b]; });
  for (size_t k = 0; given < rest; ++k, ++given) ++counts[order[k % n]];
  return counts;
}

SplitModel::SplitModel(std::span<vk::Context* const> contexts, const gguf::GgufFile& file,
                       const SourceFactory& source, std::span<const uint32_t> layer_counts,
                       const ModelOptions& options) {
  if (contexts.empty() || contexts.size() != layer_counts.size()) {
    throw std::invalid_argument("a split model needs one layer count per device (" +
                                std::to_string(contexts.size()) + " devices, " +
                                std::to_string(layer_counts.size()) + " counts)");
  }
  const model::ModelSpec spec = model::ModelSpec::from_gguf(file);
  // Stages hand each other the residual stream only: Gemma 3n's AltUp streams and per-layer
  // inputs would have to travel too.
  if (spec.is_gemma3n())
    throw std::runtime_error("a gemma3n model cannot be split across devices yet");
  if (spec.is_gemma4() && spec.has_per_layer_inputs())  // Gemma 4's per-layer inputs likewise
    throw std::runtime_error(
        "a gemma4 model with per-layer inputs cannot be split across "
        "devices yet");
  const uint32_t n_layer = spec.n_layer;
  const uint32_t sum = std::accumulate(layer_counts.begin(), layer_counts.end(), 0u);
  if (sum != n_layer || std::count(layer_counts.begin(), layer_counts.end(), 0u) > 0) {
    throw std::invalid_argument("the layer split must give each device one layer at least and " +
                                std::to_string(n_layer) + " in all (it gives " +
                                std::to_string(sum) + ")");
  }
  uint32_t first = 0;
  for (size_t i = 0; i < contexts.size(); ++i) {
    ModelOptions stage = options;
    stage.layers = {first, first + layer_counts[i]};
    first += layer_counts[i];
    const std::unique_ptr<TensorDataSource> src = source(i);
    stages_.push_back(std::make_unique<Model>(*contexts[i], file, *src, stage));
  }
}

SplitModel::SplitModel(std::span<vk::Context* const> contexts, const gguf::GgufFile& file,
                       std::span<const uint32_t> layer_counts, const ModelOptions& options)
    : SplitModel(
          contexts, file,
          [&file](size_t) -> std::unique_ptr<TensorDataSource> {
            return std::make_unique<GgufFileSource>(file);
          },
          layer_counts, options) {}

SplitModel::SplitModel(std::span<vk::Context* const> contexts, const gguf::GgufFile& file,
                       const SourceFactory& source, ByRows, const ModelOptions& options)
    : mode_(SplitMode::Row) {
  const auto n = static_cast<uint32_t>(contexts.size());
  check_row_split(model::ModelSpec::from_gguf(file), file, n);
  for (uint32_t i = 0; i < n; ++i) {
    ModelOptions shard = options;
    shard.shard = {i, n};
    const std::unique_ptr<TensorDataSource> src = source(i);
    stages_.push_back(std::make_unique<Model>(*contexts[i], file, *src, shard));
  }
}

SplitModel::SplitModel(std::span<vk::Context* const> contexts, const gguf::GgufFile& file, ByRows,
                       const ModelOptions& options)
    : SplitModel(
          contexts, file,
          [&file](size_t) -> std::unique_ptr<TensorDataSource> {
            return std::make_unique<GgufFileSource>(file);
          },
          by_rows, options) {}

std::unique_ptr<SplitModel> load_split_model(std::span<vk::Context* const> contexts,
                                             const gguf::GgufFile& file,
                                             const SplitModel::SourceFactory& source,
                                             SplitMode mode, std::span<const uint64_t> free_bytes,
                                             const ModelOptions& options) {
  if (mode == SplitMode::Row)
    return std::make_unique<SplitModel>(contexts, file, source, SplitModel::by_rows, options);
  const auto counts = split_layers(model::ModelSpec::from_gguf(file).n_layer, free_bytes);
  return std::make_unique<SplitModel>(contexts, file, source, counts, options);
}

std::optional<SplitMode> parse_split_mode(std::string_view text) {
  if (text == "layer") return SplitMode::Layer;
  if (text == "row") return SplitMode::Row;
  return std::nullopt;
}

uint64_t SplitModel::weight_bytes() const {
  uint64_t sum = 0;
  for (const auto& s : stages_) sum += s->weight_bytes();
  return sum;
}

}  // namespace vkllm::runtime
