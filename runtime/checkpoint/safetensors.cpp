#include "checkpoint/safetensors.h"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <cstring>
#include <set>

#include "core/dtype.h"
#include "core/error.h"

namespace braid::checkpoint {
namespace {

constexpr struct {
  braid_dtype dtype;
  const char* tag;
} kTags[] = {{BRAID_FLOAT32, "F32"}, {BRAID_FLOAT64, "F64"}, {BRAID_INT32, "I32"},    {BRAID_INT64, "I64"},
             {BRAID_UINT8, "U8"},    {BRAID_FLOAT16, "F16"}, {BRAID_BFLOAT16, "BF16"}};

[[noreturn]] void corrupt(const std::string& what) { fail(BRAID_ERR_IO, "not a valid safetensors file: ", what); }

// A JSON number that is a non-negative integer (the format's offsets and dimensions).
uint64_t whole(const nlohmann::json& v, const std::string& what) {
  if (!v.is_number_unsigned()) corrupt(what + " is not a non-negative integer");
  return v.get<uint64_t>();
}

}  // namespace

const char* dtype_tag(braid_dtype dtype) noexcept {
  for (const auto& t : kTags)
    if (t.dtype == dtype) return t.tag;
  return nullptr;
}

Header parse_header(std::span<const char> json, uint64_t file_bytes) {
  const nlohmann::json root = nlohmann::json::parse(json.begin(), json.end(), nullptr, /*allow_exceptions=*/false);
  if (root.is_discarded()) corrupt("the header is not JSON");
  if (!root.is_object()) corrupt("the header is not a JSON object");
  Header h;
  h.data_start = 8 + json.size();
  if (file_bytes < h.data_start) corrupt("the file is shorter than its header");
  const uint64_t data_bytes = file_bytes - h.data_start;
  for (const auto& [name, v] : root.items()) {
    if (name == "__metadata__") {  // free-form text pairs; braid keeps none of it
      if (!v.is_object()) corrupt("__metadata__ is not an object");
      for (const auto& [k, text] : v.items())
        if (!text.is_string()) corrupt("__metadata__[\"" + k + "\"] is not a string");
      continue;
    }
    // A JSON key may hold "\u0000"; a C caller could never name that tensor (names are C strings).
    if (name.find('\0') != std::string::npos) corrupt("a tensor name contains a NUL character");
    const std::string what = "tensor \"" + name + "\"";
    if (!v.is_object() || !v.contains("dtype") || !v.contains("shape") || !v.contains("data_offsets"))
      corrupt(what + " lacks dtype, shape or data_offsets");
    Entry e;
    e.name = name;
    const nlohmann::json& dt = v["dtype"];
    const auto tag = std::find_if(std::begin(kTags), std::end(kTags),
                                  [&](const auto& t) { return dt.is_string() && dt.get<std::string>() == t.tag; });
    if (tag == std::end(kTags))
      corrupt(what + " has dtype " + dt.dump() + ", which braid does not have (F32, F64, I32, I64, U8, F16, BF16)");
    e.dtype = tag->dtype;
    const nlohmann::json& shape = v["shape"];
    if (!shape.is_array() || shape.size() > BRAID_MAX_DIMS)
      corrupt(what + "'s shape is not an array of at most " + std::to_string(BRAID_MAX_DIMS) + " dimensions");
    // The byte count is checked against the range without overflowing: any dimension 0 makes it 0.
    uint64_t bytes = dtype_size(e.dtype);
    bool empty = false, overflow = false;
    for (const nlohmann::json& d : shape) {
      const uint64_t n = whole(d, what + "'s dimension");
      if (n > uint64_t(INT64_MAX)) corrupt(what + " has a dimension past int64");
      e.shape.push_back(static_cast<int64_t>(n));
      if (n == 0)
        empty = true;
      else if (bytes > UINT64_MAX / n)
        overflow = true;
      else
        bytes *= n;
    }
    if (empty)
      bytes = 0;
    else if (overflow)
      corrupt(what + "'s shape is larger than any file");
    const nlohmann::json& off = v["data_offsets"];
    if (!off.is_array() || off.size() != 2) corrupt(what + "'s data_offsets is not [begin, end]");
    e.begin = whole(off[0], what + "'s begin offset");
    e.end = whole(off[1], what + "'s end offset");
    if (e.begin > e.end || e.end > data_bytes)
      corrupt(what + "'s bytes [" + std::to_string(e.begin) + ", " + std::to_string(e.end) + ") are not inside the " +
              std::to_string(data_bytes) + " data bytes");
    if (e.end - e.begin != bytes)
      corrupt(what + " holds " + std::to_string(e.end - e.begin) + " bytes, its dtype and shape need " +
              std::to_string(bytes));
    h.entries.push_back(std::move(e));
  }
  // The format requires the ranges to tile the data exactly: no overlap (two tensors sharing bytes),
  // no holes (bytes that belong to no tensor: room for a second file hidden in this one).
  std::sort(h.entries.begin(), h.entries.end(),
            [](const Entry& a, const Entry& b) { return a.begin != b.begin ? a.begin < b.begin : a.end < b.end; });
  uint64_t at = 0;
  for (const Entry& e : h.entries) {
    if (e.begin != at)
      corrupt("tensor \"" + e.name + "\" starts at byte " + std::to_string(e.begin) + " of the data, not at " +
              std::to_string(at) + " (ranges must follow each other without gaps or overlap)");
    at = e.end;
  }
  if (at != data_bytes) corrupt(std::to_string(data_bytes - at) + " bytes after the last tensor belong to none");
  return h;
}

std::string make_header(std::vector<Entry>& entries) {
  nlohmann::json root = nlohmann::json::object();
  std::set<std::string> seen;
  uint64_t at = 0;
  for (Entry& e : entries) {
    if (e.name.empty()) fail(BRAID_ERR_INVALID_ARGUMENT, "a tensor name is empty");
    if (e.name == "__metadata__") fail(BRAID_ERR_INVALID_ARGUMENT, "\"__metadata__\" is reserved by the format");
    if (!seen.insert(e.name).second) fail(BRAID_ERR_INVALID_ARGUMENT, "the name \"", e.name, "\" is used twice");
    const char* tag = dtype_tag(e.dtype);
    if (tag == nullptr) fail(BRAID_ERR_DTYPE, "tensor \"", e.name, "\": the format has no ", dtype_name(e.dtype));
    uint64_t bytes = dtype_size(e.dtype);
    for (int64_t d : e.shape) bytes *= static_cast<uint64_t>(d);  // a live tensor's size: no overflow
    e.begin = at;
    e.end = at += bytes;
    root[e.name] = {{"dtype", tag}, {"shape", e.shape}, {"data_offsets", {e.begin, e.end}}};
  }
  std::string json;
  try {
    json = root.dump();
  } catch (const nlohmann::json::exception&) {  // a name that is not UTF-8
    fail(BRAID_ERR_INVALID_ARGUMENT, "a tensor name is not valid UTF-8");
  }
  json.resize((json.size() + 7) / 8 * 8, ' ');  // the data then starts 8-byte aligned
  std::string out(8, '\0');
  for (int i = 0; i < 8; ++i) out[size_t(i)] = static_cast<char>((uint64_t(json.size()) >> (8 * i)) & 0xff);
  return out + json;
}

}  // namespace braid::checkpoint
