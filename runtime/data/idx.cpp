// The IDX reader. zlib's gz* functions read gzip and plain files alike, and verify the gzip trailer
// (CRC-32 and length) once the stream is read to its end, which read_idx always does.
#include "data/idx.h"

#include <zlib.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <memory>
#include <sys/stat.h>

#include "core/error.h"

namespace braid::data {
namespace {

struct GzClose {
  void operator()(gzFile f) const noexcept { gzclose(f); }
};
using Gz = std::unique_ptr<gzFile_s, GzClose>;

class Reader {
 public:
  Reader(const std::string& path, const std::string& hint) : path_(path), hint_(hint) {
    struct stat st {};
    if (::stat(path.c_str(), &st) != 0) {
      if (errno == ENOENT || errno == ENOTDIR) fail(BRAID_ERR_NOT_FOUND, path, ": file not found", hint_);
      fail(BRAID_ERR_IO, path, ": cannot read: ", std::strerror(errno), hint_);
    }
    if (!S_ISREG(st.st_mode)) fail(BRAID_ERR_IO, path, ": not a regular file", hint_);
    errno = 0;
    gz_.reset(gzopen(path.c_str(), "rb"));
    if (!gz_) fail(BRAID_ERR_IO, path, ": cannot open: ", errno ? std::strerror(errno) : "out of memory", hint_);
    gzbuffer(gz_.get(), 1u << 18);
  }

  // Reads up to n bytes; returns how many (fewer only at the end of the data). A damaged stream
  // (bad deflate data, truncated gzip, CRC mismatch) throws.
  size_t read(void* dst, size_t n) {
    size_t got = 0;
    while (got < n) {
      const unsigned chunk = static_cast<unsigned>(std::min<size_t>(n - got, 1u << 30));
      const int r = gzread(gz_.get(), static_cast<char*>(dst) + got, chunk);
      if (r < 0) corrupt_stream();
      if (r == 0) break;
      got += static_cast<size_t>(r);
    }
    int err = Z_OK;
    gzerror(gz_.get(), &err);
    if (err != Z_OK) corrupt_stream();
    return got;
  }

  [[noreturn]] void corrupt(const std::string& what) const {
    fail(BRAID_ERR_IO, path_, ": corrupt IDX file: ", what, hint_);
  }

 private:
  [[noreturn]] void corrupt_stream() const {
    int err = Z_OK;
    const char* msg = gzerror(gz_.get(), &err);
    if (err == Z_ERRNO) fail(BRAID_ERR_IO, path_, ": read failed: ", std::strerror(errno), hint_);
    fail(BRAID_ERR_IO, path_, ": corrupt or truncated gzip data (zlib: ", msg && *msg ? msg : "unknown error", ")",
         hint_);
  }

  std::string path_;
  std::string hint_;
  Gz gz_;
};

uint32_t big_endian(const uint8_t* p) {
  return (uint32_t{p[0]} << 24) | (uint32_t{p[1]} << 16) | (uint32_t{p[2]} << 8) | uint32_t{p[3]};
}

}  // namespace

IdxFile read_idx(const std::string& path, const IdxExpect& expect, const std::string& hint) {
  Reader in(path, hint);
  uint8_t magic[4] = {};
  const size_t got = in.read(magic, 4);
  if (got < 4) in.corrupt(cat("truncated: ", got, " bytes, shorter than the 4-byte magic"));
  const uint32_t want_magic = 0x0800u | expect.ndims;
  if (magic[0] != 0 || magic[1] != 0 || magic[2] != 0x08 || magic[3] != expect.ndims) {
    char hex[16];
    std::snprintf(hex, sizeof hex, "0x%08x", big_endian(magic));
    char want[16];
    std::snprintf(want, sizeof want, "0x%08x", want_magic);
    in.corrupt(cat("magic ", hex, ", expected ", want, " (unsigned bytes, ", int{expect.ndims}, " dimension",
                   expect.ndims == 1 ? "" : "s", ")"));
  }

  IdxFile f;
  std::vector<uint8_t> header(4u * expect.ndims);
  if (in.read(header.data(), header.size()) < header.size()) in.corrupt("truncated in the dimensions header");
  uint64_t total = 1;
  for (size_t i = 0; i < expect.ndims; ++i) {
    const uint32_t d = big_endian(&header[4 * i]);
    if (d == 0) in.corrupt(cat("dimension ", i, " is 0"));
    if (i > 0 && i - 1 < expect.inner_dims.size() && expect.inner_dims[i - 1] != 0 && d != expect.inner_dims[i - 1])
      in.corrupt(cat("dimension ", i, " is ", d, ", expected ", expect.inner_dims[i - 1]));
    total *= d;  // at most 3 factors below 2^32 each before the check below trips
    if (total > expect.max_bytes) in.corrupt(cat("the dimensions claim more than ", expect.max_bytes, " bytes"));
    f.dims.push_back(d);
  }

  // Grow with the data actually present, so a damaged header cannot make us allocate what it claims.
  constexpr size_t kChunk = size_t{1} << 22;
  f.data.reserve(static_cast<size_t>(std::min<uint64_t>(total, kChunk)));
  while (f.data.size() < total) {
    const size_t at = f.data.size();
    const size_t want = static_cast<size_t>(std::min<uint64_t>(total - at, kChunk));
    f.data.resize(at + want);
    const size_t n = in.read(f.data.data() + at, want);
    if (n < want)
      in.corrupt(cat("truncated: the header describes ", total, " data bytes but the file holds ", at + n));
  }
  uint8_t extra = 0;
  if (in.read(&extra, 1) != 0) in.corrupt(cat("trailing data after the ", total, " bytes the header describes"));
  return f;
}

}  // namespace braid::data
