//===- Random.h - Deterministic per-request random numbers ------*- C++ -*-===//

#ifndef FDC_RUNTIME_RANDOM_H
#define FDC_RUNTIME_RANDOM_H

#include <cstdint>

namespace fdc::runtime {

/// splitmix64: expands a seed into well-mixed 64-bit words.
inline uint64_t splitMix64(uint64_t &state) {
  uint64_t z = (state += 0x9e3779b97f4a7c15ULL);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
  return z ^ (z >> 31);
}

/// xoshiro256** seeded through splitmix64; the same seed always gives the
/// same sequence.
class Xoshiro256 {
public:
  explicit Xoshiro256(uint64_t seed) {
    uint64_t sm = seed;
    for (uint64_t &word : state)
      word = splitMix64(sm);
  }

  uint64_t next() {
    uint64_t result = rotl(state[1] * 5, 7) * 9;
    uint64_t t = state[1] << 17;
    state[2] ^= state[0];
    state[3] ^= state[1];
    state[1] ^= state[2];
    state[0] ^= state[3];
    state[2] ^= t;
    state[3] = rotl(state[3], 45);
    return result;
  }

  /// Uniform in [0, 1), 24 bits of precision.
  float nextUniform() {
    return static_cast<float>(next() >> 40) * (1.0f / 16777216.0f);
  }

private:
  static uint64_t rotl(uint64_t x, int k) { return (x << k) | (x >> (64 - k)); }
  uint64_t state[4];
};

} // namespace fdc::runtime

#endif // FDC_RUNTIME_RANDOM_H
