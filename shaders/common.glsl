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
  uint contig;     // bit op: operand op's offset is off[op] + idx (row-major contiguous over shape)
} P;

// Workgroups are laid out as a 2-D grid (the x count is capped at 65535).
uint flat_id() {
  return (gl_WorkGroupID.y * gl_NumWorkGroups.x + gl_WorkGroupID.x) * gl_WorkGroupSize.x + gl_LocalInvocationID.x;
}

// Element offset of operand `op` for the idx-th element (row-major over P.shape). The contiguous case
// skips the per-dimension division and modulo: integer division is not vectorised on a CPU device
// (lavapipe), so the general path costs two scalar divisions per dimension, lane and operand.
uint offset_of(uint op, uint idx) {
  if ((P.contig & (1u << op)) != 0u) return uint(P.off[op]) + idx;
  int o = P.off[op];
  for (int d = int(P.ndim) - 1; d >= 0; --d) {
    uint s = P.shape[d];
    uint c = idx % s;
    idx /= s;
    o += int(c) * P.strides[op * 8 + d];
  }
  return uint(o);
}

// 0.0, as a value the shader compiler cannot see: the runtime leaves extra[31] zero in every call.
// Drivers' compilers fold x * 0.0 to 0 and 0.0 - x to -x even in precise arithmetic (lavapipe does,
// after sinking a subtraction into both sides of a select), which loses NaN and the sign of zero;
// a result built from this zero is computed as written.
float runtime_zero() { return uintBitsToFloat(P.extra[31]); }
