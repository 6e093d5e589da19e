// A deterministic mutation fuzz of the IDX reader (parsers are fuzzed: docs/ARCHITECTURE.md#quality).
// Random byte flips, insertions, deletions and truncations of a small valid dataset, gzip and plain:
// opening must never crash or hang, and must either fail cleanly (BRAID_ERR_IO, the file named) or
// succeed with exactly what an independent reading of the mutated bytes says the file holds.
#include <doctest/doctest.h>
#include <zlib.h>

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "data/data_support.h"

namespace {

constexpr uint32_t kCount = 3;

// splitmix64: the test's own deterministic generator (fixed seed: a failure reproduces).
struct Rng {
  uint64_t s;
  uint64_t next() {
    uint64_t z = (s += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
  }
  size_t below(size_t n) { return n ? static_cast<size_t>(next() % n) : 0; }
};

std::vector<uint8_t> mutate(std::vector<uint8_t> b, Rng& rng) {
  const int edits = 1 + static_cast<int>(rng.below(4));
  for (int e = 0; e < edits; ++e) {
    switch (rng.below(5)) {
      case 0:
      case 1:  // flip bits of one byte; the header is hit often on purpose
        if (!b.empty()) {
          const size_t at = rng.below(4) == 0 ? rng.below(std::min<size_t>(b.size(), 16)) : rng.below(b.size());
          b[at] ^= static_cast<uint8_t>(1 + rng.below(255));
        }
        break;
      case 2:  // insert a byte
        b.insert(b.begin() + static_cast<std::ptrdiff_t>(rng.below(b.size() + 1)), static_cast<uint8_t>(rng.next()));
        break;
      case 3:  // delete a byte
        if (!b.empty()) b.erase(b.begin() + static_cast<std::ptrdiff_t>(rng.below(b.size())));
        break;
      default:  // truncate
        b.resize(rng.below(b.size() + 1));
        break;
    }
  }
  return b;
}

// The uncompressed bytes of a file as zlib's one-shot inflate sees them (gzip if it starts with the
// gzip magic, else the bytes themselves); nullopt if the gzip stream is damaged or followed by
// anything.
std::optional<std::vector<uint8_t>> plain_bytes(const std::vector<uint8_t>& file) {
  if (file.size() < 2 || file[0] != 0x1f || file[1] != 0x8b) return file;
  z_stream z{};
  if (inflateInit2(&z, 16 + MAX_WBITS) != Z_OK) return std::nullopt;
  std::vector<uint8_t> out;
  z.next_in = const_cast<Bytef*>(file.data());
  z.avail_in = static_cast<uInt>(file.size());
  int r = Z_OK;
  std::vector<uint8_t> chunk(1 << 16);
  while (r == Z_OK) {
    z.next_out = chunk.data();
    z.avail_out = static_cast<uInt>(chunk.size());
    r = inflate(&z, Z_NO_FLUSH);
    out.insert(out.end(), chunk.data(), chunk.data() + (chunk.size() - z.avail_out));
    if (r == Z_BUF_ERROR && z.avail_in == 0) break;
  }
  const bool ok = r == Z_STREAM_END && z.avail_in == 0;  // one member, nothing after it (as gzip writes)
  inflateEnd(&z);
  if (!ok) return std::nullopt;
  return out;
}

// What a valid IDX file of `ndims` dimensions with `inner` inner sizes holds; nullopt if invalid.
struct Parsed {
  std::vector<uint32_t> dims;
  std::vector<uint8_t> payload;
};
std::optional<Parsed> parse(const std::vector<uint8_t>& b, uint8_t ndims, std::vector<uint32_t> inner) {
  if (b.size() < 4 || b[0] || b[1] || b[2] != 8 || b[3] != ndims) return std::nullopt;
  if (b.size() < 4u + 4u * ndims) return std::nullopt;
  Parsed p;
  uint64_t total = 1;
  for (size_t i = 0; i < ndims; ++i) {
    const uint8_t* q = &b[4 + 4 * i];
    const uint32_t d = (uint32_t{q[0]} << 24) | (uint32_t{q[1]} << 16) | (uint32_t{q[2]} << 8) | q[3];
    if (d == 0 || (i > 0 && d != inner[i - 1])) return std::nullopt;
    total *= d;
    p.dims.push_back(d);
  }
  if (b.size() != 4u + 4u * ndims + total) return std::nullopt;
  p.payload.assign(b.begin() + 4 + 4 * ndims, b.end());
  return p;
}

void fuzz(bool gz, uint64_t seed, int rounds) {
  test::Ctx ctx;
  const dtest::Synth good = dtest::synth(kCount);
  Rng rng{seed};
  int opened = 0, failed = 0;
  for (int round = 0; round < rounds; ++round) {
    CAPTURE(round);
    dtest::TempDir dir;
    dtest::write_split(dir, good, gz);
    const bool images = rng.below(2) == 0;
    const std::string name =
        std::string(images ? "train-images-idx3-ubyte" : "train-labels-idx1-ubyte") + (gz ? ".gz" : "");
    const std::vector<uint8_t> mutated = mutate(dtest::read_file(dir.file(name)), rng);
    dtest::write_plain(dir.file(name), mutated);

    dtest::Dataset ds;
    const braid_status st = dtest::open_dir(ctx.ctx, dir.str(), ds);
    const std::string msg = dtest::last_error();
    INFO(msg);
    // The independent reading: valid if it inflates, parses, agrees with the other file in count,
    // and (labels) every label is a class.
    std::optional<Parsed> p;
    if (auto raw = plain_bytes(mutated)) {
      p = images ? parse(*raw, 3, {28, 28}) : parse(*raw, 1, {});
      if (p && p->dims[0] != kCount) p.reset();
      if (p && !images && std::any_of(p->payload.begin(), p->payload.end(), [](uint8_t l) { return l >= 10; }))
        p.reset();
    }
    if (st != BRAID_OK) {
      ++failed;
      CHECK(st == BRAID_ERR_IO);
      CHECK(msg.find(dir.file(name)) != std::string::npos);
      // zlib's streaming reader may accept what the one-shot check refuses only in trailing
      // garbage after a complete gzip member, which it tolerates; anything else must agree.
      if (!gz) CHECK_FALSE(p.has_value());
      continue;
    }
    ++opened;
    REQUIRE_MESSAGE(p.has_value(), "opened a file that an independent reading calls invalid");
    int64_t n = 0;
    BRAID_CHECK_OK(braid_dataset_size(ds.ds, &n));
    CHECK(n == kCount);
    // The contents are what the mutated file says.
    dtest::Iterator it;
    braid_batch_iterator_options o = BRAID_BATCH_ITERATOR_OPTIONS_INIT;
    o.shuffle = 0;
    o.prefetch = 0;
    BRAID_CHECK_OK(braid_batch_iterator_create(ds.ds, &o, it.out()));
    dtest::HostBatch b = dtest::next_batch(it.it);
    REQUIRE(b.labels.size() == kCount);
    const dtest::Synth& g = good;
    const std::vector<uint8_t> px = images ? p->payload : parse(g.images, 3, {28, 28})->payload;
    const std::vector<uint8_t> lb = images ? parse(g.labels, 1, {})->payload : p->payload;
    bool same = true;
    for (size_t i = 0; i < px.size(); ++i) same = same && b.images[i] == static_cast<float>(px[i]) / 255.0f;
    for (size_t i = 0; i < lb.size(); ++i) same = same && b.labels[i] == lb[i];
    CHECK(same);
  }
  MESSAGE(std::string(gz ? "gzip" : "plain")
          << ": " << opened << " mutants opened consistently, " << failed << " refused cleanly");
  CHECK(failed > 0);
}

}  // namespace

TEST_SUITE("fuzz") {

TEST_CASE("mutated plain IDX files") { fuzz(false, 0x5eed0001, 600); }
TEST_CASE("mutated gzip IDX files") { fuzz(true, 0x5eed0002, 600); }

}  // TEST_SUITE("fuzz")
