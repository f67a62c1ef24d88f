// Records llama.cpp's answer to a prompt with one image for tests/reference/vision/*-prompt.json:
// the text model and its mmproj loaded by libllama and libmtmd (CPU), the prompt tokenized by
// mtmd_tokenize (its media marker where the image goes), every chunk evaluated with
// mtmd_helper_eval_chunks (an image's tokens decoded with causal attention off where mtmd says
// so), then the last logits and a greedy continuation with each step's top-2 margin. Also the
// image's embeddings (mtmd_encode_chunk: the projector's output rows, as the text model reads
// them) and, for the projector types whose preprocessor it knows (Gemma 3, Pixtral, Qwen2.5-VL,
// Qwen3-VL, Gemma 4), a summary of the pixels the tower reads (mtmd's own preprocessor classes,
// from its internal headers): size, sum, sum of squares, an index-weighted sum and 16 values
// mid-image per channel plane.
//
// Build against a llama.cpp build (see tests/reference/vision/README.md):
//   g++ -std=c++17 -O2 record_image_prompt.cpp -I$L/include -I$L/ggml/include -I$L/tools/mtmd
//       -L$B/bin -lmtmd -lllama -lggml -lggml-base -Wl,-rpath,$B/bin -o record_image_prompt
// Run: record_image_prompt MODEL.gguf MMPROJ.gguf IMAGE PROMPT N_GREEDY  (JSON on stdout)
#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <string>
#include <vector>

#include "clip-impl.h"
#include "clip-model.h"
#include "clip.h"
#include "llama.h"
#include "mtmd-helper.h"
#include "mtmd-image.h"
#include "mtmd.h"

namespace {

[[noreturn]] void fail(const std::string& why) {
  std::fprintf(stderr, "record_image_prompt: %s\n", why.c_str());
  std::exit(1);
}

void print_floats(const char* name, const float* v, size_t n, bool last = false) {
  std::printf("  \"%s\": [", name);
  for (size_t i = 0; i < n; ++i) std::printf("%s%.9g", i ? ", " : "", v[i]);
  std::printf("]%s\n", last ? "" : ",");
}

// The argmax of a logits row and its margin over the runner-up.
std::pair<int, float> top2(const float* logits, int n_vocab) {
  int best = 0;
  for (int i = 1; i < n_vocab; ++i)
    if (logits[i] > logits[best]) best = i;
  float second = -1e30f;
  for (int i = 0; i < n_vocab; ++i)
    if (i != best) second = std::max(second, logits[i]);
  return {best, logits[best] - second};
}

// The preprocessed pixels of the bitmap as channel planes (mtmd keeps them interleaved), summed
// as tests/engine/vision_test.cpp sums its own. Nothing for other projector types.
void print_pixels(const char* mmproj, const mtmd_bitmap* bmp) {
  clip_context_params cp{};
  cp.use_gpu = false;
  cp.flash_attn_type = CLIP_FLASH_ATTN_TYPE_DISABLED;
  cp.image_min_tokens = -1;
  cp.image_max_tokens = -1;
  cp.warmup = false;
  clip_init_result r = clip_init(mmproj, cp);
  if (!r.ctx_v) fail("clip_init failed");
  std::unique_ptr<mtmd_image_preprocessor> pre;
  switch (clip_get_projector_type(r.ctx_v)) {
    case PROJECTOR_TYPE_GEMMA3:
      pre = std::make_unique<mtmd_image_preprocessor_fixed_size>(r.ctx_v);
      break;
    case PROJECTOR_TYPE_PIXTRAL:
    case PROJECTOR_TYPE_QWEN25VL:
    case PROJECTOR_TYPE_GEMMA4V:
    case PROJECTOR_TYPE_QWEN3VL:
      pre = std::make_unique<mtmd_image_preprocessor_dyn_size>(r.ctx_v);
      break;
    default:
      clip_free(r.ctx_v);
      return;
  }
  clip_image_u8 img;
  const int nx = static_cast<int>(mtmd_bitmap_get_nx(bmp)),
            ny = static_cast<int>(mtmd_bitmap_get_ny(bmp));
  img.set_size({nx, ny}, false);
  const unsigned char* data = mtmd_bitmap_get_data(bmp);
  img.cpy_buf(std::vector<uint8_t>(data, data + size_t(nx) * ny * 3));
  const mtmd_image_preproc_out out = pre->preprocess(img);
  const clip_image_f32& f = out.entries.at(0);
  const int W = f.nx(), H = f.ny();
  const std::vector<float>& buf = f.get_ro_buf();
  const size_t plane = size_t(W) * H;
  std::vector<float> planes(plane * 3);
  for (size_t i = 0; i < plane; ++i)
    for (int c = 0; c < 3; ++c) planes[c * plane + i] = buf[i * 3 + c];
  double sum = 0, sum_sq = 0, weighted = 0;
  for (size_t i = 0; i < planes.size(); ++i) {
    const double v = planes[i];
    sum += v, sum_sq += v * v, weighted += v * double(i % 251 + 1);
  }
  std::printf(
      "  \"pixels\": {\"width\": %d, \"height\": %d, \"sum\": %.17g, \"sum_sq\": %.17g, "
      "\"weighted\": %.17g, \"centre\": [",
      W, H, sum, sum_sq, weighted);
  const size_t centre = size_t(H / 2) * W + W / 2 - 8;
  for (int c = 0; c < 3; ++c) {
    std::printf("%s[", c ? ", " : "");
    for (size_t i = 0; i < 16; ++i)
      std::printf("%s%.9g", i ? ", " : "", planes[c * plane + centre + i]);
    std::printf("]");
  }
  std::printf("]},\n");
  clip_free(r.ctx_v);
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 6) fail("usage: MODEL.gguf MMPROJ.gguf IMAGE PROMPT N_GREEDY");
  const std::string prompt = argv[4];
  const int n_greedy = std::atoi(argv[5]);
  llama_log_set([](ggml_log_level, const char*, void*) {}, nullptr);
  mtmd_helper_log_set([](ggml_log_level, const char*, void*) {}, nullptr);
  llama_backend_init();

  llama_model_params mp = llama_model_default_params();
  mp.n_gpu_layers = 0;
  llama_model* model = llama_model_load_from_file(argv[1], mp);
  if (!model) fail("cannot load the model");
  llama_context_params cp = llama_context_default_params();
  cp.n_ctx = 512;
  cp.n_batch = 512;
  cp.n_ubatch = 512;
  cp.n_threads = cp.n_threads_batch = 2;
  cp.flash_attn_type = LLAMA_FLASH_ATTN_TYPE_DISABLED;
  llama_context* ctx = llama_init_from_model(model, cp);
  if (!ctx) fail("cannot make a context");

  mtmd_context_params mparams = mtmd_context_params_default();
  mparams.use_gpu = false;
  mparams.n_threads = 2;
  mparams.warmup = false;
  mparams.flash_attn_type = LLAMA_FLASH_ATTN_TYPE_DISABLED;
  mtmd_context* mctx = mtmd_init_from_file(argv[2], model, mparams);
  if (!mctx) fail("cannot load the projector");
  mtmd_helper_bitmap_wrapper bmp =
      mtmd_helper_bitmap_init_from_file(mctx, argv[3], false, mtmd_helper_init_opt_default());
  if (!bmp.bitmap) fail("cannot read the image");

  mtmd_input_text text{prompt.c_str(), prompt.size(), /*add_special=*/true,
                       /*parse_special=*/true};
  mtmd_input_chunks* chunks = mtmd_input_chunks_init();
  const mtmd_bitmap* bitmaps[] = {bmp.bitmap};
  if (mtmd_tokenize(mctx, chunks, &text, bitmaps, 1) != 0) fail("mtmd_tokenize failed");

  std::printf("{\n  \"prompt\": \"");
  for (char c : prompt) {
    if (c == '\n')
      std::printf("\\n");
    else if (c == '"' || c == '\\')
      std::printf("\\%c", c);
    else
      std::putchar(c);
  }
  std::printf("\",\n  \"prompt_tokens\": [");
  bool first = true, non_causal = false;
  size_t image_tokens = 0;
  for (size_t i = 0; i < mtmd_input_chunks_size(chunks); ++i) {
    const mtmd_input_chunk* c = mtmd_input_chunks_get(chunks, i);
    if (mtmd_input_chunk_get_type(c) == MTMD_INPUT_CHUNK_TYPE_TEXT) {
      size_t n = 0;
      const llama_token* t = mtmd_input_chunk_get_tokens_text(c, &n);
      for (size_t j = 0; j < n; ++j, first = false) std::printf("%s%d", first ? "" : ", ", t[j]);
    } else {
      std::printf("%s-1", first ? "" : ", ");
      first = false;
      image_tokens = mtmd_input_chunk_get_n_tokens(c);
      non_causal = mtmd_decode_use_non_causal(mctx, c);
    }
  }
  std::printf("],\n  \"image_tokens\": %zu,\n  \"non_causal\": %s,\n", image_tokens,
              non_causal ? "true" : "false");

  print_pixels(argv[2], bmp.bitmap);
  // An image row's width: n_embd, wider with Qwen3-VL's deepstack slices after it.
  const int n_embd = llama_model_n_embd_inp(model);
  for (size_t i = 0; i < mtmd_input_chunks_size(chunks); ++i) {
    const mtmd_input_chunk* c = mtmd_input_chunks_get(chunks, i);
    if (mtmd_input_chunk_get_type(c) != MTMD_INPUT_CHUNK_TYPE_IMAGE) continue;
    if (mtmd_encode_chunk(mctx, c) != 0) fail("mtmd_encode_chunk failed");
    const float* e = mtmd_get_output_embd(mctx);
    std::printf("  \"n_embd\": %d,\n  \"embeddings\": [", n_embd);
    for (size_t t = 0; t < mtmd_input_chunk_get_n_tokens(c); ++t) {
      std::printf("%s\n   [", t ? "," : "");
      for (int j = 0; j < n_embd; ++j) std::printf("%s%.9g", j ? ", " : "", e[t * n_embd + j]);
      std::printf("]");
    }
    std::printf("],\n");
    break;
  }

  llama_pos n_past = 0;
  if (mtmd_helper_eval_chunks(mctx, ctx, chunks, 0, 0, 512, true, &n_past) != 0)
    fail("mtmd_helper_eval_chunks failed");
  const int n_vocab = llama_vocab_n_tokens(llama_model_get_vocab(model));
  print_floats("last_logits", llama_get_logits_ith(ctx, -1), n_vocab);

  std::vector<int> greedy;
  std::vector<float> margins;
  const float* logits = llama_get_logits_ith(ctx, -1);
  for (int i = 0; i < n_greedy; ++i) {
    const auto [tok, margin] = top2(logits, n_vocab);
    greedy.push_back(tok);
    margins.push_back(margin);
    llama_token t = tok;
    llama_batch b = llama_batch_get_one(&t, 1);
    if (llama_decode(ctx, b) != 0) fail("llama_decode failed");
    logits = llama_get_logits_ith(ctx, -1);
  }
  std::printf("  \"greedy_tokens\": [");
  for (size_t i = 0; i < greedy.size(); ++i) std::printf("%s%d", i ? ", " : "", greedy[i]);
  std::printf("],\n");
  print_floats("greedy_margins", margins.data(), margins.size(), true);
  std::printf("}\n");

  mtmd_input_chunks_free(chunks);
  mtmd_bitmap_free(bmp.bitmap);
  mtmd_free(mctx);
  llama_free(ctx);
  llama_model_free(model);
  return 0;
}
