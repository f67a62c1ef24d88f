// The check every family's spec reader makes of a weight it needs: the file holds it with the
// shape (and, where asked, the F32 type) the graph will read it with, or the load fails naming
// the tensor and the shape it wanted.
#pragma once

#include <cstdint>
#include <string_view>
#include <vector>

#include "engine/gguf/gguf_file.h"
#include "engine/model/weight_names.h"

namespace vkllm::model {

// Throws std::runtime_error "<family> model has no [F32 ]tensor <name> of shape [a, b]".
void expect_weight(const gguf::GgufFile& f, std::string_view family, Weight w, uint32_t layer,
                   const std::vector<uint64_t>& shape, bool f32 = false);

}  // namespace vkllm::model
