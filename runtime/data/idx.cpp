// The IDX reader: plain files, or one gzip member inflated with zlib (which verifies the trailer's
// CRC-32 and length once the stream is read to its end, which read_idx always does).
#include "data/idx.h"

#include <zlib.h>

#include <sys/stat.h>
#include <unistd.h>
#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <memory>
#include <optional>

#include "core/error.h"

namespace braid::data {
// Named, not anonymous: IdxReader::Impl, a class with linkage, holds a Reader.
namespace idx_file {

struct FileClose {
  void operator()(std::FILE* f) const noexcept { std::fclose(f); }
};
using File = std::unique_ptr<std::FILE, FileClose>;

// The bytes of a plain or gzip file. gzip goes through zlib's inflate directly rather than gzread:
// gzread ignores whatever follows the gzip stream (so a file with trailing garbage was accepted),
// and it does not let us look at the trailer before decompressing. Exactly one gzip member is
// accepted, as gzip(1) writes it; any byte after its trailer is an error.
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
    file_.reset(std::fopen(path.c_str(), "rb"));
    if (!file_) fail(BRAID_ERR_IO, path, ": cannot open: ", errno ? std::strerror(errno) : "out of memory", hint_);
    struct stat fst {};
    if (::fstat(::fileno(file_.get()), &fst) != 0)
      fail(BRAID_ERR_IO, path, ": cannot read: ", std::strerror(errno), hint_);
    size_ = static_cast<uint64_t>(fst.st_size);
    in_.resize(size_t{1} << 18);
    refill();
    gzip_ = avail_ >= 2 && in_[0] == 0x1f && in_[1] == 0x8b;
    if (gzip_) {
      // A gzip member ends with CRC-32 and ISIZE (the uncompressed length mod 2^32, little-endian):
      // read now, so the length can be checked against the IDX header before anything is inflated.
      if (size_ >= 18) {
        uint8_t t[4] = {};
        if (::pread(::fileno(file_.get()), t, 4, static_cast<off_t>(size_ - 4)) == 4)
          isize_ = uint32_t{t[0]} | uint32_t{t[1]} << 8 | uint32_t{t[2]} << 16 | uint32_t{t[3]} << 24;
      }
      if (inflateInit2(&z_, 16 + MAX_WBITS) != Z_OK) fail(BRAID_ERR_OUT_OF_MEMORY, path_, ": cannot start zlib");
      z_live_ = true;
    }
  }
  ~Reader() {
    if (z_live_) inflateEnd(&z_);
  }
  Reader(const Reader&) = delete;
  Reader& operator=(const Reader&) = delete;

  // The whole content's length as the file itself tells it before it is read: the file size (plain),
  // or the gzip trailer's ISIZE (mod 2^32; nullopt when the file is too short to have one).
  std::optional<uint64_t> stated_length() const {
    if (!gzip_) return size_;
    if (!isize_) return std::nullopt;
    return *isize_;
  }
  bool gzip() const { return gzip_; }

  // Reads up to n bytes; returns how many (fewer only at the end of the data). A damaged stream
  // (bad deflate data, truncated gzip, CRC or length mismatch, bytes after the gzip trailer) throws.
  size_t read(void* dst, size_t n) {
    auto* out = static_cast<uint8_t*>(dst);
    size_t got = 0;
    while (got < n) {
      if (!gzip_) {
        if (avail_ == 0 && !refill()) break;
        const size_t k = std::min(n - got, avail_);
        std::memcpy(out + got, in_.data() + pos_, k);
        pos_ += k;
        avail_ -= k;
        got += k;
        continue;
      }
      if (stream_end_) break;
      if (avail_ == 0 && !refill())
        fail(BRAID_ERR_IO, path_, ": corrupt or truncated gzip data (the file ends inside the gzip stream)", hint_);
      z_.next_in = in_.data() + pos_;
      z_.avail_in = static_cast<uInt>(avail_);
      z_.next_out = out + got;
      z_.avail_out = static_cast<uInt>(std::min<size_t>(n - got, 1u << 30));
      const uInt out_before = z_.avail_out;
      const int r = inflate(&z_, Z_NO_FLUSH);
      got += out_before - z_.avail_out;
      pos_ += avail_ - z_.avail_in;
      avail_ = z_.avail_in;
      if (r == Z_STREAM_END) {
        stream_end_ = true;
        // total_in counts every byte of the member, header and trailer included.
        if (z_.total_in != size_)
          fail(BRAID_ERR_IO, path_, ": corrupt gzip file: ", size_ - z_.total_in,
               " bytes of trailing data after the gzip stream", hint_);
      } else if (r != Z_OK && !(r == Z_BUF_ERROR && avail_ == 0)) {
        fail(BRAID_ERR_IO, path_, ": corrupt or truncated gzip data (zlib: ", z_.msg ? z_.msg : zError(r), ")", hint_);
      }
    }
    return got;
  }

  [[noreturn]] void corrupt(const std::string& what) const {
    fail(BRAID_ERR_IO, path_, ": corrupt IDX file: ", what, hint_);
  }

 private:
  // More raw bytes into in_; false at the end of the file.
  bool refill() {
    pos_ = 0;
    avail_ = std::fread(in_.data(), 1, in_.size(), file_.get());
    if (avail_ == 0 && std::ferror(file_.get()))
      fail(BRAID_ERR_IO, path_, ": read failed: ", std::strerror(errno), hint_);
    return avail_ > 0;
  }

  std::string path_;
  std::string hint_;
  File file_;
  uint64_t size_ = 0;
  std::vector<uint8_t> in_;
  size_t pos_ = 0, avail_ = 0;
  bool gzip_ = false;
  std::optional<uint32_t> isize_;
  z_stream z_{};
  bool z_live_ = false;
  bool stream_end_ = false;
};

uint32_t big_endian(const uint8_t* p) {
  return (uint32_t{p[0]} << 24) | (uint32_t{p[1]} << 16) | (uint32_t{p[2]} << 8) | uint32_t{p[3]};
}

}  // namespace idx_file

using idx_file::big_endian;
using idx_file::Reader;

struct IdxReader::Impl {
  Impl(const std::string& path, const std::string& hint) : in(path, hint) {}
  Reader in;
  uint64_t total = 0;
};

IdxReader::IdxReader(const std::string& path, const IdxExpect& expect, const std::string& hint)
    : impl_(std::make_unique<Impl>(path, hint)) {
  Reader& in = impl_->in;
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
    dims_.push_back(d);
  }
  impl_->total = total;

  // Before inflating anything: the length the file states (its size, or the gzip trailer's ISIZE)
  // must be the header's plus the data it describes. A gzip bomb whose header claims little (or much
  // less than the stream holds) is refused here, without decompressing or allocating it.
  const uint64_t header_bytes = 4 + 4u * expect.ndims, whole = header_bytes + total;
  if (const std::optional<uint64_t> stated = in.stated_length()) {
    const uint64_t want = in.gzip() ? whole & 0xffffffffu : whole;  // ISIZE is mod 2^32
    // The last 4 bytes of a .gz are its length only if the file is whole: a cut one ends in arbitrary
    // data, so the message cannot say which side is wrong.
    if (in.gzip() && *stated != want)
      in.corrupt(cat(*stated < want ? "truncated or damaged" : "trailing data, or a damaged file",
                     ": the header describes ", total, " data bytes (", whole,
                     " in all), but the gzip trailer's length field (the file's last 4 bytes, its length if the "
                     "file is whole) says ",
                     *stated));
    const char* what = "the file holds ";
    if (*stated < want)
      in.corrupt(cat("truncated: the header describes ", total, " data bytes but ", what, *stated, " bytes in all (",
                     whole, " expected)"));
    if (*stated > want)
      in.corrupt(cat("trailing data after the ", total, " bytes the header describes: ", what, *stated,
                     " bytes in all (", whole, " expected)"));
  }
}

IdxReader::~IdxReader() = default;

std::vector<uint8_t> IdxReader::read_data() {
  Reader& in = impl_->in;
  const uint64_t total = impl_->total;
  std::vector<uint8_t> data;
  // Grow with the data actually present, so a damaged header cannot make us allocate what it claims.
  constexpr size_t kChunk = size_t{1} << 22;
  data.reserve(static_cast<size_t>(std::min<uint64_t>(total, kChunk)));
  while (data.size() < total) {
    const size_t at = data.size();
    const size_t want = static_cast<size_t>(std::min<uint64_t>(total - at, kChunk));
    data.resize(at + want);
    const size_t n = in.read(data.data() + at, want);
    if (n < want) in.corrupt(cat("truncated: the header describes ", total, " data bytes but the file holds ", at + n));
  }
  uint8_t extra = 0;
  if (in.read(&extra, 1) != 0) in.corrupt(cat("trailing data after the ", total, " bytes the header describes"));
  return data;
}

IdxFile read_idx(const std::string& path, const IdxExpect& expect, const std::string& hint) {
  IdxReader r(path, expect, hint);
  IdxFile f;
  f.dims = r.dims();
  f.data = r.read_data();
  return f;
}

}  // namespace braid::data
