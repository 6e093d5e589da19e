// Checkpoints (docs/CHECKPOINTS.md): braid_save_safetensors, braid_safetensors_names and
// braid_load_safetensors: round trips of every dtype, the format's bytes as its specification lays
// them out, a file written by hand the way other libraries write it, and damaged files.
#include <sys/stat.h>
#include <unistd.h>

#include <cstring>
#include <filesystem>
#include <string>
#include <vector>

#include "data/data_support.h"

namespace {

using dtest::TempDir;

std::vector<std::string> names_of(const std::string& path) {
  size_t size = 0;
  REQUIRE(braid_safetensors_names(path.c_str(), nullptr, 0, &size) == BRAID_OK);
  std::string buf(size, 'x');
  REQUIRE(braid_safetensors_names(path.c_str(), buf.data(), buf.size(), &size) == BRAID_OK);
  std::vector<std::string> out;
  for (size_t at = 0; at < buf.size(); at = buf.find('\0', at) + 1) out.emplace_back(buf.c_str() + at);
  return out;
}

std::vector<uint8_t> bytes_of(braid_tensor t, size_t n) {
  std::vector<uint8_t> v(n);
  BRAID_CHECK_OK(braid_tensor_to_host(t, v.data(), v.size()));
  return v;
}

// A file: the 8-byte little-endian length, the header text, the data.
void write_safetensors(const std::string& path, const std::string& json, const std::vector<uint8_t>& data) {
  std::vector<uint8_t> f(8);
  for (int i = 0; i < 8; ++i) f[size_t(i)] = static_cast<uint8_t>(uint64_t(json.size()) >> (8 * i));
  f.insert(f.end(), json.begin(), json.end());
  f.insert(f.end(), data.begin(), data.end());
  dtest::write_plain(path, f);
}

braid_status load_one(braid_context ctx, const std::string& path, const char* name, braid_tensor* out) {
  return braid_load_safetensors(ctx, 0, path.c_str(), 1, &name, out);
}

}  // namespace

TEST_CASE("checkpoints: every dtype round-trips through a safetensors file, bit for bit") {
  test::Ctx c(1);
  TempDir dir;
  const std::string path = dir.file("model.safetensors");
  struct Case {
    const char* name;
    braid_dtype dtype;
    std::vector<int64_t> shape;
    size_t elem;
  };
  const std::vector<Case> cases = {{"w.f32", BRAID_FLOAT32, {2, 3}, 4}, {"w.f64", BRAID_FLOAT64, {3}, 8},
                                   {"i32", BRAID_INT32, {1, 2, 2}, 4},  {"i64", BRAID_INT64, {2}, 8},
                                   {"u8", BRAID_UINT8, {5}, 1},         {"h", BRAID_FLOAT16, {4}, 2},
                                   {"bf", BRAID_BFLOAT16, {2, 2}, 2},   {"scalar", BRAID_FLOAT32, {}, 4},
                                   {"empty", BRAID_FLOAT32, {0, 7}, 4}, {"ünïcode ✓", BRAID_UINT8, {1}, 1}};
  std::vector<test::T> ts;
  std::vector<std::vector<uint8_t>> want;
  std::vector<const char*> names;
  std::vector<braid_tensor> handles;
  for (const Case& k : cases) {
    int64_t n = 1;
    for (int64_t d : k.shape) n *= d;
    std::vector<uint8_t> raw(size_t(n) * k.elem);
    for (size_t i = 0; i < raw.size(); ++i) raw[i] = static_cast<uint8_t>(i * 37 + 11);
    test::T t;
    uint8_t none = 0;  // an empty tensor's data pointer: any non-NULL one
    BRAID_CHECK_OK(braid_tensor_from_host(c.ctx, 0, k.dtype, int32_t(k.shape.size()), k.shape.data(),
                                          raw.empty() ? &none : raw.data(), raw.size(), t.out()));
    handles.push_back(t.t);
    ts.push_back(std::move(t));
    want.push_back(raw);
    names.push_back(k.name);
  }
  BRAID_CHECK_OK(braid_save_safetensors(path.c_str(), int32_t(names.size()), names.data(), handles.data()));
  CHECK(names_of(path) == std::vector<std::string>(names.begin(), names.end()));
  std::vector<braid_tensor> loaded(names.size(), nullptr);
  BRAID_CHECK_OK(braid_load_safetensors(c.ctx, 0, path.c_str(), int32_t(names.size()), names.data(), loaded.data()));
  for (size_t i = 0; i < cases.size(); ++i) {
    CAPTURE(cases[i].name);
    braid_dtype dt;
    int32_t ndim = -1;
    int64_t shape[BRAID_MAX_DIMS];
    BRAID_CHECK_OK(braid_tensor_dtype(loaded[i], &dt));
    BRAID_CHECK_OK(braid_tensor_ndim(loaded[i], &ndim));
    BRAID_CHECK_OK(braid_tensor_shape(loaded[i], shape));
    CHECK(dt == cases[i].dtype);
    CHECK(std::vector<int64_t>(shape, shape + ndim) == cases[i].shape);
    if (!want[i].empty()) CHECK(bytes_of(loaded[i], want[i].size()) == want[i]);
    braid_tensor_release(loaded[i]);
  }
  // Saving again replaces the file (atomically: no temporary is left beside it).
  BRAID_CHECK_OK(braid_save_safetensors(path.c_str(), 1, names.data(), handles.data()));
  CHECK(names_of(path) == std::vector<std::string>{"w.f32"});
  int files = 0;
  for (const auto& e : std::filesystem::directory_iterator(dir.path)) files += e.is_regular_file() ? 1 : 0;
  CHECK(files == 1);
}

TEST_CASE("checkpoints: the bytes are the format's (length, JSON header padded to 8, data)") {
  test::Ctx c(1);
  TempDir dir;
  const std::string path = dir.file("one.safetensors");
  const float v[2] = {1.0f, -2.0f};
  const int64_t shape[1] = {2};
  test::T t;
  BRAID_CHECK_OK(braid_tensor_from_host(c.ctx, 0, BRAID_FLOAT32, 1, shape, v, sizeof v, t.out()));
  const char* name = "x";
  BRAID_CHECK_OK(braid_save_safetensors(path.c_str(), 1, &name, &t.t));
  const std::vector<uint8_t> f = dtest::read_file(path);
  REQUIRE(f.size() >= 8);
  uint64_t n = 0;
  for (int i = 7; i >= 0; --i) n = (n << 8) | f[size_t(i)];
  CHECK(n % 8 == 0);
  REQUIRE(f.size() == 8 + n + sizeof v);
  const std::string header(f.begin() + 8, f.begin() + 8 + long(n));
  CHECK(header.find("\"x\":{\"data_offsets\":[0,8],\"dtype\":\"F32\",\"shape\":[2]}") != std::string::npos);
  CHECK(std::memcmp(f.data() + 8 + n, v, sizeof v) == 0);  // little-endian float32, as the format says
}

TEST_CASE("checkpoints: a file written the way other libraries write it loads") {
  test::Ctx c(1);
  TempDir dir;
  const std::string path = dir.file("other.safetensors");
  // Keys in another order, metadata, no padding, a bfloat16 and an int64 tensor.
  std::vector<uint8_t> data = {0x80, 0x3f, 0x00, 0xc0};  // bfloat16 1.0, -2.0
  for (int64_t x : {int64_t{-3}, int64_t{1} << 40})
    for (int i = 0; i < 8; ++i) data.push_back(static_cast<uint8_t>(uint64_t(x) >> (8 * i)));
  write_safetensors(path,
                    R"({"__metadata__":{"format":"pt"},"b":{"dtype":"I64","shape":[2],"data_offsets":[4,20]},)"
                    R"("a":{"shape":[2],"data_offsets":[0,4],"dtype":"BF16"}})",
                    data);
  CHECK(names_of(path) == std::vector<std::string>{"a", "b"});  // in data order
  braid_tensor b = nullptr, a = nullptr;
  BRAID_CHECK_OK(load_one(c.ctx, path, "b", &b));
  BRAID_CHECK_OK(load_one(c.ctx, path, "a", &a));
  int64_t got[2];
  BRAID_CHECK_OK(braid_tensor_to_host(b, got, sizeof got));
  CHECK(got[0] == -3);
  CHECK(got[1] == int64_t{1} << 40);
  test::T f32;
  BRAID_CHECK_OK(braid_cast(a, BRAID_FLOAT32, f32.out()));
  float fs[2];
  BRAID_CHECK_OK(braid_tensor_to_host(f32.t, fs, sizeof fs));
  CHECK(fs[0] == 1.0f);
  CHECK(fs[1] == -2.0f);
  braid_tensor_release(a);
  braid_tensor_release(b);
}

TEST_CASE("checkpoints: damaged files and bad arguments are refused with a reason") {
  test::Ctx c(1);
  TempDir dir;
  const std::string path = dir.file("bad.safetensors");
  const std::vector<uint8_t> four(4, 0);
  auto expect_io = [&](const std::string& json, const std::vector<uint8_t>& data, const char* mentions) {
    write_safetensors(path, json, data);
    braid_tensor t = reinterpret_cast<braid_tensor>(&t);
    const braid_status st = load_one(c.ctx, path, "a", &t);
    const std::string msg = braid_last_error();
    INFO(json << " -> " << msg);
    CHECK(st == BRAID_ERR_IO);
    CHECK(t == nullptr);
    CHECK(msg.find(mentions) != std::string::npos);
  };
  expect_io("{", four, "not JSON");
  expect_io("[1]", four, "not a JSON object");
  expect_io(R"({"a":{"dtype":"F32","shape":[1]}})", four, "lacks");
  expect_io(R"({"a":{"dtype":"Q4","shape":[1],"data_offsets":[0,4]}})", four, "dtype");
  expect_io(R"({"a":{"dtype":"F32","shape":[2],"data_offsets":[0,4]}})", four, "need 8");
  expect_io(R"({"a":{"dtype":"F32","shape":[-1],"data_offsets":[0,4]}})", four, "non-negative");
  expect_io(R"({"a":{"dtype":"F32","shape":[1],"data_offsets":[0,8]}})", four, "not inside");
  expect_io(R"({"a":{"dtype":"F32","shape":[1],"data_offsets":[4,0]}})", four, "not inside");
  expect_io(R"({"a":{"dtype":"U8","shape":[2],"data_offsets":[0,2]}})", four, "belong to none");  // a hole at the end
  expect_io(
      R"({"a":{"dtype":"U8","shape":[2],"data_offsets":[0,2]},"b":{"dtype":"U8","shape":[2],"data_offsets":[1,3]}})",
      four, "without gaps or overlap");
  expect_io(R"({"a":{"dtype":"F32","shape":[4294967296,4294967296,4294967296],"data_offsets":[0,4]}})", four,
            "larger than any file");
  expect_io(R"({"__metadata__":{"k":1},"a":{"dtype":"F32","shape":[1],"data_offsets":[0,4]}})", four, "__metadata__");
  expect_io(R"({"a\u0000b":{"dtype":"F32","shape":[1],"data_offsets":[0,4]}})", four, "NUL");
  // A header length past the file, or past the format's 100 MB limit, is refused before allocating it.
  std::vector<uint8_t> huge(16, 0);
  huge[5] = 0x10;  // 2^44 bytes of header
  dtest::write_plain(path, huge);
  braid_tensor t = nullptr;
  CHECK(load_one(c.ctx, path, "a", &t) == BRAID_ERR_IO);
  dtest::write_plain(path, std::vector<uint8_t>(5, 0));
  CHECK(load_one(c.ctx, path, "a", &t) == BRAID_ERR_IO);
  // The limit is the reference implementation's 10^8 bytes, not 100 MiB, and the message says so.
  std::vector<uint8_t> over(8, 0);
  for (int i = 0; i < 8; ++i) over[size_t(i)] = static_cast<uint8_t>(uint64_t{100'000'001} >> (8 * i));
  dtest::write_plain(path, over);
  CHECK(load_one(c.ctx, path, "a", &t) == BRAID_ERR_IO);
  CHECK(std::string(braid_last_error()).find("more than the format's 100000000") != std::string::npos);
  // A valid file without the name; a missing file; a directory.
  write_safetensors(path, R"({"a":{"dtype":"U8","shape":[4],"data_offsets":[0,4]}})", four);
  CHECK(load_one(c.ctx, path, "zz", &t) == BRAID_ERR_NOT_FOUND);
  CHECK(std::string(braid_last_error()).find("\"zz\"") != std::string::npos);
  CHECK(load_one(c.ctx, dir.file("absent"), "a", &t) == BRAID_ERR_NOT_FOUND);
  CHECK(load_one(c.ctx, dir.str(), "a", &t) == BRAID_ERR_IO);
  // All or nothing: the first name loads, the second does not; neither out is set.
  const char* two[2] = {"a", "zz"};
  braid_tensor outs[2] = {nullptr, nullptr};
  CHECK(braid_load_safetensors(c.ctx, 0, path.c_str(), 2, two, outs) == BRAID_ERR_NOT_FOUND);
  CHECK(outs[0] == nullptr);
  CHECK(outs[1] == nullptr);
  size_t size = 0;
  char small[1];
  CHECK(braid_safetensors_names(path.c_str(), small, sizeof small, &size) == BRAID_ERR_INVALID_ARGUMENT);
  CHECK(size == 2);
  CHECK(braid_safetensors_names(path.c_str(), nullptr, 0, nullptr) == BRAID_ERR_INVALID_ARGUMENT);

  // Saving: repeated, empty and reserved names; NULLs; a path that is not a regular file.
  test::T x = test::full(c.ctx, 0, BRAID_FLOAT32, {2}, 1.0);
  const braid_tensor xs[2] = {x.t, x.t};
  const char* dup[2] = {"w", "w"};
  CHECK(braid_save_safetensors(path.c_str(), 2, dup, xs) == BRAID_ERR_INVALID_ARGUMENT);
  const char* empty = "";
  CHECK(braid_save_safetensors(path.c_str(), 1, &empty, xs) == BRAID_ERR_INVALID_ARGUMENT);
  const char* meta = "__metadata__";
  CHECK(braid_save_safetensors(path.c_str(), 1, &meta, xs) == BRAID_ERR_INVALID_ARGUMENT);
  const char* bad_utf8 = "\xff\xfe";
  CHECK(braid_save_safetensors(path.c_str(), 1, &bad_utf8, xs) == BRAID_ERR_INVALID_ARGUMENT);
  CHECK(braid_save_safetensors(nullptr, 1, dup, xs) == BRAID_ERR_INVALID_ARGUMENT);
  CHECK(braid_save_safetensors(path.c_str(), 1, nullptr, xs) == BRAID_ERR_INVALID_ARGUMENT);
  CHECK(braid_save_safetensors(dir.str().c_str(), 1, dup, xs) == BRAID_ERR_INVALID_ARGUMENT);
  const std::string link = dir.file("link");
  REQUIRE(symlink(path.c_str(), link.c_str()) == 0);
  CHECK(braid_save_safetensors(link.c_str(), 1, dup, xs) == BRAID_ERR_INVALID_ARGUMENT);
  struct stat st {};
  CHECK(lstat(link.c_str(), &st) == 0);
  CHECK(S_ISLNK(st.st_mode));                              // left as it was
  CHECK(names_of(path) == std::vector<std::string>{"a"});  // the earlier file is untouched
}

#include <braid.hpp>

TEST_CASE("checkpoints: a saved file gets the mode creat() would give it, or keeps the one it replaces") {
  test::Ctx c(1);
  TempDir dir;
  const std::string path = dir.file("m.safetensors");
  test::T x = test::full(c.ctx, 0, BRAID_FLOAT32, {2}, 1.0);
  const char* name = "w";
  const mode_t old_mask = umask(027);
  BRAID_CHECK_OK(braid_save_safetensors(path.c_str(), 1, &name, &x.t));
  umask(old_mask);
  struct stat st {};
  REQUIRE(stat(path.c_str(), &st) == 0);
  CHECK((st.st_mode & 07777) == 0640);  // 0666 less the umask, not mkstemp's 0600
  REQUIRE(chmod(path.c_str(), 0604) == 0);
  BRAID_CHECK_OK(braid_save_safetensors(path.c_str(), 1, &name, &x.t));
  REQUIRE(stat(path.c_str(), &st) == 0);
  CHECK((st.st_mode & 07777) == 0604);
}

TEST_CASE("checkpoints: braid.hpp save_safetensors, safetensors_names, load_safetensors") {
  braid::Context ctx;
  const braid::Device cpu0 = ctx.find_device("cpu:0");
  TempDir dir;
  const std::string path = dir.file("cpp.safetensors");
  const braid::Tensor w = braid::Tensor::from_vector(ctx, cpu0, {2, 2}, std::vector<float>{1, 2, 3, 4});
  const braid::Tensor b = braid::Tensor::from_vector(ctx, cpu0, {2}, std::vector<double>{-1, 0.5});
  const std::vector<std::pair<std::string, braid::Tensor>> named = {{"fc.weight", w}, {"fc.bias", b}};
  braid::save_safetensors(path, named);
  CHECK(braid::safetensors_names(path) == std::vector<std::string>{"fc.weight", "fc.bias"});
  const std::vector<braid::Tensor> all = braid::load_safetensors(ctx, cpu0, path);
  REQUIRE(all.size() == 2);
  CHECK(all[0].to_vector<float>() == std::vector<float>{1, 2, 3, 4});
  CHECK(all[1].to_vector<double>() == std::vector<double>{-1, 0.5});
  const std::vector<braid::Tensor> one = braid::load_safetensors(ctx, cpu0, path, {"fc.bias"});
  REQUIRE(one.size() == 1);
  CHECK(one[0].to_vector<double>() == std::vector<double>{-1, 0.5});
  CHECK_THROWS_AS(braid::load_safetensors(ctx, cpu0, path, {"nope"}), braid::Error);
}

// Issue 31: a header of deeply nested arrays (under the 100 MB cap) was parsed into a document of
// gigabytes before it was refused. The reader reads the header as a stream: nesting past the format's
// 3 levels is refused at the first bracket too many, and what it keeps grows with the entries it
// finds, a small multiple of the header. A few MB here; the peak memory is asserted.
TEST_CASE("checkpoints: hostile headers are refused in bounded memory; a name given twice is refused") {
  test::Ctx c(1);
  TempDir dir;
  const std::string path = dir.file("hostile.safetensors");
  constexpr size_t kDepth = size_t{3} << 20;  // 6 MB of brackets; a document of them took ~100 bytes each
  std::string nested = R"({"a":{"x":)";       // an unknown key of a tensor: its value is not looked at
  nested.append(kDepth, '[');
  nested.append(kDepth, ']');
  nested += "}}";
  write_safetensors(path, nested, {});
  for (int pass = 0; pass < 2; ++pass) {
    CAPTURE(pass);
    const test::PeakGrowth peak;
    braid_status st;
    if (pass == 0) {
      size_t size = 0;
      st = braid_safetensors_names(path.c_str(), nullptr, 0, &size);
    } else {
      braid_tensor t = nullptr;
      st = load_one(c.ctx, path, "a", &t);
      CHECK(t == nullptr);
    }
    const std::string msg = braid_last_error();
    INFO(msg.substr(0, 200));
    CHECK(st == BRAID_ERR_IO);
    CHECK(msg.find("nests deeper than the format's 3 levels") != std::string::npos);
    // The file is read whole (6 MB); the parse adds next to nothing. Before: hundreds of MB.
    if (peak.ok()) CHECK(peak.bytes() < (uint64_t{48} << 20));
  }
  // Nesting inside a tensor's entry, one level past the format's.
  const std::vector<uint8_t> two(2, 0);
  write_safetensors(path, R"({"a":{"dtype":"U8","shape":[[2]],"data_offsets":[0,2]}})", two);
  braid_tensor t = nullptr;
  CHECK(load_one(c.ctx, path, "a", &t) == BRAID_ERR_IO);
  CHECK(std::string(braid_last_error()).find("nests deeper") != std::string::npos);
  // Many small entries: refused or read, memory stays a small multiple of the header.
  {
    std::string many = "{";
    for (int k = 0; k < 100000; ++k)
      many += "\"t" + std::to_string(k) + R"(":{"dtype":"U8","shape":[0],"data_offsets":[0,0]},)";
    many += R"("__metadata__":{"k":"v"}})";
    write_safetensors(path, many, {});
    const test::PeakGrowth peak;
    size_t size = 0;
    BRAID_CHECK_OK(braid_safetensors_names(path.c_str(), nullptr, 0, &size));
    if (peak.ok()) CHECK(peak.bytes() < 8 * many.size() + (uint64_t{16} << 20));
  }
  // The same name twice: JSON leaves duplicates to the reader, and a document silently kept the
  // second. Both entries are valid on their own, so only the duplicate check refuses the file.
  write_safetensors(path,
                    R"({"a":{"dtype":"U8","shape":[2],"data_offsets":[0,2]},)"
                    R"("a":{"dtype":"U8","shape":[2],"data_offsets":[0,2]}})",
                    two);
  CHECK(load_one(c.ctx, path, "a", &t) == BRAID_ERR_IO);
  CHECK(std::string(braid_last_error()).find("\"a\" appears twice") != std::string::npos);
  size_t size = 0;
  CHECK(braid_safetensors_names(path.c_str(), nullptr, 0, &size) == BRAID_ERR_IO);
  // A key given twice inside one tensor's entry.
  write_safetensors(path, R"({"a":{"dtype":"U8","dtype":"F32","shape":[2],"data_offsets":[0,2]}})", two);
  CHECK(load_one(c.ctx, path, "a", &t) == BRAID_ERR_IO);
  CHECK(std::string(braid_last_error()).find("names dtype twice") != std::string::npos);
}

// Issue 31: the file was written as path + ".tmp-XXXXXX" and renamed, and that temporary name
// exceeded NAME_MAX (255 bytes) for legal names of 245 bytes or more ("File name too long").
TEST_CASE("checkpoints: a file name of up to 255 bytes is saved, and no temporary file is left") {
  test::Ctx c(1);
  TempDir dir;
  test::T x = test::full(c.ctx, 0, BRAID_FLOAT32, {2}, 1.0);
  const char* name = "w";
  for (size_t len : {size_t{244}, size_t{245}, size_t{250}, size_t{255}}) {
    CAPTURE(len);
    const std::string path = dir.file(std::string(len - 3, 'n') + ".st");
    BRAID_CHECK_OK(braid_save_safetensors(path.c_str(), 1, &name, &x.t));
    BRAID_CHECK_OK(braid_save_safetensors(path.c_str(), 1, &name, &x.t));  // replacing it too
    CHECK(names_of(path) == std::vector<std::string>{"w"});
  }
  size_t files = 0;
  for (const auto& e : std::filesystem::directory_iterator(dir.str())) {
    INFO(e.path().filename().string());
    CHECK(e.path().filename().string().find("tmp") == std::string::npos);
    ++files;
  }
  CHECK(files == 4);
}
