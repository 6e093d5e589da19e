#include "checkpoint/safetensors.h"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <array>
#include <cstring>
#include <set>
#include <string_view>

#include "core/dtype.h"
#include "core/error.h"

namespace braid::checkpoint {
namespace {

constexpr struct {
  braid_dtype dtype;
  const char* tag;
} kTags[] = {{BRAID_FLOAT32, "F32"}, {BRAID_FLOAT64, "F64"}, {BRAID_INT32, "I32"},     {BRAID_INT64, "I64"},
             {BRAID_UINT8, "U8"},    {BRAID_FLOAT16, "F16"}, {BRAID_BFLOAT16, "BF16"}, {BRAID_BOOL, "BOOL"}};

[[noreturn]] void corrupt(const std::string& what) { fail(BRAID_ERR_IO, "not a valid safetensors file: ", what); }

// The header, read as a stream of JSON events (nlohmann's SAX interface) straight into entries: no
// document is built. A header is data from anywhere, and the document of 90 MB of nested arrays took
// 3.4 GB and 25 s before it was refused (issue 31). The format needs three levels (the root object, a
// tensor's object, its shape); anything deeper is refused at the first such bracket, and what is
// kept (names, shapes and ranges) is a small multiple of the header's own bytes. nlohmann's SAX
// parser keeps its nesting on the heap, never the stack.
class HeaderReader {
 public:
  using json = nlohmann::json;
  static constexpr int kMaxDepth = 3;

  explicit HeaderReader(uint64_t data_bytes) : data_bytes_(data_bytes) {}
  std::vector<Entry> take() { return std::move(entries_); }

  bool null() { return scalar("null"); }
  bool boolean(bool b) { return scalar(b ? "true" : "false"); }
  bool number_integer(json::number_integer_t v) {
    if (depth_ == 3 && (kinds_[2] == Kind::Shape || kinds_[2] == Kind::Offsets))
      corrupt(what() + (kinds_[2] == Kind::Shape ? "'s dimension" : "'s offset") + " is not a non-negative integer");
    return scalar(std::to_string(v));
  }
  bool number_unsigned(json::number_unsigned_t v) {
    if (depth_ == 3 && kinds_[2] == Kind::Shape) {
      if (entry_.shape.size() == BRAID_MAX_DIMS)
        corrupt(what() + "'s shape is not an array of at most " + std::to_string(BRAID_MAX_DIMS) + " dimensions");
      if (v > uint64_t(INT64_MAX)) corrupt(what() + " has a dimension past int64");
      entry_.shape.push_back(static_cast<int64_t>(v));
      return true;
    }
    if (depth_ == 3 && kinds_[2] == Kind::Offsets) {
      if (offsets_ == 2) corrupt(what() + "'s data_offsets is not [begin, end]");
      (offsets_++ == 0 ? entry_.begin : entry_.end) = v;
      return true;
    }
    return scalar(std::to_string(v));
  }
  bool number_float(json::number_float_t, const json::string_t& text) {
    if (depth_ == 3 && (kinds_[2] == Kind::Shape || kinds_[2] == Kind::Offsets))
      corrupt(what() + (kinds_[2] == Kind::Shape ? "'s dimension" : "'s offset") + " is not a non-negative integer");
    return scalar(text);
  }
  bool string(json::string_t& text) {
    if (depth_ == 2 && kinds_[1] == Kind::Entry && field_ == Field::Dtype) {
      const auto tag = std::find_if(std::begin(kTags), std::end(kTags), [&](const auto& t) { return text == t.tag; });
      if (tag == std::end(kTags)) bad_dtype(json(text).dump());
      entry_.dtype = tag->dtype;
      return true;
    }
    if (depth_ == 2 && kinds_[1] == Kind::Metadata) return true;  // free-form text; braid keeps none of it
    return scalar("a string");
  }
  bool binary(json::binary_t&) { return scalar("binary"); }

  bool start_object(std::size_t) { return open(Kind::Object); }
  bool start_array(std::size_t) { return open(Kind::Array); }
  bool key(json::string_t& k) {
    if (depth_ == 1) {
      name_ = std::move(k);
    } else if (depth_ == 2 && kinds_[1] == Kind::Entry) {
      field_ = k == "dtype"          ? Field::Dtype
               : k == "shape"        ? Field::Shape
               : k == "data_offsets" ? Field::Offsets
                                     : Field::Other;
      if (field_ != Field::Other) {
        const unsigned bit = 1u << static_cast<unsigned>(field_);
        if (seen_ & bit) corrupt(what() + " names " + k + " twice");
        seen_ |= bit;
      }
    } else if (depth_ == 2 && kinds_[1] == Kind::Metadata) {
      meta_key_ = std::move(k);
    }
    return true;
  }
  bool end_object() { return close(); }
  bool end_array() { return close(); }
  bool parse_error(std::size_t, const std::string&, const nlohmann::detail::exception&) {
    corrupt("the header is not JSON");
  }

 private:
  enum class Kind { Root, Metadata, Entry, Shape, Offsets, Other, Object, Array };
  enum class Field { Dtype, Shape, Offsets, Other };

  std::string what() const { return "tensor \"" + name_ + "\""; }
  [[noreturn]] void bad_dtype(const std::string& shown) const {
    corrupt(what() + " has dtype " + shown + ", which braid does not have (F32, F64, I32, I64, U8, F16, BF16)");
  }

  // A scalar where the format has a place for one, or refused where it does not.
  bool scalar(const std::string& shown) {
    switch (depth_) {
      case 0: corrupt("the header is not a JSON object");
      case 1:
        if (name_ == "__metadata__") corrupt("__metadata__ is not an object");
        corrupt(what() + " lacks dtype, shape or data_offsets");
      case 2:
        if (kinds_[1] == Kind::Metadata) corrupt("__metadata__[\"" + meta_key_ + "\"] is not a string");
        if (field_ == Field::Dtype) bad_dtype(shown);
        if (field_ == Field::Shape)
          corrupt(what() + "'s shape is not an array of at most " + std::to_string(BRAID_MAX_DIMS) + " dimensions");
        if (field_ == Field::Offsets) corrupt(what() + "'s data_offsets is not [begin, end]");
        return true;  // another key of the tensor: ignored, as other readers do
      default:
        if (kinds_[2] == Kind::Shape) corrupt(what() + "'s dimension is not a non-negative integer");
        if (kinds_[2] == Kind::Offsets) corrupt(what() + "'s offset is not a non-negative integer");
        return true;  // inside an ignored key's value
    }
  }

  // An object or array opens at depth_ (0: the root).
  bool open(Kind bracket) {
    if (depth_ == kMaxDepth)
      corrupt("the header nests deeper than the format's " + std::to_string(kMaxDepth) + " levels");
    Kind kind = Kind::Other;
    if (depth_ == 0) {
      if (bracket != Kind::Object) corrupt("the header is not a JSON object");
      kind = Kind::Root;
    } else if (depth_ == 1) {
      if (name_ == "__metadata__") {
        if (bracket != Kind::Object) corrupt("__metadata__ is not an object");
        if (metadata_seen_) corrupt("__metadata__ appears twice");
        metadata_seen_ = true;
        kind = Kind::Metadata;
      } else {
        if (bracket != Kind::Object) corrupt(what() + " lacks dtype, shape or data_offsets");
        // A JSON key may hold "\u0000"; a C caller could never name that tensor (names are C strings).
        if (name_.find('\0') != std::string::npos) corrupt("a tensor name contains a NUL character");
        kind = Kind::Entry;
        entry_ = Entry{};
        entry_.name = name_;
        seen_ = 0;
        offsets_ = 0;
      }
    } else if (depth_ == 2 && kinds_[1] == Kind::Metadata) {
      corrupt("__metadata__[\"" + meta_key_ + "\"] is not a string");
    } else if (depth_ == 2 && kinds_[1] == Kind::Entry) {
      switch (field_) {
        case Field::Dtype: bad_dtype(bracket == Kind::Object ? "{...}" : "[...]");
        case Field::Shape:
          if (bracket != Kind::Array)
            corrupt(what() + "'s shape is not an array of at most " + std::to_string(BRAID_MAX_DIMS) + " dimensions");
          kind = Kind::Shape;
          break;
        case Field::Offsets:
          if (bracket != Kind::Array) corrupt(what() + "'s data_offsets is not [begin, end]");
          kind = Kind::Offsets;
          break;
        case Field::Other: break;  // another key's value: ignored (its depth is still bounded)
      }
    }
    kinds_[static_cast<size_t>(depth_++)] = kind;
    return true;
  }

  bool close() {
    const Kind kind = kinds_[static_cast<size_t>(--depth_)];
    if (kind == Kind::Offsets && offsets_ != 2) corrupt(what() + "'s data_offsets is not [begin, end]");
    if (kind == Kind::Entry) finish_entry();
    return true;
  }

  void finish_entry() {
    const unsigned all =
        (1u << unsigned(Field::Dtype)) | (1u << unsigned(Field::Shape)) | (1u << unsigned(Field::Offsets));
    if (seen_ != all) corrupt(what() + " lacks dtype, shape or data_offsets");
    // The byte count is checked against the range without overflowing: any dimension 0 makes it 0.
    uint64_t bytes = dtype_size(entry_.dtype);
    bool empty = false, overflow = false;
    for (const int64_t d : entry_.shape) {
      const auto n = static_cast<uint64_t>(d);
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
      corrupt(what() + "'s shape is larger than any file");
    if (entry_.begin > entry_.end || entry_.end > data_bytes_)
      corrupt(what() + "'s bytes [" + std::to_string(entry_.begin) + ", " + std::to_string(entry_.end) +
              ") are not inside the " + std::to_string(data_bytes_) + " data bytes");
    if (entry_.end - entry_.begin != bytes)
      corrupt(what() + " holds " + std::to_string(entry_.end - entry_.begin) + " bytes, its dtype and shape need " +
              std::to_string(bytes));
    entries_.push_back(std::move(entry_));
  }

  uint64_t data_bytes_;
  int depth_ = 0;
  std::array<Kind, kMaxDepth> kinds_{};
  std::string name_, meta_key_;  // the current root key; the current __metadata__ key
  Field field_ = Field::Other;   // the current key of a tensor's object
  unsigned seen_ = 0;            // the tensor's keys so far (bits of Field)
  int offsets_ = 0;
  bool metadata_seen_ = false;
  Entry entry_;
  std::vector<Entry> entries_;
};

}  // namespace

const char* dtype_tag(braid_dtype dtype) noexcept {
  for (const auto& t : kTags)
    if (t.dtype == dtype) return t.tag;
  return nullptr;
}

Header parse_header(std::span<const char> json, uint64_t file_bytes) {
  Header h;
  h.data_start = 8 + json.size();
  if (file_bytes < h.data_start) corrupt("the file is shorter than its header");
  HeaderReader reader(file_bytes - h.data_start);
  if (!nlohmann::json::sax_parse(json.begin(), json.end(), &reader)) corrupt("the header is not JSON");
  h.entries = reader.take();
  const uint64_t data_bytes = file_bytes - h.data_start;
  // A name given twice: JSON leaves it to the reader, and a document keeps the last silently. A
  // file is refused instead, since which of the two tensors it means cannot be known.
  {
    std::vector<std::string_view> names;
    names.reserve(h.entries.size());
    for (const Entry& e : h.entries) names.emplace_back(e.name);
    std::sort(names.begin(), names.end());
    if (auto d = std::adjacent_find(names.begin(), names.end()); d != names.end())
      corrupt("tensor \"" + std::string(*d) + "\" appears twice in the header");
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
