// The GGUF tensor names llama.cpp uses for each weight of the supported architectures.
#pragma once

#include <cstdint>
#include <string>

namespace vkllm::model {

enum class Weight {
  TokenEmbd,
  OutputNorm,
  Output,
  RopeFreqs,
  AttnNorm,
  AttnQ,
  AttnK,
  AttnV,
  AttnQKV,
  AttnOut,
  AttnQBias,
  AttnKBias,
  AttnVBias,
  AttnQNorm,
  AttnKNorm,
  PostAttnNorm,
  FfnNorm,
  FfnGate,
  FfnUp,
  FfnDown,
  PostFfnNorm,
  // Encoder (BERT-family) models: learned token-type and position embeddings, LayerNorms with
  // biases after each residual add, projection biases, and a cross-encoder's classification head.
  TokenTypes,
  PosEmbd,
  TokenEmbdNorm,
  TokenEmbdNormBias,
  AttnOutBias,
  AttnOutNorm,
  AttnOutNormBias,
  FfnUpBias,
  FfnDownBias,
  LayerOutNorm,
  LayerOutNormBias,
  Cls,
  ClsBias,
  ClsOut,
  ClsOutBias,
  // Mixture-of-experts feed-forward (qwen3moe): the router (ffn_gate_inp, [n_embd, n_expert],
  // F32 in llama.cpp's files) and the experts' weights stacked along a third dimension
  // ([cols, rows, n_expert]: expert e's rows follow expert e-1's).
  FfnGateInp,
  FfnGateExps,
  FfnUpExps,
  FfnDownExps,
  // gpt-oss: a learned logit per query head that joins each softmax's denominator
  // (attn_sinks.weight, [n_head]), the router's bias ([n_expert]) and the experts' biases
  // ([rows, n_expert]: expert e's bias is row e).
  AttnSinks,
  FfnGateInpBias,
  FfnGateExpsBias,
  FfnUpExpsBias,
  FfnDownExpsBias,
  // LFM2's gated short convolution: in_proj (n_embd -> B|C|X, 3 x n_embd), the depthwise conv
  // kernel ([L, n_embd]: channel c's L taps contiguous, F32) and out_proj (n_embd -> n_embd).
  ShortConvInProj,
  ShortConvConv,
  ShortConvOutProj,
  // Sentence-transformers dense projections after pooling (EmbeddingGemma): n_embd -> the dense
  // width -> n_embd.
  Dense2,
  Dense3,
  // Gemma 3n (gemma3n_forward.h): per-layer token embeddings ([n_layer * n_embd_altup, n_vocab])
  // and the projection of the residual stream onto them with its norm; AltUp's stacked stream
  // projections ([n_embd, n_embd, n_altup - 1]); per layer the per-layer input gate and
  // projection with its norm, AltUp's router, its norm and the predict / correct coefficients,
  // and LAuReL's low-rank pair with its norm.
  PerLayerTokenEmbd,
  PerLayerModelProj,
  PerLayerProjNorm,
  AltupProj,
  AltupUnembdProj,
  PerLayerInpGate,
  PerLayerProj,
  PerLayerPostNorm,
  AltupCorrectCoef,
  AltupCorrectScale,
  AltupPredictCoef,
  AltupRouter,
  AltupRouterNorm,
  LaurelL,
  LaurelR,
  LaurelPostNorm,
  // Gemma 4 (gemma4_forward.h): a layer's output scale (one value), and in its MoE layers the
  // norms of the dense and the expert branch (pre_ffw_norm_2 before the experts, post_ffw_norm_1
  // / _2 after each branch), the router's input scale ([n_embd]) and each expert's output scale
  // ([n_expert]).
  LayerOutScale,
  FfnPreNorm2,
  FfnPostNorm1,
  FfnPostNorm2,
  FfnGateInpScale,
  FfnDownExpsScale,
  // Qwen3.5 (qwen35_spec.h): a gated attention layer's output gate (interleaved with Q in
  // attn_q); a Gated DeltaNet layer's value gate z (attn_gate, n_embd -> value width), fused
  // Q|K|V projection (attn_qkv), causal conv kernel ([kernel, Q|K|V channels], F32), per value
  // head the time-step bias (ssm_dt.bias), the decay -exp(A_log) (ssm_a) and the alpha / beta
  // projections (n_embd -> value heads), the gated output norm ([head_v_dim]) and the output
  // projection (ssm_out, value width -> n_embd).
  AttnGate,
  SsmConv1d,
  SsmDt,
  SsmA,
  SsmAlpha,
  SsmBeta,
  SsmNorm,
  SsmOut,
  // Mamba-2 (mamba2_spec.h): the input projection to z | xBC | dt (ssm_in), the conv's bias
  // (ssm_conv1d.bias, [conv channels]) and the skip D (ssm_d, [1, heads]); ssm_a holds A =
  // -exp(A_log) ([1, heads]), ssm_norm the grouped norm's weight ([d_inner / groups, groups]).
  SsmIn,
  SsmConv1dBias,
  SsmD,
  // A MoE layer's shared expert (ModelSpec::n_ff_shexp): a dense SwiGLU FFN beside the routed
  // experts, on the same input, and (Qwen2-MoE, Qwen3.5-MoE, Qwen3-Next) its per-token gate
  // ffn_gate_inp_shexp ([n_embd]: one logit, through a sigmoid).
  FfnGateShexp,
  FfnUpShexp,
  FfnDownShexp,
  FfnGateInpShexp,
  // Qwen3-Next: a DeltaNet layer's beta and alpha projections in one ([n_embd, 2 x value heads]:
  // per key head, its value heads' betas, then their alphas).
  SsmBetaAlpha,
  // Nemotron-H MoE (DeepSeek V3's routing): the experts' selection bias (exp_probs_b.bias,
  // [n_expert], F32), added to the router's scores for choosing the top k only; and Nemotron 3
  // Super's latent projections of the experts' input and output (ffn_latent_down / _up), which
  // are recognised to be refused.
  FfnExpProbsBias,
  FfnLatentDown,
  FfnLatentUp,
  // Stacked gate|up experts ([n_embd, 2 x n_ff_exp, n_expert]: each expert's gate rows, then its
  // up rows). Files' ffn_gate_up_exps are read as FfnGateExps / FfnUpExps views
  // (gguf::split_stacked_experts); the Vulkan model holds the pair as this one device tensor
  // (runtime/weight_fusion.h), for one product of 2 x n_ff_exp rows per expert.
  FfnGateUpExps,
  // A multi-token-prediction block (Qwen3.5's NextN, nextn_head.h): the projection of its input,
  // the token's normed embedding beside the model's normed hidden state ([2 x n_embd, n_embd]),
  // and those two norms; the block's own output norm (nextn.shared_head_norm), where it has one.
  NextnEhProj,
  NextnEnorm,
  NextnHnorm,
  NextnSharedHeadNorm,
};

// Name of a global weight (layer ignored) or of layer `layer`'s weight, e.g. "blk.3.attn_q.weight".
std::string weight_name(Weight w, uint32_t layer = 0);
bool is_per_layer(Weight w);

}  // namespace vkllm::model
