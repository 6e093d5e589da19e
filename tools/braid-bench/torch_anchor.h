// PyTorch as the comparison anchor: runs torch_anchor.py with Debian's /usr/bin/python3 in a child
// process (never in ours: PyTorch is not a dependency of braid, and its thread pools must not share
// our cores while braid is being timed).
#pragma once
#include <string>

namespace braid::bench {

// One PyTorch loop, one sample per call: each call starts `python3 torch_anchor.py <args> --repeat 1`,
// which warms up, times one run and prints `RESULT <key> <value>`. One process per sample lets the
// suites alternate PyTorch's samples with braid's (see tools::measure_interleaved). After the first
// failure (no python3, no torch, a crash) it stops trying: sample() returns NaN and why() says why.
class TorchAnchor {
 public:
  TorchAnchor(std::string args, std::string key) : args_(std::move(args)), key_(std::move(key)) {}

  double sample();
  bool failed() const { return !why_.empty(); }
  const std::string& why() const { return why_; }
  const std::string& version() const { return version_; }  // torch.__version__, once a sample ran

 private:
  std::string args_, key_, version_, why_;
};

}  // namespace braid::bench
