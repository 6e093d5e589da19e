// Shared by every shader: the parameter block at binding 0 (backends/vulkan/params.h has the same
// layout), the flat invocation index over a 2-D grid of workgroups, and strided element offsets.
layout(std430, binding = 0) readonly buffer ParamsBuf {
  uint n;
  uint ndim;
  uint shape[8];
  int off[10];
  int strides[80];
  int iattr[8];
  float fattr[8];
  uint extra[32];
  uint dattr[16];  // fattr[0..7] again as doubles (low, high words), for float64 kernels
} P;

// Workgroups are laid out as a 2-D grid (the x count is capped at 65535).
uint flat_id() {
  return (gl_WorkGroupID.y * gl_NumWorkGroups.x + gl_WorkGroupID.x) * gl_WorkGroupSize.x + gl_LocalInvocationID.x;
}

// Element offset of operand `op` for the idx-th element (row-major over P.shape).
uint offset_of(uint op, uint idx) {
  int o = P.off[op];
  for (int d = int(P.ndim) - 1; d >= 0; --d) {
    uint s = P.shape[d];
    uint c = idx % s;
    idx /= s;
    o += int(c) * P.strides[op * 8 + d];
  }
  return uint(o);
}
