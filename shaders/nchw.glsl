// Output coordinates (n, k, p, q) of the idx-th element of an NCHW-shaped P.shape, and strided access.
uvec4 coords4(uint idx) {
  uint q = idx % P.shape[3];
  idx /= P.shape[3];
  uint p = idx % P.shape[2];
  idx /= P.shape[2];
  uint k = idx % P.shape[1];
  return uvec4(idx / P.shape[1], k, p, q);
}
int at4(uint op, uint a, uint b, uint c, uint d) {
  return P.off[op] + int(a) * P.strides[op * 8] + int(b) * P.strides[op * 8 + 1] + int(c) * P.strides[op * 8 + 2] +
         int(d) * P.strides[op * 8 + 3];
}
