#version 450
// Pixtral's 2D rotary position embedding, in place on f32 head rows (engine/vision/rope_2d.h has
// the same angles on the CPU): token t at grid position (pos[2t], pos[2t+1]) = (row, column);
// pair j of each head's first half turns by
//   row * theta^(-2j / half)
// and of its second half by
//   column * theta^(-2 / head_dim) * theta^(-2j / half),   half = head_dim / 2.
// Positions come from a buffer, so the tokens may lie in any order (the Vulkan encoder keeps
// each merger window's patches together). Grid: x = pairs of all heads, y = tokens.
// `halves` (Qwen2.5-VL's vision RoPE, engine/vision/qwen_vl.h): pair (r, r + half) instead, for
// r < head_dim / 4 turning by row * theta^(-2r / half), else by column * theta^(-2(r - head_dim/4)
// / half).
layout(local_size_x_id = 0) in;
layout(std430, binding = 0) buffer X { float x[]; };
layout(std430, binding = 1) readonly buffer Pos { uint pos[]; };
layout(push_constant) uniform Params {
  uint n_tokens;
  uint n_head;
  uint head_dim;
  uint stride;  // elements between tokens' rows
  float theta;
  uint halves;
} p;

void main() {
  const uint pair = gl_GlobalInvocationID.x;
  const uint t = gl_GlobalInvocationID.y;
  const uint half_dim = p.head_dim / 2u, pairs = half_dim / 2u;
  if (pair >= p.n_head * pairs * 2u || t >= p.n_tokens) return;
  const uint h = pair / half_dim, r = pair % half_dim;
  const uint part = r / pairs, j = r % pairs;
  if (p.halves != 0u) {
    const float angle = float(pos[2u * t + part]) * pow(p.theta, -2.0 * float(j) / float(half_dim));
    const uint i = t * p.stride + h * p.head_dim + r;
    const float x0 = x[i], x1 = x[i + half_dim];
    const float c = cos(angle), s = sin(angle);
    x[i] = x0 * c - x1 * s;
    x[i + half_dim] = x0 * s + x1 * c;
    return;
  }
  float freq = pow(p.theta, -2.0 * float(j) / float(half_dim));
  if (part == 1u) freq *= pow(p.theta, -2.0 / float(p.head_dim));
  const float angle = float(pos[2u * t + part]) * freq;
  const uint i = t * p.stride + h * p.head_dim + part * half_dim + 2u * j;
  const float x0 = x[i], x1 = x[i + 1u];
  const float c = cos(angle), s = sin(angle);
  x[i] = x0 * c - x1 * s;
  x[i + 1u] = x0 * s + x1 * c;
}
