// The one JSON writer of the tools: string escaping and a flat object builder. The tools only ever
// emit JSON (never parse it), so this is all they need.
#pragma once
#include <cmath>
#include <concepts>
#include <cstdint>
#include <cstdio>
#include <string>
#include <string_view>
#include <vector>

namespace braid::tools {

// Escapes s for use inside a JSON string literal (RFC 8259 §7): quote, backslash and control
// characters. Bytes >= 0x80 pass through, so UTF-8 stays UTF-8.
inline std::string json_escape(std::string_view s) {
  std::string out;
  out.reserve(s.size() + 2);
  for (const char c : s) {
    switch (c) {
      case '"': out += "\\\""; break;
      case '\\': out += "\\\\"; break;
      case '\b': out += "\\b"; break;
      case '\f': out += "\\f"; break;
      case '\n': out += "\\n"; break;
      case '\r': out += "\\r"; break;
      case '\t': out += "\\t"; break;
      default:
        if (static_cast<unsigned char>(c) < 0x20) {
          char buf[8];
          std::snprintf(buf, sizeof buf, "\\u%04x", static_cast<unsigned>(static_cast<unsigned char>(c)));
          out += buf;
        } else {
          out += c;
        }
    }
  }
  return out;
}

// Built by appending: GCC 12 at -O3 warns (-Wrestrict, a false positive, GCC PR 105329) on
// `"literal" + std::string`, and CI builds with -Werror.
inline std::string json_string(std::string_view s) {
  std::string out(1, '"');
  out += json_escape(s);
  out += '"';
  return out;
}

// JSON has no NaN or infinity; a figure that could not be computed is written as null.
inline std::string json_number(double v) {
  if (!std::isfinite(v)) return "null";
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.6g", v);
  return buf;
}

// Joins already-encoded JSON values into an array.
inline std::string json_array(const std::vector<std::string>& encoded) {
  std::string out = "[";
  for (size_t i = 0; i < encoded.size(); ++i) {
    if (i) out += ", ";
    out += encoded[i];
  }
  return out + "]";
}

// Builds one object, keys in insertion order (readers of our JSON lines may rely on the order we
// document, and it keeps diffs of saved outputs small).
class JsonObject {
 public:
  JsonObject& add(std::string_view key, std::string_view value) { return add_raw(key, json_string(value)); }
  JsonObject& add(std::string_view key, const char* value) { return add(key, std::string_view(value ? value : "")); }
  JsonObject& add(std::string_view key, const std::string& value) { return add(key, std::string_view(value)); }
  JsonObject& add(std::string_view key, bool value) { return add_raw(key, value ? "true" : "false"); }
  template <std::floating_point T>
  JsonObject& add(std::string_view key, T value) {
    return add_raw(key, json_number(static_cast<double>(value)));
  }
  template <std::integral T>
  requires(!std::same_as<T, bool>) JsonObject& add(std::string_view key, T value) {
    return add_raw(key, std::to_string(value));
  }
  // value must already be valid JSON (an array or a nested object).
  JsonObject& add_raw(std::string_view key, std::string_view value) {
    body_ += body_.empty() ? "" : ", ";
    body_ += json_string(key);
    body_ += ": ";
    body_ += value;
    return *this;
  }
  std::string str() const {
    std::string out(1, '{');
    out += body_;
    out += '}';
    return out;
  }

 private:
  std::string body_;
};

}  // namespace braid::tools
