// `vkllm dev ...`: developer tools. `dev make-model` writes random-weight models with real
// architecture layouts for tests and benchmarks, `dev make-lora` a random LoRA adapter for one of
// them (llama.cpp's adapter format); `dev make-vocab` writes the Llama 3 tokenizer (or a small
// Gemma 4-style one) as a vocab-only GGUF for them; `dev encode-image` runs a vision projector's
// encoder on one image.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <optional>
#include <span>
#include <stdexcept>
#include <string>
#include <vector>

#include "engine/gguf/gguf_file.h"
#include "engine/gguf/gguf_writer.h"
#include "engine/gguf/inline_projector.h"
#include "engine/image/image.h"
#include "engine/model/lora_maker.h"
#include "engine/model/model_maker.h"
#include "engine/model/projector_maker.h"
#include "engine/tokenizer/gemma4_vocab.h"
#include "engine/tokenizer/llama3_vocab.h"
#include "engine/vision/image_encoder.h"
#include "engine/vision/image_preprocess.h"
#include "engine/vision/vulkan_image_encoder.h"
#include "engine/vulkan/context.h"
#include "server/cli/commands.h"

namespace vkllm::cli {

namespace {

struct MakeModelArgs {
  std::string arch = "llama";
  std::string shape = "tiny";
  std::string type = "F16";
  std::string vocab;
  std::string layout = "llama.cpp";
  uint64_t seed = 0;
  unsigned threads = 0;
  std::string output;
  std::string projector;  // also write a random vision projector (mmproj) here
  std::string projector_shape = "test";
  bool stacked_experts = false;
  bool mtp = false;
};

// The text model's vision projector in llama.cpp's mmproj layout, as wide as its output: declared
// before the text model is written, so a bad projector option leaves no file behind. Pixtral's
// takes the [IMG_BREAK] embedding from the text model, as llama.cpp's converter does.
gguf::GgufWriter plan_projector(const MakeModelArgs& args, const model::MakeModelOptions& text,
                                const gguf::GgufWriter& text_writer) {
  model::MakeProjectorOptions options;
  options.arch = args.arch;
  options.shape = model::parse_projector_shape(args.projector_shape, args.arch);
  options.text_embd = text.shape.n_embd;
  options.f32 = text.file_type == model::FileType::F32;
  options.seed = args.seed;
  if (args.arch == "mistral3") options.img_break = model::img_break_embedding(text_writer);
  if (args.arch == "qwen3vl")
    options.n_deepstack = model::qwen3vl_deepstack_layers(text.shape.n_layer);
  gguf::GgufWriter writer;
  model::build_random_projector(options, writer);
  return writer;
}

int make_model(const MakeModelArgs& args) {
  model::MakeModelOptions options;
  options.arch = args.arch;
  options.shape = model::parse_model_shape(args.shape);
  const auto file_type = model::file_type_from_name(args.type);
  if (!file_type) {
    throw std::invalid_argument("unknown --type '" + args.type +
                                "' (F32, F16, BF16, Q8_0, Q4_0, Q4_K_M, Q5_K_M, Q6_K, MXFP4_MOE)");
  }
  options.file_type = *file_type;
  const auto layout = model::file_layout_from_name(args.layout);
  if (!layout)
    throw std::invalid_argument("unknown --layout '" + args.layout + "' (llama.cpp, ollama)");
  options.layout = *layout;
  options.projector_shape = args.projector_shape;
  options.seed = args.seed;
  options.threads = args.threads;
  options.stacked_experts = args.stacked_experts;
  options.nextn_layers = args.mtp ? 1 : 0;

  const auto start = std::chrono::steady_clock::now();
  // Gemma 4 fixtures default to the built-in Gemma 4-style vocabulary (the real tokenizer's kind).
  std::vector<uint8_t> builtin_vocab;
  if (args.vocab.empty()) {
    if (args.arch != "gemma4") {
      throw std::invalid_argument("--vocab is required for --arch " + args.arch +
                                  " (only gemma4 has a built-in vocabulary)");
    }
    builtin_vocab = tokenizer::build_gemma4_test_vocab_gguf();
  }
  const gguf::GgufFile vocab =
      args.vocab.empty() ? gguf::GgufFile::parse(builtin_vocab) : gguf::GgufFile::open(args.vocab);
  gguf::GgufWriter writer;
  model::build_random_model(options, vocab, writer);
  std::optional<gguf::GgufWriter> projector;
  if (!args.projector.empty()) projector = plan_projector(args, options, writer);
  writer.write(args.output);
  if (projector) projector->write(args.projector);
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  std::printf("wrote %s: %s %s %s (%s layout), %.1f MiB in %.1f s\n", args.output.c_str(),
              args.arch.c_str(), args.shape.c_str(), args.type.c_str(), args.layout.c_str(),
              static_cast<double>(std::filesystem::file_size(args.output)) / (1 << 20), seconds);
  if (projector) {
    std::printf("wrote %s: %s projector %s, %.1f MiB\n", args.projector.c_str(), args.arch.c_str(),
                args.projector_shape.c_str(),
                static_cast<double>(std::filesystem::file_size(args.projector)) / (1 << 20));
  }
  return 0;
}

struct MakeLoraArgs {
  std::string base;
  uint32_t rank = 8;
  float alpha = 16.0f;
  std::string targets = "attn_q,attn_k,attn_v,attn_output,ffn_gate,ffn_up,ffn_down";
  std::string type = "F16";
  uint64_t seed = 0;
  std::string output;
};

int make_lora(const MakeLoraArgs& args) {
  model::MakeLoraOptions options;
  options.rank = args.rank;
  options.alpha = args.alpha;
  options.seed = args.seed;
  options.targets.clear();
  for (size_t start = 0; start <= args.targets.size();) {
    const size_t comma = std::min(args.targets.find(',', start), args.targets.size());
    if (comma > start) options.targets.push_back(args.targets.substr(start, comma - start));
    start = comma + 1;
  }
  const auto type = gguf::type_from_name(args.type);
  if (!type) throw std::invalid_argument("unknown --type '" + args.type + "' (F32, F16, BF16)");
  options.type = *type;
  const gguf::GgufFile base = gguf::GgufFile::open(args.base);
  gguf::GgufWriter writer;
  model::build_random_lora(options, base, writer);
  writer.write(args.output);
  std::printf("wrote %s: LoRA rank %u alpha %g over %zu weights of %s\n", args.output.c_str(),
              args.rank, static_cast<double>(args.alpha), options.targets.size(),
              args.base.c_str());
  return 0;
}

struct MakeVocabArgs {
  std::string kind = "llama3";
  std::string encoder;
  std::string merges;
  std::string output;
};

int make_vocab(const MakeVocabArgs& args) {
  gguf::GgufWriter writer;
  if (args.kind == "gemma4") {
    tokenizer::add_gemma4_test_vocab(writer);
    writer.write(args.output);
    const auto file = gguf::GgufFile::open(args.output);
    std::printf("wrote %s: Gemma 4-style BPE test vocabulary, %zu tokens, %zu merges\n",
                args.output.c_str(), file.get_array<std::string>("tokenizer.ggml.tokens").size(),
                file.get_array<std::string>("tokenizer.ggml.merges").size());
    return 0;
  }
  if (args.kind != "llama3" && args.kind != "harmony") {
    throw std::invalid_argument("unknown --kind '" + args.kind + "' (llama3, harmony, gemma4)");
  }
  if (args.encoder.empty() || args.merges.empty()) {
    throw std::invalid_argument("--kind " + args.kind + " needs --encoder and --merges");
  }
  const bool harmony = args.kind == "harmony";
  tokenizer::add_llama3_vocab(
      args.encoder, args.merges, writer,
      harmony ? tokenizer::Llama3Specials::kHarmony : tokenizer::Llama3Specials::kLlama3);
  writer.write(args.output);
  std::printf("wrote %s: Llama 3 BPE vocabulary%s, %d tokens\n", args.output.c_str(),
              harmony ? " with Harmony's special tokens" : "", tokenizer::kLlama3VocabSize);
  return 0;
}

struct EncodeImageArgs {
  std::string projector;
  std::string image;
  unsigned threads = 0;
  unsigned repeat = 1;
  bool json = false;
  std::string backend = "cpu";
};

// Encodes one image with a projector's vision tower on the CPU or the Vulkan device: the image
// tokens' count and width, the preprocessing and encode times (best of --repeat; Vulkan: the
// patch upload, one submission and the download), and with --json the embeddings.
int encode_image(const EncodeImageArgs& args) {
  if (args.backend != "cpu" && args.backend != "vulkan")
    throw std::invalid_argument("unknown --backend '" + args.backend + "' (cpu, vulkan)");
  const bool on_vulkan = args.backend == "vulkan";
  // A model GGUF with its tower inside (Ollama's single-file gemma3 / gemma4 / mistral3 / qwen25vl
  // / qwen3vl) is read as the mmproj the server makes of it (engine/gguf/inline_projector.h).
  gguf::GgufFile projector = gguf::GgufFile::open(args.projector, gguf::ReadLayout::Raw);
  std::vector<uint8_t> extracted;
  if (!gguf::inline_projector_arch(projector).empty()) {
    const std::span<const uint8_t> data = projector.bytes().subspan(projector.data_offset());
    extracted =
        gguf::extract_inline_projector(projector, [&data](uint64_t offset, std::span<uint8_t> out) {
          const auto from = data.subspan(offset, out.size());
          std::copy(from.begin(), from.end(), out.begin());
        });
    projector = gguf::GgufFile::parse(extracted, gguf::ReadLayout::Raw);
  }
  std::optional<vision::ImageEncoder> cpu_encoder;
  std::optional<vk::Context> context;
  std::optional<vision::VulkanImageEncoder> vk_encoder;
  if (on_vulkan) {
    context.emplace();
    vk_encoder.emplace(*context, std::move(projector));
  } else {
    cpu_encoder.emplace(std::move(projector), args.threads);
  }
  const vision::VisionSpec& s = on_vulkan ? vk_encoder->spec() : cpu_encoder->spec();
  std::ifstream in(args.image, std::ios::binary);
  if (!in) throw std::runtime_error("cannot read " + args.image);
  const std::vector<uint8_t> bytes{std::istreambuf_iterator<char>(in), {}};
  const image::Image img = image::decode(bytes);
  double best_pre = 1e30, best_encode = 1e30;
  vision::ImageEmbeddings out;
  vision::TowerPixels pixels;
  for (unsigned i = 0; i < std::max(1u, args.repeat); ++i) {
    const auto t0 = std::chrono::steady_clock::now();
    pixels = vision::tower_input(s, img);
    const auto t1 = std::chrono::steady_clock::now();
    out = on_vulkan ? vk_encoder->encode_pixels(pixels) : cpu_encoder->encode_pixels(pixels);
    const auto t2 = std::chrono::steady_clock::now();
    best_pre = std::min(best_pre, std::chrono::duration<double, std::milli>(t1 - t0).count());
    best_encode = std::min(best_encode, std::chrono::duration<double, std::milli>(t2 - t1).count());
  }
  if (args.json) {
    std::printf("{\"n_tokens\": %u, \"n_embd\": %u, \"embeddings\": [", out.n_tokens, out.n_embd);
    for (uint32_t t = 0; t < out.n_tokens; ++t) {
      std::printf(t ? ",\n [" : "\n [");
      for (uint32_t i = 0; i < out.n_embd; ++i)
        std::printf(i ? ",%.9g" : "%.9g", static_cast<double>(out.row(t)[i]));
      std::printf("]");
    }
    std::printf("]}\n");
    return 0;
  }
  std::printf(
      "%s (%ux%u) -> %u image tokens x %u: preprocess %.1f ms, encode %.1f ms (%ux%u px, "
      "%u patches, %u layers %u wide, %s)\n",
      args.image.c_str(), img.width, img.height, out.n_tokens, out.n_embd, best_pre, best_encode,
      pixels.width, pixels.height, (pixels.width / s.patch_size) * (pixels.height / s.patch_size),
      s.n_layer, s.n_embd, on_vulkan ? context->device().caps().name.c_str() : "CPU");
  return 0;
}

}  // namespace

void add_dev_commands(CLI::App& app) {
  CLI::App* dev = app.add_subcommand("dev", "Developer tools");
  dev->require_subcommand(1);

  auto args = std::make_shared<MakeModelArgs>();
  CLI::App* make = dev->add_subcommand(
      "make-model", "Write a random-weight GGUF model with a real architecture's layout");
  make->add_option("--arch", args->arch,
                   "llama, qwen2, qwen2vl, qwen2moe, qwen3, qwen3moe, gpt-oss, qwen3-embedding, "
                   "gemma2, gemma3, gemma3n, gemma4, phi3, mistral3, gemma-embedding, lfm2, "
                   "qwen35, qwen35moe, qwen3next, granitehybrid, nemotron_h, nemotron_h_moe, "
                   "bert, nomic-bert or bert-rerank (encoders want a WordPiece vocab, e.g. "
                   "ggml-vocab-bert-bge.gguf)")
      ->capture_default_str();
  make->add_option(
          "--shape", args->shape,
          "tiny, test (tiny with 8 experts, 2 per token, for qwen3moe, qwen2moe and gpt-oss; "
          "window "
          "16), "
          "test-swa (7 layers), test-deep (25 layers: gemma3n's shared KV), test-deep-narrow and "
          "test-swa-narrow (128 wide), gemma3n-e2b, "
          "gemma3n-e4b, gemma4-e2b, test-moe (gemma4's MoE variant) and test-moe-narrow, "
          "test-heads-256 (gemma4's global heads of 512), "
          "gemma4-26b-a4b, "
          "llama3.2-1b, llama3.1-8b, llama3.1-70b, qwen2.5-0.5b, qwen3-30b-a3b, gpt-oss-20b, "
          "ministral3-3b, "
          "ministral3-8b, gemma3-4b, qwen2.5-vl-7b, qwen3-vl-8b, embeddinggemma-300m, lfm2-1.2b, "
          "qwen35-4b, "
          "qwen35-35b-a3b, "
          "qwen3-next-80b-a3b, granite-4.0-h-micro, granite-4.0-h-tiny (and test-moe: "
          "granitehybrid's "
          "MoE variant), "
          "nemotron-h-8b, nemotron-3-nano-30b-a3b (nemotron_h_moe) or WxLxHxKV (n_embd x n_layer "
          "x "
          "n_head "
          "x n_head_kv)")
      ->capture_default_str();
  make->add_option("--type", args->type,
                   "F32, F16, BF16, Q8_0, Q4_0, Q4_K_M, Q5_K_M, Q6_K or MXFP4_MOE (MoE "
                   "architectures: MXFP4 experts, Q8_0 elsewhere, as llama-quantize writes it)")
      ->capture_default_str();
  make->add_option("--vocab", args->vocab,
                   "GGUF whose tokenizer (and vocabulary size) to use; gemma4 without it: the "
                   "built-in Gemma 4-style vocabulary (make-vocab --kind gemma4)")
      ->check(CLI::ExistingFile);
  make->add_option(
          "--layout", args->layout,
          "llama.cpp, or ollama: the file Ollama's converter writes for the same "
          "weights (llama with the Llama 3 vocab, gemma3, gemma-embedding, mistral3, qwen3moe)")
      ->capture_default_str();
  make->add_flag("--stacked-experts", args->stacked_experts,
                 "MoE architectures: each layer's gate and up experts as one stacked "
                 "ffn_gate_up_exps (llama.cpp reads it for gemma4, qwen35moe, qwen3next), the "
                 "same weights as the split file");
  make->add_flag("--mtp", args->mtp,
                 "qwen35, qwen35moe, qwen3next: a multi-token-prediction (NextN) block after "
                 "the decoder's layers, as llama.cpp's converter writes them (the decoder's "
                 "weights are the same as without)");
  make->add_option("--seed", args->seed, "Random seed; the same seed gives identical files")
      ->capture_default_str();
  make->add_option("--threads", args->threads, "Worker threads (0: all cores)")
      ->capture_default_str();
  make->add_option("-o,--output", args->output, "Output GGUF path")->required();
  make->add_option("--projector", args->projector,
                   "Also write a random vision projector for the model here (llama.cpp's mmproj "
                   "layout; gemma3, gemma4, mistral3, qwen2vl, qwen3vl)");
  make->add_option("--projector-shape", args->projector_shape,
                   "test (224 px, patch 14, 2 layers 128 wide: 16 image tokens), test-wide "
                   "(test with the real widths) or gemma3-4b (896 px, 27 layers 1152 wide: 256 "
                   "image tokens); for mistral3 test (patch 14, 2 layers 128 wide, 2x2 merger) "
                   "or pixtral-24b (Mistral Small 3.1's tower); for qwen2vl test (Qwen2.5-VL: 2 "
                   "layers 128 wide, one windowed) or qwen25vl-7b; for gemma4 test (gemma4v: patch "
                   "16, 2 layers 128 wide, 3x3 pooling) or gemma4-e2b (E2B's tower, 16 layers "
                   "768 wide); for qwen3vl test (Qwen3-VL: patch 16, 2 layers 128 wide) or "
                   "qwen3vl-8b; :N sets the layer count. With "
                   "--layout ollama, the tower the single file embeds")
      ->capture_default_str();
  make->callback([args] { run_command([args] { return make_model(*args); }); });

  auto lora_args = std::make_shared<MakeLoraArgs>();
  CLI::App* lora = dev->add_subcommand(
      "make-lora", "Write a random LoRA adapter GGUF (llama.cpp's format) for a base model");
  lora->add_option("--base", lora_args->base, "The base model GGUF the adapter is for")
      ->required()
      ->check(CLI::ExistingFile);
  lora->add_option("--rank", lora_args->rank, "Rank r of the update")->capture_default_str();
  lora->add_option("--alpha", lora_args->alpha, "adapter.lora.alpha (scale = alpha / rank)")
      ->capture_default_str();
  lora->add_option("--targets", lora_args->targets,
                   "Comma-separated per-layer weights to adapt (blk.N.<target>.weight)")
      ->capture_default_str();
  lora->add_option("--type", lora_args->type, "Type of lora_a/lora_b: F32, F16 or BF16")
      ->capture_default_str();
  lora->add_option("--seed", lora_args->seed, "Random seed; the same seed gives identical files")
      ->capture_default_str();
  lora->add_option("-o,--output", lora_args->output, "Output GGUF path")->required();
  lora->callback([lora_args] { run_command([lora_args] { return make_lora(*lora_args); }); });

  auto vocab_args = std::make_shared<MakeVocabArgs>();
  CLI::App* vocab = dev->add_subcommand(
      "make-vocab",
      "Write a tokenizer as a vocab-only GGUF: the Llama 3 BPE one (128256 tokens) or a small "
      "Gemma 4-style one");
  vocab
      ->add_option("--kind", vocab_args->kind,
                   "llama3 (from --encoder and --merges), harmony (the same BPE with gpt-oss's "
                   "Harmony special tokens at 128000+: <|start|>, <|channel|>, <|message|>, "
                   "<|constrain|>, <|end|>, <|call|>, <|return|>) or gemma4 (built in: "
                   "SentencePiece-style BPE, byte tokens, Gemma 4's special tokens)")
      ->capture_default_str();
  vocab
      ->add_option("--encoder", vocab_args->encoder,
                   "llama3, harmony: encoder.json (BPE token -> id)")
      ->check(CLI::ExistingFile);
  vocab
      ->add_option("--merges", vocab_args->merges,
                   "llama3, harmony: vocab.bpe (one merge per line)")
      ->check(CLI::ExistingFile);
  vocab->add_option("-o,--output", vocab_args->output, "Output GGUF path")->required();
  vocab->callback([vocab_args] { run_command([vocab_args] { return make_vocab(*vocab_args); }); });

  auto enc_args = std::make_shared<EncodeImageArgs>();
  CLI::App* enc = dev->add_subcommand(
      "encode-image", "Encode an image with a vision projector (times, embeddings)");
  enc->add_option("--projector", enc_args->projector,
                  "Projector GGUF (llama.cpp's mmproj), or a model GGUF with its tower inside "
                  "(Ollama's single-file gemma3, gemma4, mistral3, qwen25vl or qwen3vl)")
      ->required()
      ->check(CLI::ExistingFile);
  enc->add_option("--image", enc_args->image, "JPEG, PNG, WebP or GIF file")
      ->required()
      ->check(CLI::ExistingFile);
  enc->add_option("--threads", enc_args->threads, "CPU threads (0: the physical cores)")
      ->capture_default_str();
  enc->add_option("--repeat", enc_args->repeat, "Encode this many times, report the best")
      ->capture_default_str();
  enc->add_option("--backend", enc_args->backend, "cpu or vulkan")->capture_default_str();
  enc->add_flag("--json", enc_args->json, "Print the image embeddings as JSON");
  enc->callback([enc_args] { run_command([enc_args] { return encode_image(*enc_args); }); });
}

}  // namespace vkllm::cli
