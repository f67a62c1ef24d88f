// Random-weight encoders for `vkllm dev make-model --arch bert|nomic-bert|bert-rerank`, with the
// metadata and tensors convert_hf_to_gguf.py writes, which llama.cpp loads unchanged.
#pragma once

#include "engine/gguf/gguf_file.h"
#include "engine/gguf/gguf_writer.h"
#include "engine/model/model_maker.h"

namespace vkllm::model {

// Writes an encoder when o.arch names one and returns true; false (nothing written) otherwise.
// Throws std::invalid_argument for an inconsistent shape.
bool build_encoder_model(const MakeModelOptions& o, const gguf::GgufFile& vocab,
                         gguf::GgufWriter& w);

}  // namespace vkllm::model
