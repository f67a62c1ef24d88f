#version 450
// The (token, rank) pairs of a mixture-of-experts step grouped by expert, on the device (no host
// round trip), for the grouped expert GEMMs (moe_gemm_rows.glsl). One workgroup:
//   groups[e]                        pairs that selected expert e (e < n_expert; 0 beyond)
//   groups[MAX + e]                  where e's pairs start in the list (exclusive prefix sum)
//   groups[2 * MAX + offset(e) + i]  e's i-th pair id q = t * n_used + k, ascending
// with MAX = 512 (kMoeMaxExperts). Within an expert the pairs keep their order (token order, as a
// token selects an expert at most once), whatever the scheduling, so the products that read the
// list are deterministic. The ids are staged through shared memory a chunk at a time; each
// invocation e < n_expert appends its expert's pairs of the chunk in order.

layout(local_size_x_id = 0) in;  // at least n_expert (512)

layout(std430, binding = 0) readonly buffer Ids { uint ids[]; };
layout(std430, binding = 1) writeonly buffer Groups { uint groups[]; };

layout(push_constant) uniform Params {
  uint n_expert;
  uint n_pairs;
} p;

const uint MAX_EXPERTS = 512u;
const uint CHUNK = 2048u;

shared uint counts[MAX_EXPERTS];
shared uint chunk[CHUNK];

void main() {
  const uint tid = gl_LocalInvocationID.x;
  const uint threads = gl_WorkGroupSize.x;
  for (uint e = tid; e < MAX_EXPERTS; e += threads) counts[e] = 0u;
  barrier();
  for (uint q = tid; q < p.n_pairs; q += threads) atomicAdd(counts[min(ids[q], MAX_EXPERTS - 1u)], 1u);
  barrier();
  // Counts and offsets out; invocation e keeps its running position.
  uint next = 0u;
  if (tid < MAX_EXPERTS) {
    for (uint e = 0u; e < tid; ++e) next += counts[e];
    groups[tid] = tid < p.n_expert ? counts[tid] : 0u;
    groups[MAX_EXPERTS + tid] = next;
  }
  next += 2u * MAX_EXPERTS;
  for (uint c0 = 0u; c0 < p.n_pairs; c0 += CHUNK) {
    const uint n = min(CHUNK, p.n_pairs - c0);
    barrier();  // the last chunk fully read
    for (uint i = tid; i < n; i += threads) chunk[i] = ids[c0 + i];
    barrier();
    if (tid < p.n_expert) {
      for (uint i = 0u; i < n; ++i) {
        if (chunk[i] == tid) groups[next++] = c0 + i;
      }
    }
  }
}
