// Random-weight Gemma 3n text models (`vkllm dev make-model --arch gemma3n`), with the metadata
// and tensors the published GGUFs have (convert_hf_to_gguf.py's Gemma3nForConditionalGeneration
// text part), which llama.cpp loads unchanged.
#pragma once

#include "engine/gguf/gguf_file.h"
#include "engine/gguf/gguf_writer.h"
#include "engine/model/model_maker.h"

namespace vkllm::model {

// Gemma 3's layers plus AltUp (4 streams), LAuReL (rank 64), per-layer inputs (256 wide) and
// their projections; always tied embeddings; local layers by a per-layer pattern of four local
// to one global, the shape's window (512 unless set) with RoPE base 10000 locally; per-layer
// FFN widths and sparsity scales (the first 10 layers sparse); the last n_layer - 20 layers
// sharing KV. Throws std::invalid_argument for an inconsistent shape.
void build_gemma3n_model(const MakeModelOptions& o, const gguf::GgufFile& vocab,
                         gguf::GgufWriter& w);

}  // namespace vkllm::model
