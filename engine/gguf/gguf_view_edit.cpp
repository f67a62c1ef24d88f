// GgufFile's in-memory view edits, used by load-time layout translations (ollama_layout.h): the
// metadata map and tensor table change, the file's bytes never do.
#include <algorithm>
#include <string>
#include <utility>

#include "engine/gguf/gguf_file.h"
#include "engine/gguf/gguf_file_impl.h"

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

}  // namespace vkllm::gguf
