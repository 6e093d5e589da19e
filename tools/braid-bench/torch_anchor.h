// PyTorch as the comparison anchor: runs torch_anchor.py with Debian's /usr/bin/python3 in a child
// process (never in ours: PyTorch is not a dependency of braid, and its thread pools must not share
// our cores while braid is being timed).
#pragma once
#include <map>
#include <optional>
#include <string>
#include <string_view>

namespace braid::bench {

struct TorchResult {
  std::string version;                  // "1.13.1"
  std::map<std::string, double> values;  // the script's RESULT lines
};

// Runs `python3 torch_anchor.py <args>`. Returns nullopt, with *why set, when python3 or torch is
// missing or the script fails; the caller skips the comparison with a note.
std::optional<TorchResult> run_torch_anchor(std::string_view args, std::string* why);

}  // namespace braid::bench
