// The rotation angle of RoPE pair i (ggml's rope_ext without YaRN), shared by rope.comp and the
// matvec that rotates Q and K in its epilogue so both compute it with the same f32 expression:
//   theta = pos * freq_scale * freq_base^(-2i / n_dims)   (divided by freq_factor[i] if given)

float rope_angle(float pos, uint i, uint n_dims, float freq_base, float freq_scale) {
  return pos * freq_scale * pow(freq_base, -2.0 * float(i) / float(n_dims));
}
