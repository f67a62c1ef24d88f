#include "engine/vision/image_prompt.h"

#include <algorithm>
#include <charconv>
#include <stdexcept>

namespace vkllm::vision {

ImageLayout image_layout(const VisionSpec& spec) {
  ImageLayout l;
  switch (spec.projector) {
    case ProjectorType::Gemma3:
      l.lead = "\n\n";
      l.begin = "<start_of_image>";
      l.end = "<end_of_image>";
      l.trail = "\n\n";
      l.open = true;  // llama.cpp decodes Gemma 3's image tokens with causal attention off
      l.n_tokens = spec.n_output_tokens();
      break;
    case ProjectorType::Pixtral:
      l.end = "[IMG_END]";
      l.open = false;  // mtmd_decode_use_non_causal: causal for Pixtral
      l.n_tokens = 0;  // the image's size decides
      break;
    case ProjectorType::Qwen25vl:
    case ProjectorType::Qwen3vl:
      l.begin = "<|vision_start|>";
      l.end = "<|vision_end|>";
      l.open = false;  // causal, as mtmd decodes it (M-RoPE's 2D order is the rows' order)
      l.n_tokens = 0;
      l.mrope = true;
      break;
    case ProjectorType::Gemma4v:
      l.begin = "<|image>";
      l.end = "<image|>";
      // mtmd_decode_use_non_causal: causal for E2B and E4B (text widths 1536 and 2560); the
      // larger models decode an image's tokens both ways, in their sliding-window layers only
      // (llama.cpp's LLAMA_NON_CAUSAL_TYPE_SWA_ONLY for gemma4: the runtime's part).
      l.open = spec.text_embd != 1536 && spec.text_embd != 2560;
      l.n_tokens = 0;
      break;
  }
  l.spec = spec;
  return l;
}

PromptWithImages tokenize_with_images(const tokenizer::Tokenizer& tok, const ImageLayout& layout,
                                      std::span<const PromptPiece> pieces,
                                      std::span<const uint32_t> image_tokens) {
  // The text between images, with the layout's lead and trail joined to it; the BOS (where the
  // tokenizer adds one) goes with the first text, which an image's lead or begin marker is when
  // the prompt starts with the image.
  PromptWithImages out;
  bool first_text = true;
  auto add_text = [&](const std::string& text) {
    if (text.empty()) return;
    const std::vector<int32_t> ids = tok.encode(text, first_text, true);
    first_text = false;
    out.tokens.insert(out.tokens.end(), ids.begin(), ids.end());
  };
  std::string pending;
  for (size_t i = 0; i < pieces.size(); ++i) {
    const PromptPiece& p = pieces[i];
    if (!p.image) {
      pending += p.text;
      continue;
    }
    const uint32_t n = *p.image < image_tokens.size() ? image_tokens[*p.image] : layout.n_tokens;
    if (n == 0) throw std::invalid_argument("tokenize_with_images: image without a row count");
    add_text(pending + layout.lead);
    add_text(layout.begin);
    out.images.push_back({static_cast<uint32_t>(out.tokens.size()), n, *p.image});
    out.tokens.insert(out.tokens.end(), n, kImageToken);
    add_text(layout.end);
    pending = layout.trail;
  }
  add_text(pending);
  return out;
}

std::vector<uint32_t> mrope_positions(std::span<const MropeImage> images, uint32_t begin,
                                      uint32_t end) {
  std::vector<uint32_t> out;
  out.reserve(3ull * (end > begin ? end - begin : 0));
  // Token i's t is i + shift: each image before it moves the text after it by its extent
  // (max(width, height)) less its token count.
  int64_t shift = 0;
  uint32_t i = begin, done = 0;
  auto text_until = [&](uint32_t stop) {
    for (; i < std::min(stop, end); ++i) {
      const auto p = static_cast<uint32_t>(i + shift);
      out.insert(out.end(), {p, p, p});
    }
  };
  for (const MropeImage& img : images) {
    if (img.offset < done || img.n_tokens == 0 || img.grid_width == 0 ||
        img.n_tokens % img.grid_width != 0) {
      throw std::invalid_argument("mrope_positions: images out of order or not a grid");
    }
    done = img.offset + img.n_tokens;
    text_until(img.offset);
    const auto t = static_cast<uint32_t>(img.offset + shift);
    for (; i < std::min(done, end); ++i) {
      const uint32_t r = i - img.offset;
      out.insert(out.end(), {t, t + r / img.grid_width, t + r % img.grid_width});
    }
    const uint32_t rows = img.n_tokens / img.grid_width;
    shift += int64_t{std::max(img.grid_width, rows)} - img.n_tokens;
  }
  text_until(end);
  return out;
}

std::vector<PromptPiece> split_image_tags(const std::string& text, size_t n_images) {
  std::vector<PromptPiece> out;
  std::string pending;
  size_t at = 0;
  while (at < text.size()) {
    const size_t tag = text.find("[img-", at);
    if (tag == std::string::npos) break;
    size_t n = 0;
    const char* digits = text.data() + tag + 5;
    const char* end = text.data() + text.size();
    const auto [ptr, ec] = std::from_chars(digits, end, n);
    if (ec != std::errc() || ptr == end || *ptr != ']' || n >= n_images) {
      pending.append(text, at, tag + 5 - at);
      at = tag + 5;
      continue;
    }
    pending.append(text, at, tag - at);
    if (!pending.empty()) out.push_back({std::move(pending), std::nullopt});
    pending.clear();
    out.push_back({"", n});
    at = static_cast<size_t>(ptr - text.data()) + 1;
  }
  pending.append(text, at, std::string::npos);
  if (!pending.empty()) out.push_back({std::move(pending), std::nullopt});
  return out;
}

}  // namespace vkllm::vision
