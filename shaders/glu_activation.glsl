// The gate activations of gated FFNs, shared by glu.comp and the matvec that fuses the GLU into
// its gate|up product:
//   act 0: SiLU  x / (1 + e^-x)                        (SwiGLU: llama, qwen, mistral, phi3)
//   act 1: GELU, tanh approximation as ggml computes it (GeGLU: gemma)
//   act 2: gpt-oss's clamped SwiGLU (ggml's swiglu_oai, alpha 1.702, limit 7): the gate clamped
//          above at 7, the up value to [-7, 7], out = g * sigmoid(1.702 g) * (u + 1)
//   act 3: the quick GELU g * sigmoid(1.702 g) (ggml's gelu_quick: Gemma 4's vision tower)

float gelu_tanh(float x) {
  const float k = 0.7978845608028654;  // sqrt(2 / pi)
  const float u = clamp(k * x * (1.0 + 0.044715 * x * x), -15.0, 15.0);
  return 0.5 * x * (1.0 + tanh(u));
}

float glu_gate(uint act, float g) {
  return act == 0u ? g / (1.0 + exp(-g)) : act == 3u ? g / (1.0 + exp(-1.702 * g)) : gelu_tanh(g);
}

float glu_value(uint act, float g, float u) {
  if (act == 2u) {
    g = min(g, 7.0);
    u = clamp(u, -7.0, 7.0);
    return g / (1.0 + exp(-1.702 * g)) * (u + 1.0);
  }
  return glu_gate(act, g) * u;
}
