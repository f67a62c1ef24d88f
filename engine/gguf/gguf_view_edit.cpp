// GgufFile's in-memory view edits, used by load-time layout translations (ollama_layout.h): the
// metadata map and tensor table change, the file's bytes never do.
#include <algorithm>
#include <iterator>
#include <string>
#include <utility>
#include <vector>

#include "engine/gguf/gguf_file.h"
#include "engine/gguf/gguf_file_impl.h"
#include "engine/gguf/ollama_layout.h"
#include "engine/gguf/tensor_type.h"

namespace vkllm::gguf {

void GgufFile::Impl::reindex_tensors() {
  // The index holds views into the names, which moving or renaming tensors invalidates.
  tensor_index.clear();
  for (size_t i = 0; i < tensors.size(); ++i) tensor_index.emplace(tensors[i].name, i);
}

const LayoutTranslation& GgufFile::translation() const {
  return impl_->translation;
}

LayoutTranslation& GgufFile::mutable_translation() {
  return impl_->translation;
}

void GgufFile::set_value(std::string key, Value value) {
  auto it = impl_->metadata.find(key);
  if (it != impl_->metadata.end()) {
    it->second = std::move(value);
    return;
  }
  it = impl_->metadata.emplace(std::move(key), std::move(value)).first;
  impl_->key_order.push_back(&it->first);
}

void GgufFile::erase_key(std::string_view key) {
  const auto it = impl_->metadata.find(key);
  if (it == impl_->metadata.end()) return;
  std::erase(impl_->key_order, &it->first);
  impl_->metadata.erase(it);
}

void GgufFile::rename_tensor(std::string_view from, std::string to) {
  if (from == to) return;
  const auto it = impl_->tensor_index.find(from);
  if (it == impl_->tensor_index.end()) return;
  if (impl_->tensor_index.contains(to)) {
    throw GgufError("GGUF: cannot rename tensor '" + std::string(from) + "' to '" + to +
                    "': the file already has one of that name");
  }
  impl_->tensors[it->second].name = std::move(to);
  impl_->reindex_tensors();
}

void GgufFile::hide_tensor(std::string_view name) {
  const auto it = impl_->tensor_index.find(name);
  if (it == impl_->tensor_index.end()) return;
  impl_->tensors.erase(impl_->tensors.begin() + static_cast<std::ptrdiff_t>(it->second));
  impl_->reindex_tensors();
}

void GgufFile::replace_tensor(std::string_view name, std::vector<TensorInfo> views) {
  const auto it = impl_->tensor_index.find(name);
  if (it == impl_->tensor_index.end()) return;
  for (const TensorInfo& v : views) {
    if (v.name != name && impl_->tensor_index.contains(v.name)) {
      throw GgufError("GGUF: cannot split tensor '" + std::string(name) + "' into '" + v.name +
                      "': the file already has one of that name");
    }
  }
  const auto at = impl_->tensors.begin() + static_cast<std::ptrdiff_t>(it->second);
  impl_->tensors.insert(impl_->tensors.erase(at), std::make_move_iterator(views.begin()),
                        std::make_move_iterator(views.end()));
  impl_->reindex_tensors();
}

void split_stacked_experts(GgufFile& file) {
  constexpr std::string_view kStacked = ".ffn_gate_up_exps.weight";
  std::vector<std::string> names;
  for (const TensorInfo& t : file.tensors())
    if (t.name.starts_with("blk.") && t.name.ends_with(kStacked)) names.push_back(t.name);
  for (const std::string& name : names) {
    const TensorInfo t = *file.find_tensor(name);
    if (t.shape.size() != 3 || t.shape[1] % 2 != 0 || t.shape[2] == 0 || t.strided()) {
      throw GgufError("GGUF: stacked expert tensor '" + name +
                      "' is not [n_embd, 2 x n_ff_exp, n_expert]");
    }
    // Rows are whole blocks of every type, so each expert's gate rows, then its up rows, are
    // byte ranges of the expert's 2 x n_ff_exp rows.
    const uint64_t rows = t.shape[1] / 2, half = row_bytes(t.type, t.shape[0]) * rows;
    const std::string prefix = name.substr(0, name.size() - kStacked.size());
    std::vector<TensorInfo> views;
    for (const auto& [part, skip] : {std::pair{".ffn_gate_exps.weight", uint64_t{0}},
                                     std::pair{".ffn_up_exps.weight", half}}) {
      TensorInfo v = t;
      v.name = prefix + part;
      v.shape[1] = rows;
      v.byte_size = half * t.shape[2];
      v.expert_stride = 2 * half;
      v.expert_skip = skip;
      views.push_back(std::move(v));
    }
    file.replace_tensor(name, std::move(views));
  }
}

}  // namespace vkllm::gguf
