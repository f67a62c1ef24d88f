#include "engine/runtime/encoder.h"

#include <algorithm>
#include <stdexcept>
#include <string>

#include "engine/kv/kv_layout.h"
#include "engine/runtime/cpu_backend.h"
#include "engine/runtime/encoder_forward.h"
#include "engine/runtime/host_model.h"
#include "engine/runtime/runner.h"
#include "engine/runtime/step_backend.h"
#include "engine/runtime/vulkan_backend.h"

namespace vkllm::runtime {

namespace {

using model::Pooling;

EncoderOptions checked(const model::ModelSpec& spec, EncoderOptions o) {
  if (!spec.is_encoder()) {
    throw std::invalid_argument("Encoder: " + spec.arch_name + " is not an encoder model");
  }
  o.max_inputs = std::max<uint32_t>(o.max_inputs, 1);
  o.max_batch_tokens = std::max(o.max_batch_tokens, o.max_inputs);
  return o;
}

// What a backend sizes itself for: one row per input, a context of the longest input, scratch
// K/V in which every input starts a fresh block (so each may leave one partly used), one
// submission per step, and products that read f32 activations as the encoder always did.
RunnerOptions backend_options(const model::ModelSpec& spec, const EncoderOptions& o) {
  RunnerOptions r;
  r.max_batch_tokens = o.max_batch_tokens;
  r.max_seqs = o.max_inputs;
  r.max_logits_rows = o.max_inputs;
  r.max_context = std::min(o.max_batch_tokens, spec.n_ctx_train);
  r.matvec_max_batch = o.matvec_max_batch;
  r.warm_up = false;  // the Encoder walks its own passes
  r.int8_dot = vk::Int8Dot::Off;
  r.step_parts = 1;
  r.kv_scratch_blocks = o.max_batch_tokens / r.block_size + o.max_inputs + 1;
  return r;
}

}  // namespace

Encoder::Encoder(const Model& model, const EncoderOptions& options)
    : spec_(&model.spec()), opt_(checked(model.spec(), options)) {
  RunnerOptions r = backend_options(*spec_, opt_);
  backend_ = make_vulkan_backend(model, r);
  start();
}

Encoder::Encoder(const HostModel& model, const EncoderOptions& options)
    : spec_(&model.spec()), opt_(checked(model.spec(), options)) {
  RunnerOptions r = backend_options(*spec_, opt_);
  backend_ = make_cpu_backend(model, r);
  start();
}

void Encoder::start() {
  opt_.max_batch_tokens = backend_->max_batch_tokens();
  max_input_ = std::min(opt_.max_batch_tokens, spec_->n_ctx_train);
  graph_ = std::make_unique<EncoderForward>(*spec_);
  if (opt_.warm_up) warm_up();
}

Encoder::~Encoder() = default;

size_t Encoder::warm_up() {
  return backend_->warm_up([&] {
    const std::vector<int32_t> zeros(max_input_, 0);
    auto pass = [&](std::vector<uint32_t> lengths) {
      std::vector<std::span<const int32_t>> inputs;
      for (uint32_t n : lengths) inputs.push_back(std::span(zeros).first(n));
      encode(inputs);
    };
    // Input lengths up to 16 pick the attention's rows per workgroup and the matvec widths;
    // product_kernel_steps where the products change kernels; 2..8 inputs the rank head's matvec
    // widths.
    for (uint32_t n = 1; n <= std::min(16u, max_input_); ++n) pass({n});
    for (uint32_t n : product_kernel_steps(opt_.matvec_max_batch)) pass({std::min(max_input_, n)});
    pass({max_input_});
    for (uint32_t s = 2; s <= std::min(8u, opt_.max_inputs); ++s) {
      pass(std::vector<uint32_t>(s, 1));
    }
  });
}

const EncoderOptions& Encoder::options() const {
  return opt_;
}
uint32_t Encoder::max_input_tokens() const {
  return max_input_;
}
uint64_t Encoder::device_bytes() const {
  return backend_->activation_bytes() + backend_->kv_bytes();
}
std::vector<std::pair<std::string, double>> Encoder::last_step_timings() const {
  return backend_->timings();
}

std::vector<std::vector<float>> Encoder::encode(std::span<const std::span<const int32_t>> inputs) {
  StepBackend& B = *backend_;
  const auto& spec = *spec_;
  if (inputs.empty()) return {};
  if (inputs.size() > opt_.max_inputs) {
    throw std::invalid_argument("Encoder: " + std::to_string(inputs.size()) +
                                " inputs exceed the limit of " + std::to_string(opt_.max_inputs));
  }
  uint32_t T = 0;
  for (const auto& in : inputs) {
    if (in.empty()) throw std::invalid_argument("Encoder: empty input");
    if (in.size() > max_input_) {
      throw std::invalid_argument("Encoder: an input of " + std::to_string(in.size()) +
                                  " tokens exceeds the limit of " + std::to_string(max_input_));
    }
    T += static_cast<uint32_t>(in.size());
  }
  if (T > opt_.max_batch_tokens) {
    throw std::invalid_argument("Encoder: " + std::to_string(T) + " tokens exceed the limit of " +
                                std::to_string(opt_.max_batch_tokens));
  }

  // Token ids and private block tables (consecutive scratch blocks per input).
  uint32_t* ids = B.token_ids();
  const uint32_t bs = B.kv_layout().block_size;
  std::vector<uint32_t> blocks;
  std::vector<std::pair<size_t, size_t>> table_ranges;
  uint32_t t = 0;
  for (const auto& in : inputs) {
    const auto n = static_cast<uint32_t>(in.size());
    for (uint32_t j = 0; j < n; ++j) {
      if (in[j] < 0 || static_cast<uint32_t>(in[j]) >= spec.n_vocab) {
        throw std::invalid_argument("token id " + std::to_string(in[j]) +
                                    " is outside the vocabulary");
      }
      ids[t + j] = static_cast<uint32_t>(in[j]);
    }
    const size_t first = blocks.size();
    for (uint32_t b = 0; b < (n + bs - 1) / bs; ++b)
      blocks.push_back(static_cast<uint32_t>(blocks.size()));
    table_ranges.emplace_back(first, blocks.size() - first);
    t += n;
  }
  std::vector<kv::BatchSequence> seqs;
  for (size_t i = 0; i < inputs.size(); ++i) {
    const auto n = static_cast<uint32_t>(inputs[i].size());
    seqs.push_back(
        {std::span<const uint32_t>(blocks).subspan(table_ranges[i].first, table_ranges[i].second),
         n, n});
  }
  const auto S = static_cast<uint32_t>(inputs.size());
  const bool per_token = spec.pooling == Pooling::None;

  B.begin_step(kv::build_batch_meta(seqs, bs));
  graph_->step(B, {.n_tokens = T, .n_seqs = S});
  StepOutputs out;
  out.pooled = !per_token;
  out.token_states = per_token;
  B.end_step(out, per_token ? T : S);

  const float* r = B.hidden();
  const uint32_t out_dim = spec.n_embd_out();
  std::vector<std::vector<float>> result(S);
  uint64_t at = 0;
  for (uint32_t i = 0; i < S; ++i) {
    const uint64_t len = per_token ? inputs[i].size() * uint64_t(spec.n_embd) : out_dim;
    result[i].assign(r + at, r + at + len);
    at += len;
  }
  return result;
}

}  // namespace vkllm::runtime
