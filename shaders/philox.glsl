// Philox-4x32-10 as abi/braid_backend.h specifies: key (seed lo, seed hi), counter (j lo, j hi,
// draw lo, draw hi). Bit-exact with every other backend.
uvec4 philox(uvec2 key, uvec2 j, uvec2 draw) {
  uvec4 c = uvec4(j.x, j.y, draw.x, draw.y);
  uint k0 = key.x, k1 = key.y;
  for (int round = 0; round < 10; ++round) {
    if (round > 0) {
      k0 += 0x9E3779B9u;
      k1 += 0xBB67AE85u;
    }
    uint hi0, lo0, hi1, lo1;
    umulExtended(0xD2511F53u, c.x, hi0, lo0);
    umulExtended(0xCD9E8D57u, c.z, hi1, lo1);
    c = uvec4(hi1 ^ c.y ^ k0, lo1, hi0 ^ c.w ^ k1, lo0);
  }
  return c;
}
// Word i % 4 of block i / 4 (the element's uniform word). extra[0..1] = seed, extra[2..3] = draw.
uint philox_word(uint i) {
  uvec4 w = philox(uvec2(P.extra[0], P.extra[1]), uvec2(i / 4u, 0u), uvec2(P.extra[2], P.extra[3]));
  uint k = i % 4u;
  return k == 0u ? w.x : k == 1u ? w.y : k == 2u ? w.z : w.w;
}
