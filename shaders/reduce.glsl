// Workgroup-wide reductions for one value per invocation. With subgroup arithmetic (the default)
// each subgroup reduces in registers and one shared-memory step combines the subgroups; define
// REDUCE_SHARED for a plain shared-memory tree on devices without it. Every invocation of the
// workgroup must call these (they contain barriers); all receive the result.
// Requires: a workgroup size (gl_WorkGroupSize.x) that is a power of two, at most 1024.

#ifndef REDUCE_SHARED
#extension GL_KHR_shader_subgroup_basic : enable
#extension GL_KHR_shader_subgroup_arithmetic : enable
shared float reduce_partials[64];  // one per subgroup (subgroups are at least 16 wide on 1024)

float workgroup_sum(float v) {
  v = subgroupAdd(v);
  barrier();  // reduce_partials may still be read by a previous call
  if (subgroupElect()) reduce_partials[gl_SubgroupID] = v;
  barrier();
  float total = 0.0;
  for (uint i = 0u; i < gl_NumSubgroups; ++i) total += reduce_partials[i];
  return total;
}

float workgroup_max(float v) {
  v = subgroupMax(v);
  barrier();
  if (subgroupElect()) reduce_partials[gl_SubgroupID] = v;
  barrier();
  float m = reduce_partials[0];
  for (uint i = 1u; i < gl_NumSubgroups; ++i) m = max(m, reduce_partials[i]);
  return m;
}
#else
shared float reduce_tree[1024];

float reduce_tree_op(float v, bool is_max) {
  const uint n = gl_WorkGroupSize.x;
  const uint t = gl_LocalInvocationIndex;
  barrier();
  reduce_tree[t] = v;
  barrier();
  for (uint s = n / 2u; s > 0u; s >>= 1) {
    if (t < s) {
      reduce_tree[t] = is_max ? max(reduce_tree[t], reduce_tree[t + s])
                              : reduce_tree[t] + reduce_tree[t + s];
    }
    barrier();
  }
  return reduce_tree[0];
}
float workgroup_sum(float v) { return reduce_tree_op(v, false); }
float workgroup_max(float v) { return reduce_tree_op(v, true); }
#endif
