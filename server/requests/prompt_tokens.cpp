#include "server/requests/prompt_tokens.h"

#include <span>
#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

#include "registry/digest.h"
#include "server/http/status_error.h"
#include "server/scheduler/context_shift.h"
#include "server/scheduler/image_inputs.h"

namespace vkllm::requests {

void check_context_tokens(const GenerationRequest& req, const tokenizer::Tokenizer& tok) {
  for (const int32_t id : req.context) {
    if (id < 0 || id >= tok.vocab_size()) {
      throw http::StatusError(400, "token id " + std::to_string(id) +
                                       " in context is outside the vocabulary of " +
                                       std::to_string(tok.vocab_size()));
    }
  }
}

namespace {

// The request's pictures, decoded and hashed (a picture that cannot be read is the client's 400).
std::vector<sched::SequenceImage> decode_images(const std::vector<std::string>& images,
                                                const vision::ImageLayout& layout) {
  std::vector<sched::SequenceImage> out;
  for (size_t i = 0; i < images.size(); ++i) {
    const auto bytes = std::as_bytes(std::span(images[i].data(), images[i].size()));
    sched::SequenceImage img;
    try {
      img.picture = std::make_shared<const image::Image>(
          image::decode(std::span(reinterpret_cast<const uint8_t*>(bytes.data()), bytes.size())));
    } catch (const image::ImageError& e) {
      throw http::StatusError(400, "image " + std::to_string(i) + ": " + e.what());
    }
    img.hash = registry::Digest::of(bytes).str();
    img.n_tokens = layout.tokens_for(img.picture->width, img.picture->height);
    img.open = layout.open;
    if (layout.mrope) img.grid_width = layout.grid_width(img.picture->width, img.picture->height);
    out.push_back(std::move(img));
  }
  return out;
}

}  // namespace

PromptTokens build_prompt_tokens(const GenerationRequest& req, const prompt::PromptBuilder& builder,
                                 const tokenizer::Tokenizer& tok, uint32_t num_ctx,
                                 const std::function<void()>& check,
                                 const vision::ImageLayout* images) {
  PromptTokens p;
  auto count = [&tok, &check](std::string_view text) {
    check();
    const size_t n = tok.encode(text, true, true).size();
    check();
    return n;
  };
  if (req.kind == GenerationRequest::Kind::chat) {  // (a failing template throws TemplateError)
    p.rendered = builder.render_chat(req.chat, num_ctx, count);
  } else if (req.raw) {
    p.rendered.text = req.generate.prompt;
    p.rendered.images = req.generate.images;
  } else {
    p.rendered = builder.render_generate(req.generate, num_ctx, count);
  }
  check();
  if (!req.debug_render_only) {
    std::string text = p.rendered.text;
    if (!req.context.empty()) text = tok.decode(req.context) + text;
    if (images && !p.rendered.images.empty()) {
      p.images = decode_images(p.rendered.images, *images);
      const auto pieces = vision::split_image_tags(text, p.images.size());
      std::vector<uint32_t> rows;
      for (const sched::SequenceImage& img : p.images) rows.push_back(img.n_tokens);
      vision::PromptWithImages laid = vision::tokenize_with_images(tok, *images, pieces, rows);
      p.tokens = std::move(laid.tokens);
      std::vector<sched::SequenceImage> placed;
      for (const vision::ImageSlot& slot : laid.images) {
        sched::SequenceImage img = p.images[slot.image];  // an image may be tagged twice
        img.offset = slot.offset;
        for (uint32_t i = 0; i < slot.n_tokens; ++i)
          p.tokens[slot.offset + i] = sched::image_token_id(img.hash, i);
        placed.push_back(std::move(img));
      }
      p.images = std::move(placed);
    } else {
      p.tokens = tok.encode(text, true, true);
    }
    if (p.tokens.empty()) p.tokens.push_back(tok.bos() >= 0 ? tok.bos() : 0);
  }
  return p;
}

void fit_prompt(std::vector<int32_t>& tokens, const ContextFit& fit) {
  const uint32_t limit = fit.num_ctx - 1;
  if (tokens.size() <= limit) return;
  if (!fit.truncate) {
    // Ollama passes on its llama-server's refusal as the message.
    nlohmann::ordered_json e;
    e["code"] = 400;
    e["message"] = "request (" + std::to_string(tokens.size()) +
                   " tokens) exceeds the available context size (" + std::to_string(fit.num_ctx) +
                   " tokens), try increasing it";
    e["type"] = "exceed_context_size_error";
    e["n_prompt_tokens"] = tokens.size();
    e["n_ctx"] = fit.num_ctx;
    throw http::StatusError(400, nlohmann::ordered_json{{"error", e}}.dump());
  }
  if (!fit.shift) {
    throw http::StatusError(400,
                            "the prompt is longer than the context length currently available to "
                            "the model; shorten the prompt, adjust the context length in "
                            "settings, or use a model with a longer context length");
  }
  const auto n = static_cast<uint32_t>(tokens.size());
  sched::shift_context(tokens, sched::shift_keep(fit.num_keep, n, fit.add_bos, limit), limit);
}

}  // namespace vkllm::requests
