// --amp for the samples: automatic mixed precision (docs/AMP.md) in bfloat16, or off. float16 needs loss
// scaling, which these samples leave to the Python ones (braid.amp).
#pragma once
#include <cstring>

#include "braid.h"
#include "cli.h"

namespace samples {

// The autocast dtype an --amp value names: bf16 (bfloat16), or off (float32).
inline braid_dtype parse_amp(const cli_parser& cli, const char* value) {
  if (std::strcmp(value, "bf16") == 0 || std::strcmp(value, "bfloat16") == 0) return BRAID_BFLOAT16;
  if (std::strcmp(value, "off") == 0 || std::strcmp(value, "f32") == 0) return BRAID_FLOAT32;
  cli_fail(&cli, "--amp takes bf16 or off, not '%s' (float16 needs loss scaling: samples/python)", value);
}

inline const char* amp_name(braid_dtype dtype) { return dtype == BRAID_BFLOAT16 ? "bf16" : "off"; }

}  // namespace samples
