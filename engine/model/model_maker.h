// Random-weight models with the real tensor names, shapes, metadata and quantization mix of a
// supported architecture: test and benchmark fixtures (`vkllm dev make-model`) that every GGUF
// reader, llama.cpp included, accepts as the real thing.
#pragma once

#include <cstdint>
#include <filesystem>
#include <string>
#include <string_view>
#include <vector>

#include "engine/gguf/gguf_file.h"
#include "engine/gguf/gguf_writer.h"
#include "engine/model/ollama_layout_maker.h"
#include "engine/model/quant_mix.h"

namespace vkllm::model {

struct ModelShape {
  uint32_t n_embd = 0;
  uint32_t n_layer = 0;
  uint32_t n_head = 0;
  uint32_t n_head_kv = 0;
  uint32_t head_dim = 0;
  uint32_t n_ff = 0;
  uint32_t n_ctx = 2048;
  bool tied_embeddings = false;     // architectures that always tie (gemma) override this
  float rope_freq_base = 0.0f;      // 0: the architecture's usual base
  float llama3_rope_factor = 0.0f;  // > 0: Llama 3.1-style rope_freqs factors (llama only)
  // Mixture-of-experts architectures (qwen3moe): experts, experts per token, expert FFN width;
  // 0: 8 experts, 2 per token, n_ff / 2 wide. Other architectures ignore them.
  uint32_t n_expert = 0;
  uint32_t n_expert_used = 0;
  uint32_t n_ff_exp = 0;
  uint32_t sliding_window = 0;  // 0: the architecture's usual window (where it has one)
  // Families with dense and MoE variants (gemma4): the MoE one, with the expert sizes above.
  bool moe_variant = false;
  // The shared expert's width (qwen2moe, qwen35moe, qwen3next, granitehybrid's MoE variant);
  // 0: the architecture's default.
  uint32_t n_ff_shexp = 0;
  // The Mamba-2 hybrids' mixer width (granitehybrid, nemotron_h*); 0: 2 x n_embd.
  uint32_t mamba_d_inner = 0;
  // nemotron_h_moe: the experts' latent width (moe_latent_size, Nemotron 3 Super's); 0: none.
  uint32_t moe_latent = 0;
};

// "tiny", "test" (tiny's attention with 8 experts of width 256, 2 per token, for MoE
// architectures; a window of 16 for those with one), "test-swa" (test with 7 layers: Gemma's
// local/global pattern), "llama3.2-1b", "llama3.1-8b", "qwen2.5-0.5b",
// "qwen3-30b-a3b", "gpt-oss-20b", "llama3.1-70b", "ministral3-3b", "ministral3-8b",
// "embeddinggemma-300m", "lfm2-1.2b", "test-deep" (test with 25 layers), "gemma3n-e2b",
// "gemma3n-e4b", "gemma4-e2b", "qwen3-vl-8b" (Qwen3-VL 8B's text model), "test-moe" (test-swa as
// gemma4's MoE variant), "test-moe-narrow" (test-moe 128 wide), "test-heads-256" (2 layers 512
// wide, heads of 256: gemma4's global ones 512 as in the published models), "gemma4-26b-a4b",
// "qwen35-4b", "qwen35-35b-a3b", "qwen3-next-80b-a3b", "granite-4.0-h-micro", "granite-4.0-h-tiny"
// (granitehybrid's MoE variant), "nemotron-h-8b", "nemotron-3-nano-30b-a3b" (nemotron_h_moe),
// "llama4-scout", or "test-latent" (test with nemotron_h_moe's experts in a latent width of 128),
// or "WxLxHxKV" (n_embd x n_layer x n_head x n_head_kv, head_dim = W / H, n_ff = 8/3 W rounded up
// to a multiple of 256). A named shape may end in ":LAYERS" to keep its widths with fewer (or more)
// layers: "qwen3-30b-a3b:4" makes a real-width MoE model that writes in seconds, for per-layer
// kernel profiles. Throws std::invalid_argument naming what is wrong.
ModelShape parse_model_shape(std::string_view text);

struct MakeModelOptions {
  // llama, qwen2, qwen2vl, qwen3vl (qwen3 with interleaved M-RoPE and deepstack inputs),
  // qwen2moe (experts and a gated shared expert), qwen3, qwen3moe, qwen3-embedding
  // (qwen3 with last-token pooling), gemma2, gemma3, gemma3n (gemma3n_maker.h), gemma4
  // (gemma4_maker.h), llama4 (Llama 4's text decoder: MoE with an ungated shared expert every 2nd
  // layer, every layer for llama4-scout; chunk size 8192, the one llama.cpp uses), phi3, mistral3
  // (Ministral 3: YaRN over n_ctx / 16 original tokens, attention temperature 0.1), gemma-embedding
  // (EmbeddingGemma: mean pooling, dense projections 4 x n_embd wide), lfm2 (LFM2: gated short
  // convolutions of length 3 between attention layers, tied), qwen35, qwen35moe and qwen3next
  // (qwen35_maker.h), granitehybrid, nemotron_h and nemotron_h_moe (mamba2_maker.h), and the
  // encoders bert, nomic-bert and bert-rerank (bert with a cross-encoder head, rank pooling).
  // Encoders use n_head K/V heads whatever the shape says. bert with an XLM-RoBERTa vocabulary
  // ("t5", e.g. tests/reference/unigram) is snowflake-arctic-embed2's kind: CLS pooling and the
  // vocabulary's token type count (1).
  std::string arch;
  ModelShape shape;
  FileType file_type = FileType::F16;
  uint64_t seed = 0;
  unsigned threads = 0;  // 0: one per hardware thread; never changes the output
  // Ollama: the file Ollama's converter writes for this model (ollama_layout_maker.h).
  FileLayout layout = FileLayout::LlamaCpp;
  // Every MoE layer's gate and up experts as one stacked tensor, blk.N.ffn_gate_up_exps.weight
  // (each expert's gate rows, then its up rows), as llama.cpp's converters write Gemma 4, Qwen3.5
  // MoE and Qwen3-Next (which llama.cpp reads stacked or split); the same weights as without.
  bool stacked_experts = false;
  // qwen35 / qwen35moe / qwen3next: this many multi-token-prediction (NextN) blocks after the
  // decoder's layers (block_count counts them, nextn_predict_layers says how many), as
  // llama.cpp's converter writes them by default; the decoder's weights are the same as without.
  uint32_t nextn_layers = 0;
  // The vision tower Ollama's gemma3 layout embeds (projector_maker.h's parse_projector_shape):
  // the same as `--projector` writes beside the llama.cpp-layout twin.
  std::string projector_shape = "test";
};

// Declares the model's metadata (tokenizer.* copied from `vocab`, whose token count sets
// n_vocab) and tensors in `writer`. Tensor data is generated and quantized only when the writer
// writes it, one tensor at a time, so memory stays bounded by the largest tensor. The same
// options and vocab always give the same bytes. Throws std::invalid_argument for an
// unsupported architecture or inconsistent shape.
void build_random_model(const MakeModelOptions& options, const gguf::GgufFile& vocab,
                        gguf::GgufWriter& writer);

// For the architecture makers beside build_random_model (gemma3n_maker.h): the vocab's token
// count, and one lazily generated tensor of random values (a matrix's N(0, 1/cols), a norm's
// 1 + N(0, 0.05), times `scale`) in the type the file type's quantization mix gives it.
uint64_t vocab_token_count(const gguf::GgufFile& vocab);
// A decoder's shape is usable: every size set, query heads a multiple of K/V heads, the head size
// a multiple of `head_dim_multiple`; else std::invalid_argument.
void check_decoder_shape(const ModelShape& s, uint32_t head_dim_multiple = 1);
// Qwen3-VL's deepstack inputs for a text model of n_layer layers (qwen3vl.n_deepstack_layers):
// the published models' 3, at most n_layer - 1; its projector (projector_maker.h) has as many.
inline uint32_t qwen3vl_deepstack_layers(uint32_t n_layer) {
  return n_layer > 3 ? 3 : (n_layer > 0 ? n_layer - 1 : 0);
}
void add_random_tensor(gguf::GgufWriter& w, const MakeModelOptions& o, std::string name,
                       std::vector<uint64_t> shape, bool norm, uint32_t layer, bool has_output,
                       float scale = 1.0f);

}  // namespace vkllm::model
