// IDX files (the MNIST format): a 4-byte magic (0, 0, element type, number of dimensions), the
// dimensions as big-endian uint32, then the elements row-major. Read from gzip or plain files.
#pragma once
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace braid::data {

struct IdxFile {
  std::vector<uint32_t> dims;
  std::vector<uint8_t> data;  // product(dims) unsigned bytes
};

// What the caller expects of the file; anything else is reported as corrupt.
struct IdxExpect {
  uint8_t ndims = 1;
  // Per dimension after the first: the required size (0 accepts any size >= 1).
  std::vector<uint32_t> inner_dims;
  uint64_t max_bytes = uint64_t{1} << 31;  // the payload size the header may claim
};

// An IDX file read in two steps, so a caller can check the header against what it knows (another
// file's count) before any data is decompressed or allocated. The constructor reads the magic and the
// dimensions and checks them against `expect` and against the length the file states before it is
// read (a plain file's size, the gzip trailer's ISIZE): a header that disagrees with the stream (a
// gzip bomb claiming little, a truncated file) is refused without inflating it. read_data() then
// reads exactly the described bytes and refuses anything after them. Errors as read_idx's.
class IdxReader {
 public:
  IdxReader(const std::string& path, const IdxExpect& expect, const std::string& hint);
  ~IdxReader();
  IdxReader(const IdxReader&) = delete;
  IdxReader& operator=(const IdxReader&) = delete;
  const std::vector<uint32_t>& dims() const { return dims_; }
  std::vector<uint8_t> read_data();

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
  std::vector<uint32_t> dims_;
};

// Reads and validates an unsigned-byte IDX file, gzip-compressed (one gzip member, nothing after it)
// or plain (told apart by the gzip magic). Throws braid::Error: BRAID_ERR_NOT_FOUND when the file does not exist,
// BRAID_ERR_IO when it cannot be read or is corrupt (bad magic, wrong dimensions, truncated or
// trailing data, a damaged gzip stream). `hint` is appended to every message (what to install).
// Memory grows with the bytes actually read, never with what a damaged header claims.
IdxFile read_idx(const std::string& path, const IdxExpect& expect, const std::string& hint);

}  // namespace braid::data
