// The safetensors file format (docs/CHECKPOINTS.md): an 8-byte little-endian header length N, N bytes
// of JSON naming each tensor's dtype, shape and byte range, then the tensors' bytes back to back. This
// file knows the format only: the header as data, read and checked, or written; the C functions that
// move tensors in and out are in api.cpp.
#pragma once
#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "braid.h"

namespace braid::checkpoint {

// One tensor of a file: bytes [begin, end) of the data that follows the header.
struct Entry {
  std::string name;
  braid_dtype dtype = BRAID_FLOAT32;
  std::vector<int64_t> shape;
  uint64_t begin = 0, end = 0;
};

struct Header {
  std::vector<Entry> entries;  // in data order
  uint64_t data_start = 0;     // file offset of the data: 8 + N
};

// The largest header accepted, the reference implementation's 100 MB (10^8 bytes): a file claiming
// more is refused before anything is allocated for it.
inline constexpr uint64_t kMaxHeaderBytes = 100'000'000;

// Checks a header read from a file of `file_bytes` bytes: `json` is its N bytes. Throws braid::Error
// (BRAID_ERR_IO, naming what is wrong) for JSON that is not a safetensors header: unknown dtypes, a
// shape whose size is not its byte range, ranges out of the data, overlapping or leaving holes.
Header parse_header(std::span<const char> json, uint64_t file_bytes);

// The header of these entries (their begin/end are computed here, in order), padded with spaces to a
// multiple of 8 bytes; returned with its 8-byte length prefix. Throws BRAID_ERR_INVALID_ARGUMENT for
// names that are empty, repeated, "__metadata__" or not UTF-8.
std::string make_header(std::vector<Entry>& entries);

// The format's dtype names ("F32", "BF16", ...); nullptr for a dtype it has none for.
const char* dtype_tag(braid_dtype dtype) noexcept;

}  // namespace braid::checkpoint
