// What a model's listing, /api/show and generation derive from its blobs beyond the store's own
// records: its capabilities (config, GGUF header, template) and the GGUF summary of its weights
// (memoised by blob digest: a blob never changes).
#pragma once

#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "registry/model_store.h"
#include "server/models/gguf_summary.h"
#include "server/prompt/prompt.h"

namespace vkllm::models {

// What a model can do, in Ollama's capability names. /api/show, /api/tags and generation's checks
// ("does not support tools", thinking, insert, images, embeddings) all take it from
// capabilities_of, so a client is never refused what the listing offers, nor offered what it
// would be refused.
struct Capabilities {
  std::vector<std::string> names;  // in order: the config's, the GGUF's, the template's
  // What Ollama would list (a projector, a vision or audio tower, a config that says so) but the
  // engine cannot serve yet: audio, and vision other than a Gemma 3 or Mistral 3 model's
  // projector layer (issue 38). Left out of `names`, so a client does not offer images that
  // would be dropped unseen; named in the refusal instead.
  std::vector<std::string> not_run;
  // The GGUF header was read, so completion / embedding are known (an unreadable model is not
  // refused up front: its load fails with the loader's message).
  bool from_weights = false;
  bool has(std::string_view name) const;
  // Generation may go ahead: completion, or weights not read yet.
  bool generates() const { return !from_weights || has("completion"); }
};

// The one derivation (compat §1.10), de-duplicated:
// 1. `capabilities` listed in the config blob;
// 2. the GGUF's (`g`): embedding (a pooling type) or completion, rerank (rank pooling), vision,
//    audio;
// 3. the template the prompts are built with (`in_use`: PromptBuilder::capabilities(), which
//    holds Harmony's parser): tools (.Tools), insert (.Suffix), thinking (inferable tags);
// 4. thinking for the gpt-oss family; vision for a projector layer.
// audio, and vision unless the model is gemma3 or mistral3 with a projector layer, then move to
// `not_run`.
// `g` is null when the weights are absent or not readable GGUF, `in_use` when the template does
// not parse.
Capabilities capabilities_of(const registry::ModelShow& m, const GgufSummary* g,
                             const prompt::TemplateCapabilities* in_use);

// The same, building the model's prompt builder to learn its template's (/api/show, /api/tags).
Capabilities capabilities_of(const registry::ModelShow& m, const GgufSummary* g);

// What the model's prompt builder is made from: its layers and, from its GGUF, the chat template
// and architecture.
prompt::ModelPrompt model_prompt(const registry::ModelShow& m, const GgufSummary* g);

// The GGUF summary of the model's weights; null when it has none or they are not readable GGUF
// (such a model still lists).
std::shared_ptr<const GgufSummary> summary_of(registry::ModelStore& store,
                                              const registry::ModelShow& m);

}  // namespace vkllm::models
