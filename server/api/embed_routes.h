// Embedding and rerank routes over the EmbeddingService: Ollama's /api/embed and legacy
// /api/embeddings (compat §1.8), OpenAI's /v1/embeddings (§2.3: float or base64 vectors), and
// /api/rerank + /v1/rerank in the request/response shape Jina's, Cohere's and llama.cpp's rerank
// APIs share ({model, query, documents, top_n, return_documents} →
// {results: [{index, relevance_score, document}]}). JSON ↔ domain types only.
#pragma once

#include "server/http/router.h"
#include "server/requests/embedding_service.h"

namespace vkllm::api {

struct EmbedApi {
  requests::EmbeddingService& service;
};

void add_embed_routes(http::Router& router, EmbedApi& api);

}  // namespace vkllm::api
