// Runs encoder models (bert, nomic-bert) over whole inputs: the graph (EncoderForward) on a
// StepBackend, Vulkan or the CPU. Every token of an input attends to all of that input's tokens
// (non-causal attention: the mask option of the paged attention kernel), so an input is never
// split across steps; many inputs share one step. The Encoder only orchestrates: limits, token
// ids, block tables, batch metadata, results.
//
// K/V live only for the layer that writes them: one scratch K and V region, reused by every layer
// and laid out like the paged cache with a private block table per input. Nothing is registered
// in a prefix cache and nothing is kept after a pass; an Encoder needs no BlockPool.
//
// Outputs are pooled by the backend as the model's pooling_type says (mean, cls, last; rank: the
// first token through the classification head); with pooling none, every token's hidden state
// comes back.
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "engine/runtime/model.h"

namespace vkllm::runtime {

struct EncoderOptions {
  uint32_t max_batch_tokens = 2048;  // tokens per step over all inputs (also the longest input)
  uint32_t max_inputs = 64;          // inputs per step
  // Products of up to this many tokens use the decode (matvec) kernel, as RunnerOptions says.
  uint32_t matvec_max_batch = 64;
  // The constructor calls warm_up(), so the first pass compiles nothing.
  bool warm_up = true;
};

class StepBackend;
class EncoderForward;
class HostModel;

class Encoder {
 public:
  // On the model's Vulkan device. Throws std::invalid_argument when the model is not an encoder.
  explicit Encoder(const Model& model, const EncoderOptions& options = {});
  // On the CPU; `model` must outlive the Encoder.
  explicit Encoder(const HostModel& model, const EncoderOptions& options = {});
  ~Encoder();
  Encoder(const Encoder&) = delete;
  Encoder& operator=(const Encoder&) = delete;

  const EncoderOptions& options() const;
  // The longest input a step takes: max_batch_tokens, at most the model's trained context.
  uint32_t max_input_tokens() const;
  uint64_t device_bytes() const;  // activations and scratch K/V (not the weights)
  // Time of the last step's phases (GPU timestamps; empty if unsupported).
  std::vector<std::pair<std::string, double>> last_step_timings() const;

  // One step over `inputs`: at most max_inputs non-empty inputs of at most max_input_tokens()
  // tokens each, max_batch_tokens in all (std::invalid_argument otherwise, naming the limit).
  // Per input: its pooled vector (spec().n_embd_out() floats, not normalised) or, with pooling
  // none, its tokens' hidden states (n_tokens rows of n_embd).
  std::vector<std::vector<float>> encode(std::span<const std::span<const int32_t>> inputs);

  // Creates every pipeline a pass within the options can use (walks passes whose shapes select
  // different kernels with the backend in its dry mode; it builds what they ask for on worker
  // threads and saves the pipeline cache). Returns how many pipelines were created (0 on the CPU).
  size_t warm_up();

 private:
  void start();

  const model::ModelSpec* spec_;
  EncoderOptions opt_;
  uint32_t max_input_ = 0;
  std::unique_ptr<StepBackend> backend_;
  std::unique_ptr<EncoderForward> graph_;
};

}  // namespace vkllm::runtime
