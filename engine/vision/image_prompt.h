// A prompt with images as the text model reads it: text pieces tokenized on their own, and each
// image as its begin marker, one placeholder token per image embedding row and its end marker,
// in the layout of the projector's model as llama.cpp's mtmd and Ollama build it.
//
// Gemma 3: "\n\n" joined to the text before the image, "<start_of_image>" tokenized on its own,
// the image's rows, "<end_of_image>" on its own, "\n\n" joined to the text after: what mtmd's
// tokenizer gives for "...\n\n<__media__>\n\n..." and Ollama's gemma3 model inserts around an
// image (its "\n\n" tokens beside the markers).
//
// Gemma 4: "<|image>", the image's rows (one per pooled patch, its size decides how many) and
// "<image|>", each marker tokenized on its own (mtmd's layout).
//
// Mistral 3 (Pixtral): the image's rows right after the text before it, then "[IMG_END]" on its
// own (mtmd's layout; the [IMG_BREAK] rows between rows of patches are among the image's rows,
// the projector's embedding of that token), decoded causally as llama.cpp does. Its row count
// depends on the image's size (vision_spec.h image_token_count).
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "engine/tokenizer/tokenizer.h"
#include "engine/vision/vision_spec.h"

namespace vkllm::vision {

// The placeholder id tokenize_with_images puts where an image's rows go; the caller replaces it
// (the server with ids derived from the image's content, for the prefix cache).
inline constexpr int32_t kImageToken = -1;

struct ImageLayout {
  std::string lead;       // joined to the end of the text before the image
  std::string begin;      // tokenized on its own (special tokens parsed) before the image's rows
  std::string end;        // tokenized on its own after them
  std::string trail;      // joined to the start of the text after the image
  uint32_t n_tokens = 0;  // rows (tokens) per image, for towers of a fixed size (else 0)
  bool open = true;       // the image's tokens attend to each other both ways (Gemma 3)
  bool mrope = false;     // the text model takes M-RoPE positions (Qwen2.5-VL: mrope_positions)
  VisionSpec spec;
  // The rows an image of width x height takes.
  uint32_t tokens_for(uint32_t width, uint32_t height) const {
    return image_token_count(spec, width, height);
  }
  // Qwen2.5-VL: the merged patches a row of an image of width x height holds (its grid width
  // for the M-RoPE positions).
  uint32_t grid_width(uint32_t width, uint32_t height) const {
    return tower_size(spec, width, height).width / (spec.patch_size * spec.n_merge);
  }
};

ImageLayout image_layout(const VisionSpec& spec);

// Where an image's rows go in a tokenized prompt.
struct ImageSlot {
  uint32_t offset = 0;  // its first row's token index
  uint32_t n_tokens = 0;
  size_t image = 0;  // the PromptPiece::image it came from
};

struct PromptWithImages {
  std::vector<int32_t> tokens;  // kImageToken at the images' rows
  std::vector<ImageSlot> images;
};

// A piece of a prompt: text, or (image set) an image.
struct PromptPiece {
  std::string text;
  std::optional<size_t> image;
};

// Tokenizes the pieces with the layout: the first piece of text with the tokenizer's own
// specials (BOS), the others without; special tokens are parsed everywhere. `image_tokens[i]`:
// the rows of image i (PromptPiece::image), for a layout without a fixed n_tokens;
// std::invalid_argument when an image has no count there.
PromptWithImages tokenize_with_images(const tokenizer::Tokenizer& tok, const ImageLayout& layout,
                                      std::span<const PromptPiece> pieces,
                                      std::span<const uint32_t> image_tokens = {});

// An image's place in a sequence for M-RoPE positions: its first token's index in the
// sequence, its rows, and its grid's width in rows (n_tokens / grid_width rows of it).
struct MropeImage {
  uint32_t offset = 0;
  uint32_t n_tokens = 0;
  uint32_t grid_width = 0;
};

// The M-RoPE positions (t, h, w; 3 per token) of a sequence's tokens [begin, end) with these
// images (in order, disjoint; the tokens after the last are text, e.g. generated ones), as
// llama.cpp's mtmd gives them to Qwen2-VL / 2.5-VL: a text token has its running position p
// thrice (p counts up by one a token); an image's tokens all have t = p, and h = p + row, w = p +
// column of their grid; after it p continues from p + max(grid width, grid height).
// std::invalid_argument for images out of order or not a whole grid.
std::vector<uint32_t> mrope_positions(std::span<const MropeImage> images, uint32_t begin,
                                      uint32_t end);

// Splits text at "[img-N]" tags (the prompt builder's image tags) into pieces; a tag whose N is
// not below n_images stays text.
std::vector<PromptPiece> split_image_tags(const std::string& text, size_t n_images);

}  // namespace vkllm::vision
