#include "graph/json.h"

#include <cmath>
#include <limits>
#include <nlohmann/json.hpp>
#include <unordered_set>

#include "core/dtype.h"
#include "core/error.h"

namespace braid::graph {
namespace {

using nlohmann::json;
using ordered = nlohmann::ordered_json;  // written with its keys in a reader's order

constexpr const char* kKernelNames[] = {"FILL",
                                        "ARANGE",
                                        "RANDOM_UNIFORM",
                                        "RANDOM_NORMAL",
                                        "COPY",
                                        "UNARY",
                                        "BINARY",
                                        "BINARY_SCALAR",
                                        "REDUCE",
                                        "ARGMAX",
                                        "MATMUL",
                                        "CONV2D",
                                        "POOL2D",
                                        "BATCH_NORM",
                                        "SOFTMAX",
                                        "SOFTMAX_CE",
                                        "DROPOUT",
                                        "SGD_UPDATE",
                                        "SGD_MOMENTUM",
                                        "ADAM_UPDATE",
                                        "CONV2D_BWD_DATA",
                                        "CONV2D_BWD_WEIGHT",
                                        "POOL2D_BWD",
                                        "BATCH_NORM_BWD",
                                        "SOFTMAX_CE_BWD",
                                        "COMBINE",
                                        "FUSED_ELEMENTWISE",
                                        "WHERE",
                                        "TAKE",
                                        "TAKE_BWD"};
static_assert(std::size(kKernelNames) == BRAID_KOP_COUNT);

constexpr const char* kKinds[] = {"input", "param", "internal"};

[[noreturn]] void bad(const std::string& what) { fail(BRAID_ERR_IO, "graph file: ", what); }

// Numbers that JSON cannot hold (NaN, infinities) are written as strings.
ordered number(double x) {
  if (std::isnan(x)) return "nan";
  if (std::isinf(x)) return x > 0 ? "inf" : "-inf";
  return x;
}

ordered view_json(const ViewRef& r) {
  ordered v = {{"value", r.value}, {"offset", r.offset}, {"dtype", dtype_name(r.dtype)}};
  v["shape"] = std::vector<int64_t>(r.shape, r.shape + r.ndim);
  v["strides"] = std::vector<int64_t>(r.strides, r.strides + r.ndim);
  v["tensor_shape"] = std::vector<int64_t>(r.tshape.span().begin(), r.tshape.span().end());
  return v;
}

// ---- reading: every access checked, so a malformed file is an error naming the place, never a crash.

const json& field(const json& obj, const char* key, const std::string& where) {
  if (!obj.is_object()) bad(where + " is not an object");
  auto it = obj.find(key);
  if (it == obj.end()) bad(where + " has no \"" + key + "\"");
  return *it;
}

int64_t integer(const json& j, const std::string& where) {
  if (j.is_number_unsigned()) {
    const auto u = j.get<uint64_t>();
    if (u > static_cast<uint64_t>(std::numeric_limits<int64_t>::max())) bad(where + " is out of range");
    return static_cast<int64_t>(u);
  }
  if (!j.is_number_integer()) bad(where + " is not an integer");
  return j.get<int64_t>();
}

int64_t integer_in(const json& j, int64_t lo, int64_t hi, const std::string& where) {
  const int64_t v = integer(j, where);
  if (v < lo || v > hi)
    bad(where + " = " + std::to_string(v) + " is outside [" + std::to_string(lo) + ", " + std::to_string(hi) + "]");
  return v;
}

double real(const json& j, const std::string& where) {
  if (j.is_number()) return j.get<double>();
  if (j.is_string()) {
    const auto& s = j.get_ref<const std::string&>();
    if (s == "nan") return std::numeric_limits<double>::quiet_NaN();
    if (s == "inf") return std::numeric_limits<double>::infinity();
    if (s == "-inf") return -std::numeric_limits<double>::infinity();
  }
  bad(where + " is not a number");
}

const std::string& text(const json& j, const std::string& where) {
  if (!j.is_string()) bad(where + " is not a string");
  return j.get_ref<const std::string&>();
}

const json& array(const json& j, size_t max, const std::string& where) {
  if (!j.is_array()) bad(where + " is not an array");
  if (j.size() > max) bad(where + " has more than " + std::to_string(max) + " elements");
  return j;
}

braid_dtype dtype_of(const json& j, const std::string& where) {
  const std::string& s = text(j, where);
  for (int d = 0; d < BRAID_DTYPE_COUNT; ++d)
    if (s == dtype_name(static_cast<braid_dtype>(d))) return static_cast<braid_dtype>(d);
  bad(where + ": unknown dtype \"" + s + "\"");
}

std::vector<int64_t> dims(const json& j, const std::string& where, bool allow_negative = false) {
  std::vector<int64_t> out;
  for (size_t d = 0; d < array(j, BRAID_MAX_DIMS, where).size(); ++d) {
    const std::string at = where + "[" + std::to_string(d) + "]";
    out.push_back(allow_negative ? integer(j[d], at) : integer_in(j[d], 0, int64_t{1} << 40, at));
  }
  return out;
}

// numel * dtype size, or an error when it does not fit in 63 bits.
uint64_t byte_size(const std::vector<int64_t>& shape, braid_dtype dtype, const std::string& where) {
  unsigned __int128 n = dtype_size(dtype);
  for (int64_t d : shape) {
    n *= static_cast<uint64_t>(d);
    if (n > (static_cast<unsigned __int128>(1) << 62)) bad(where + " is too large");
  }
  return static_cast<uint64_t>(n);
}

ViewRef view_from(const json& j, const Graph& g, const std::string& where) {
  ViewRef r;
  r.value = static_cast<int32_t>(
      integer_in(field(j, "value", where), 0, static_cast<int64_t>(g.values.size()) - 1, where + ".value"));
  r.offset = static_cast<uint64_t>(integer_in(field(j, "offset", where), 0, int64_t{1} << 62, where + ".offset"));
  r.dtype = dtype_of(field(j, "dtype", where), where + ".dtype");
  const std::vector<int64_t> shape = dims(field(j, "shape", where), where + ".shape");
  const std::vector<int64_t> strides = dims(field(j, "strides", where), where + ".strides", true);
  if (strides.size() != shape.size()) bad(where + ": strides and shape differ in length");
  r.ndim = static_cast<int32_t>(shape.size());
  for (int d = 0; d < r.ndim; ++d) {
    r.shape[d] = shape[static_cast<size_t>(d)];
    r.strides[d] = strides[static_cast<size_t>(d)];
    if (r.strides[d] < -(int64_t{1} << 40) || r.strides[d] > (int64_t{1} << 40))
      bad(where + ": a stride is out of range");
  }
  if (auto it = j.find("tensor_shape"); it != j.end()) r.tshape = Shape::of(dims(*it, where + ".tensor_shape"));
  // Every element the view names lies inside its value.
  const uint64_t esize = dtype_size(r.dtype);
  const uint64_t bytes = g.values[static_cast<size_t>(r.value)].bytes;
  if (r.offset % esize != 0) bad(where + ": offset is not a multiple of the element size");
  __int128 lo = 0, hi = 0;
  bool empty = false;
  for (int d = 0; d < r.ndim; ++d) {
    if (r.shape[d] == 0) empty = true;
    const __int128 span = static_cast<__int128>(r.shape[d] - 1) * r.strides[d];
    (span < 0 ? lo : hi) += span;
  }
  if (!empty) {
    const __int128 first = static_cast<__int128>(r.offset) + lo * static_cast<__int128>(esize);
    const __int128 last = static_cast<__int128>(r.offset) + (hi + 1) * static_cast<__int128>(esize);
    if (first < 0 || last > static_cast<__int128>(bytes)) bad(where + ": the view reaches outside its value");
  }
  if (!r.tshape.span().empty() &&
      byte_size(std::vector<int64_t>(r.tshape.span().begin(), r.tshape.span().end()), r.dtype, where) != bytes)
    bad(where + ": tensor_shape does not cover the value");
  return r;
}

// ---- the shapes and dtypes each kernel accepts (kernels trust their calls: a file may not).

struct Check {
  const Node& n;
  std::string where;

  [[noreturn]] void no(const std::string& what) const { bad(where + " (" + kKernelNames[n.kop] + "): " + what); }
  const ViewRef& in(size_t k) const { return n.in[k]; }
  const ViewRef& out(size_t k) const { return n.out[k]; }
  static bool same(const ViewRef& a, const ViewRef& b) { return a.same_shape(b); }
  void all_same_shape() const {
    for (const ViewRef& v : n.in)
      if (!same(v, n.out[0])) no("operand shapes differ");
    for (const ViewRef& v : n.out)
      if (!same(v, n.out[0])) no("result shapes differ");
  }
  void all_same_dtype() const {
    for (const ViewRef& v : n.in)
      if (v.dtype != n.out[0].dtype) no("operand dtypes differ");
    for (const ViewRef& v : n.out)
      if (v.dtype != n.out[0].dtype) no("result dtypes differ");
  }
  void ndim(const ViewRef& v, int nd) const {
    if (v.ndim != nd) no("an operand must have " + std::to_string(nd) + " axes");
  }
  void attr(int k, int64_t lo, int64_t hi) const {
    if (n.i[k] < lo || n.i[k] > hi) no("attribute i" + std::to_string(k) + " is out of range");
  }
  void dim(const ViewRef& v, int d, int64_t expect) const {
    if (v.shape[d] != expect)
      no("axis " + std::to_string(d) + " has size " + std::to_string(v.shape[d]) + ", expected " +
         std::to_string(expect));
  }
  void float_dtype() const {
    if (!dtype_is_float(n.out[0].dtype)) no("must be float32 or float64");
  }
  // Output size of a convolution along one axis.
  int64_t conv_out(int64_t in, int64_t k, int64_t stride, int64_t pad) const {
    if (stride < 1 || pad < 0 || k < 1) no("invalid stride, padding or kernel size");
    if (in + 2 * pad < k) no("the kernel is larger than the padded input");
    return (in + 2 * pad - k) / stride + 1;
  }
  void conv_shapes(const ViewRef& x, const ViewRef& w, const ViewRef& y) const {
    ndim(x, 4), ndim(w, 4), ndim(y, 4);
    dim(w, 1, x.shape[1]);
    dim(y, 0, x.shape[0]);
    dim(y, 1, w.shape[0]);
    dim(y, 2, conv_out(x.shape[2], w.shape[2], n.i[0], n.i[2]));
    dim(y, 3, conv_out(x.shape[3], w.shape[3], n.i[1], n.i[3]));
  }
  void pool_shapes(const ViewRef& x, const ViewRef& y) const {
    ndim(x, 4), ndim(y, 4);
    attr(0, 0, 1);
    for (int k = 1; k <= 4; ++k) attr(k, 1, int64_t{1} << 20);
    attr(5, 0, int64_t{1} << 20), attr(6, 0, int64_t{1} << 20);
    dim(y, 0, x.shape[0]);
    dim(y, 1, x.shape[1]);
  }
  void channels(const ViewRef& v, int64_t c) const {
    ndim(v, 1);
    dim(v, 0, c);
  }
};

void check_node(const Node& n, const std::string& where) {
  struct Arity {
    int min_in, max_in, out;
  };
  static constexpr Arity kArity[] = {
      {0, 0, 1}, {0, 0, 1}, {0, 0, 1}, {0, 0, 1}, {1, 1, 1}, {1, 1, 1}, {2, 2, 1}, {1, 1, 1}, {1, 1, 1}, {1, 1, 1},
      {2, 2, 1}, {2, 3, 1}, {1, 1, 1}, {5, 5, 3}, {1, 1, 1}, {2, 2, 1}, {1, 1, 2}, {2, 2, 1}, {3, 3, 2}, {4, 4, 3},
      {2, 2, 1}, {2, 2, 1}, {2, 2, 1}, {5, 5, 3}, {3, 3, 1}, {0, 0, 0}, {0, 0, 0}, {3, 3, 1}, {2, 2, 1}, {2, 2, 1}};
  static_assert(std::size(kArity) == BRAID_KOP_COUNT);
  const Check c{n, where};
  if (n.kop == BRAID_KOP_COMBINE) c.no("collective kernels cannot be loaded");
  if (n.kop == BRAID_KOP_FUSED_ELEMENTWISE) c.no("fused kernels are made when a graph runs, not read from files");
  const Arity a = kArity[n.kop];
  const auto nin = static_cast<int>(n.in.size());
  if (nin < a.min_in || nin > a.max_in || static_cast<int>(n.out.size()) != a.out) c.no("wrong number of operands");
  switch (n.kop) {
    case BRAID_KOP_FILL:
    case BRAID_KOP_RANDOM_UNIFORM:
    case BRAID_KOP_RANDOM_NORMAL: break;
    case BRAID_KOP_ARANGE: c.ndim(c.out(0), 1); break;
    case BRAID_KOP_COPY: c.all_same_shape(); break;
    case BRAID_KOP_UNARY: c.attr(0, 0, BRAID_UNARY_COUNT - 1), c.all_same_shape(), c.all_same_dtype(); break;
    case BRAID_KOP_BINARY:
    case BRAID_KOP_BINARY_SCALAR: c.attr(0, 0, BRAID_BINARY_COUNT - 1), c.all_same_shape(), c.all_same_dtype(); break;
    case BRAID_KOP_REDUCE: {
      c.attr(0, 0, BRAID_REDUCE_COUNT - 1), c.attr(1, 0, (1 << BRAID_MAX_DIMS) - 1);
      const ViewRef &x = c.in(0), &y = c.out(0);
      c.ndim(y, x.ndim);
      for (int d = 0; d < x.ndim; ++d) c.dim(y, d, (n.i[1] >> d & 1) ? 1 : x.shape[d]);
      break;
    }
    case BRAID_KOP_ARGMAX: {
      const ViewRef &x = c.in(0), &y = c.out(0);
      c.attr(0, 0, x.ndim - 1), c.ndim(y, x.ndim);
      if (y.dtype != BRAID_INT64) c.no("the result must be int64");
      for (int d = 0; d < x.ndim; ++d) c.dim(y, d, d == n.i[0] ? 1 : x.shape[d]);
      break;
    }
    case BRAID_KOP_MATMUL: {
      const ViewRef &x = c.in(0), &w = c.in(1), &y = c.out(0);
      if (x.dtype == BRAID_BFLOAT16 || x.dtype == BRAID_FLOAT16) {  // autocast's: a float32 product
        if (w.dtype != x.dtype || y.dtype != BRAID_FLOAT32) c.no("16-bit operands of one dtype, a float32 result");
      } else {
        c.all_same_dtype(), c.float_dtype();
      }
      c.ndim(x, 3), c.ndim(w, 3), c.ndim(y, 3);
      c.attr(0, 0, 1), c.attr(1, 0, 1);
      const int64_t m = n.i[0] ? x.shape[2] : x.shape[1], k = n.i[0] ? x.shape[1] : x.shape[2];
      const int64_t k2 = n.i[1] ? w.shape[2] : w.shape[1], nn = n.i[1] ? w.shape[1] : w.shape[2];
      if (k != k2) c.no("inner sizes differ");
      c.dim(x, 0, y.shape[0]), c.dim(w, 0, y.shape[0]), c.dim(y, 1, m), c.dim(y, 2, nn);
      break;
    }
    case BRAID_KOP_CONV2D:
      c.all_same_dtype(), c.float_dtype();
      c.conv_shapes(c.in(0), c.in(1), c.out(0));
      if (n.in.size() == 3) c.channels(c.in(2), c.in(1).shape[0]);
      break;
    case BRAID_KOP_CONV2D_BWD_DATA:  // dy, w -> dx
      c.all_same_dtype(), c.float_dtype();
      c.conv_shapes(c.out(0), c.in(1), c.in(0));
      break;
    case BRAID_KOP_CONV2D_BWD_WEIGHT:  // dy, x -> dw
      c.all_same_dtype(), c.float_dtype();
      c.conv_shapes(c.in(1), c.out(0), c.in(0));
      break;
    case BRAID_KOP_POOL2D:
      c.all_same_dtype(), c.float_dtype();
      c.pool_shapes(c.in(0), c.out(0));
      break;
    case BRAID_KOP_POOL2D_BWD:  // dy, x -> dx
      c.all_same_dtype(), c.float_dtype();
      c.pool_shapes(c.in(1), c.in(0));
      if (!Check::same(c.in(1), c.out(0))) c.no("dx must have x's shape");
      break;
    case BRAID_KOP_BATCH_NORM:
    case BRAID_KOP_BATCH_NORM_BWD: {
      c.all_same_dtype(), c.float_dtype();
      const ViewRef& x = n.kop == BRAID_KOP_BATCH_NORM ? c.in(0) : c.in(1);
      if (x.ndim < 2) c.no("x needs a channel axis");
      const int64_t ch = x.shape[1];
      if (n.kop == BRAID_KOP_BATCH_NORM) {
        for (size_t k = 1; k < 5; ++k) c.channels(c.in(k), ch);
        if (!Check::same(c.out(0), x)) c.no("y must have x's shape");
        c.channels(c.out(1), ch), c.channels(c.out(2), ch);
      } else {
        if (!Check::same(c.in(0), x) || !Check::same(c.out(0), x)) c.no("dy and dx must have x's shape");
        for (size_t k = 2; k < 5; ++k) c.channels(c.in(k), ch);
        c.channels(c.out(1), ch), c.channels(c.out(2), ch);
      }
      break;
    }
    case BRAID_KOP_SOFTMAX:
      c.all_same_shape(), c.all_same_dtype(), c.float_dtype(), c.attr(0, 0, c.in(0).ndim - 1), c.attr(1, 0, 1);
      break;
    case BRAID_KOP_DROPOUT: c.all_same_shape(), c.all_same_dtype(), c.float_dtype(); break;
    case BRAID_KOP_WHERE: c.all_same_shape(), c.all_same_dtype(); break;
    // x [outer, n, inner], indices [m] -> [outer, m, inner]; dy [outer, m, inner], indices -> dx [outer, n, inner]
    case BRAID_KOP_TAKE:
    case BRAID_KOP_TAKE_BWD: {
      const ViewRef &x = c.in(0), &indices = c.in(1), &y = c.out(0);
      c.ndim(x, 3), c.ndim(indices, 1), c.ndim(y, 3);
      if (!dtype_is_int(indices.dtype)) c.no("indices must be int32 or int64");
      if (y.dtype != x.dtype) c.no("the result must have x's dtype");
      if (n.kop == BRAID_KOP_TAKE_BWD && !dtype_is_float(x.dtype)) c.no("dy must be float32 or float64");
      c.dim(y, 0, x.shape[0]), c.dim(y, 2, x.shape[2]);
      c.dim(n.kop == BRAID_KOP_TAKE ? y : x, 1, indices.shape[0]);
      break;
    }
    case BRAID_KOP_SOFTMAX_CE:
    case BRAID_KOP_SOFTMAX_CE_BWD: {
      const ViewRef &logits = c.in(0), &labels = c.in(1);
      c.ndim(logits, 2), c.ndim(labels, 1), c.dim(labels, 0, logits.shape[0]);
      if (!dtype_is_int(labels.dtype)) c.no("labels must be int32 or int64");
      if (!dtype_is_float(logits.dtype) || c.out(0).dtype != logits.dtype)
        c.no("logits and result must be one float dtype");
      if (n.kop == BRAID_KOP_SOFTMAX_CE) {
        c.ndim(c.out(0), 1), c.dim(c.out(0), 0, logits.shape[0]);
      } else {
        c.ndim(c.in(2), 1), c.dim(c.in(2), 0, logits.shape[0]);
        if (c.in(2).dtype != logits.dtype) c.no("dloss must have the logits' dtype");
        if (!Check::same(c.out(0), logits)) c.no("the result must have the logits' shape");
      }
      break;
    }
    case BRAID_KOP_SGD_UPDATE:
    case BRAID_KOP_SGD_MOMENTUM:
    case BRAID_KOP_ADAM_UPDATE: c.all_same_shape(), c.all_same_dtype(), c.float_dtype(); break;
    default: c.no("unknown kernel");
  }
}

}  // namespace

const char* kernel_op_name(braid_kernel_op op) noexcept {
  const auto k = static_cast<int>(op);
  return k >= 0 && k < BRAID_KOP_COUNT ? kKernelNames[k] : nullptr;
}

std::string to_json(const Graph& g) {
  ordered values = ordered::array();
  for (const Value& v : g.values) {
    ordered j = {{"kind", kKinds[static_cast<int>(v.kind)]}, {"dtype", dtype_name(v.dtype)}, {"bytes", v.bytes}};
    j["shape"] = std::vector<int64_t>(v.shape.span().begin(), v.shape.span().end());
    if (v.kind == ValueKind::param) j["name"] = v.name;
    values.push_back(std::move(j));
  }
  ordered nodes = ordered::array();
  for (const Node& n : g.nodes) {
    ordered j = {{"name", n.name}, {"kernel", kernel_op_name(n.kop)}};
    int ni = 8, nf = 8;  // trailing zero attributes are left out
    while (ni > 0 && n.i[ni - 1] == 0) --ni;
    while (nf > 0 && n.f[nf - 1] == 0.0 && !std::signbit(n.f[nf - 1])) --nf;
    j["i"] = std::vector<int64_t>(n.i, n.i + ni);
    ordered f = ordered::array();
    for (int k = 0; k < nf; ++k) f.push_back(number(n.f[k]));
    j["f"] = std::move(f);
    ordered in = ordered::array(), out = ordered::array();
    for (const ViewRef& r : n.in) in.push_back(view_json(r));
    for (const ViewRef& r : n.out) out.push_back(view_json(r));
    j["in"] = std::move(in);
    j["out"] = std::move(out);
    if (!n.also_writes.empty()) j["also_writes"] = n.also_writes;
    nodes.push_back(std::move(j));
  }
  ordered outputs = ordered::array();
  for (const Output& o : g.outputs) {
    ordered j = {{"value", o.value}, {"dtype", dtype_name(o.dtype)}};
    j["shape"] = std::vector<int64_t>(o.shape.span().begin(), o.shape.span().end());
    outputs.push_back(std::move(j));
  }
  ordered doc = {{"format", "braid.graph"}, {"version", {kFormatMajor, kFormatMinor}}, {"values", std::move(values)},
                 {"inputs", g.inputs},      {"outputs", std::move(outputs)},           {"nodes", std::move(nodes)}};
  return doc.dump(1) + "\n";
}

// Bounds on parsing a file from anywhere before its document exists (issue 31: nested arrays in a
// safetensors header took 3.4 GB to refuse; this reader built the same document). The format nests 6
// levels (the file, nodes, a node, its operands, an operand, its shape); deeper is refused at the
// first bracket past kMaxDepth. The document's memory is estimated as it grows (a value, a key and a
// container's allocation, as nlohmann lays them out) and refused past kMemoryPerByte times the file's
// size: what braid writes costs far less (tests/graph/hostile_test.cpp loads one), while a file of
// nothing but tiny containers ("[{},{},...]") would cost about 30 times its size.
constexpr int kMaxDepth = 8;
constexpr uint64_t kMemoryPerByte = 16;

// nlohmann's own document builder, with the bounds checked at each event. Not json::parse with a
// callback: its builder scans the enclosing array for a discarded value at the end of every object,
// which made a file of a million small objects take minutes (quadratic).
class BoundedBuilder : public nlohmann::detail::json_sax_dom_parser<json> {
  using Base = nlohmann::detail::json_sax_dom_parser<json>;

 public:
  BoundedBuilder(json& doc, uint64_t budget) : Base(doc, /*allow_exceptions=*/false), budget_(budget) {}

  bool null() { return spend(16) && Base::null(); }
  bool boolean(bool b) { return spend(16) && Base::boolean(b); }
  bool number_integer(json::number_integer_t v) { return spend(16) && Base::number_integer(v); }
  bool number_unsigned(json::number_unsigned_t v) { return spend(16) && Base::number_unsigned(v); }
  bool number_float(json::number_float_t v, const json::string_t& text) {
    return spend(16) && Base::number_float(v, text);
  }
  bool string(json::string_t& v) { return spend(16 + v.size()) && Base::string(v); }
  bool binary(json::binary_t& v) { return spend(16 + v.size()) && Base::binary(v); }
  bool key(json::string_t& k) { return spend(80 + k.size()) && Base::key(k); }  // a std::map node
  bool start_object(std::size_t n) { return open() && spend(64) && Base::start_object(n); }
  bool start_array(std::size_t n) { return open() && spend(48) && Base::start_array(n); }
  bool end_object() { return --depth_, Base::end_object(); }
  bool end_array() { return --depth_, Base::end_array(); }

 private:
  bool open() {
    if (++depth_ > kMaxDepth)
      bad("the file nests deeper than " + std::to_string(kMaxDepth) + " levels (braid's graphs need 6)");
    return true;
  }
  bool spend(uint64_t bytes) {
    spent_ += bytes;
    if (spent_ > budget_)
      bad("the file would take more than " + std::to_string(kMemoryPerByte) + " times its size to read");
    return true;
  }
  uint64_t budget_, spent_ = 0;
  int depth_ = 0;
};

json parse_bounded(std::string_view data) {
  json doc;
  BoundedBuilder builder(doc, kMemoryPerByte * data.size() + (uint64_t{1} << 20));
  if (!json::sax_parse(data.begin(), data.end(), &builder)) return json(json::value_t::discarded);
  return doc;
}

void from_json(std::string_view data, Graph& g) {
  json doc = parse_bounded(data);
  if (doc.is_discarded()) bad("not valid JSON");
  if (!doc.is_object()) bad("the top level is not an object");
  if (text(field(doc, "format", "the file"), "format") != "braid.graph") bad("format is not \"braid.graph\"");
  const json& version = array(field(doc, "version", "the file"), 2, "version");
  if (version.size() != 2) bad("version is not [major, minor]");
  const int64_t major = integer(version[0], "version[0]");
  if (major > kFormatMajor)
    fail(BRAID_ERR_UNSUPPORTED, "graph file: format version ", major, ".", integer(version[1], "version[1]"),
         " is newer than this braid reads (", kFormatMajor, ".", kFormatMinor, "); upgrade braid");
  if (major < 1) bad("version " + std::to_string(major) + " does not exist");
  constexpr size_t kMaxItems = size_t{1} << 20;
  const json& values = array(field(doc, "values", "the file"), kMaxItems, "values");
  std::unordered_set<std::string> names;
  for (size_t k = 0; k < values.size(); ++k) {
    const std::string where = "values[" + std::to_string(k) + "]";
    const json& j = values[k];
    Value v;
    const std::string& kind = text(field(j, "kind", where), where + ".kind");
    if (kind == "input")
      v.kind = ValueKind::input;
    else if (kind == "param")
      v.kind = ValueKind::param;
    else if (kind == "internal")
      v.kind = ValueKind::internal;
    else
      bad(where + ".kind is not input, param or internal");
    v.dtype = dtype_of(field(j, "dtype", where), where + ".dtype");
    const std::vector<int64_t> shape = dims(field(j, "shape", where), where + ".shape");
    v.shape = Shape::of(shape);
    v.bytes = static_cast<uint64_t>(integer_in(field(j, "bytes", where), 0, int64_t{1} << 62, where + ".bytes"));
    if (byte_size(shape, v.dtype, where) != v.bytes) bad(where + ": bytes is not the size of its shape and dtype");
    if (v.kind == ValueKind::param) {
      v.name = text(field(j, "name", where), where + ".name");
      if (v.name.empty() || !names.insert(v.name).second) bad(where + ": parameter names must be unique and non-empty");
    }
    g.values.push_back(std::move(v));
  }
  const json& inputs = array(field(doc, "inputs", "the file"), kMaxItems, "inputs");
  for (size_t k = 0; k < inputs.size(); ++k) {
    const std::string where = "inputs[" + std::to_string(k) + "]";
    const auto v = static_cast<int32_t>(integer_in(inputs[k], 0, static_cast<int64_t>(g.values.size()) - 1, where));
    Value& val = g.values[static_cast<size_t>(v)];
    if (val.kind != ValueKind::input || val.input != -1) bad(where + " is not an input value, or is listed twice");
    val.input = static_cast<int32_t>(k);
    g.inputs.push_back(v);
  }
  for (size_t v = 0; v < g.values.size(); ++v)
    if (g.values[v].kind == ValueKind::input && g.values[v].input < 0)
      bad("values[" + std::to_string(v) + "] is an input not in inputs");
  const json& nodes = array(field(doc, "nodes", "the file"), kMaxItems, "nodes");
  for (size_t k = 0; k < nodes.size(); ++k) {
    const std::string where = "nodes[" + std::to_string(k) + "]";
    const json& j = nodes[k];
    Node n;
    n.name = text(field(j, "name", where), where + ".name");
    const std::string& kernel = text(field(j, "kernel", where), where + ".kernel");
    int kop = 0;
    while (kop < BRAID_KOP_COUNT && kernel != kKernelNames[kop]) ++kop;
    if (kop == BRAID_KOP_COUNT) bad(where + ": unknown kernel \"" + kernel + "\"");
    n.kop = static_cast<braid_kernel_op>(kop);
    const json& ints = array(field(j, "i", where), 8, where + ".i");
    for (size_t a = 0; a < ints.size(); ++a) n.i[a] = integer(ints[a], where + ".i");
    const json& reals = array(field(j, "f", where), 8, where + ".f");
    for (size_t a = 0; a < reals.size(); ++a) n.f[a] = real(reals[a], where + ".f");
    const json& in = array(field(j, "in", where), BRAID_KERNEL_MAX_INPUTS, where + ".in");
    for (size_t a = 0; a < in.size(); ++a)
      n.in.push_back(view_from(in[a], g, where + ".in[" + std::to_string(a) + "]"));
    const json& out = array(field(j, "out", where), BRAID_KERNEL_MAX_OUTPUTS, where + ".out");
    for (size_t a = 0; a < out.size(); ++a)
      n.out.push_back(view_from(out[a], g, where + ".out[" + std::to_string(a) + "]"));
    if (auto it = j.find("also_writes"); it != j.end()) {
      const json& aw = array(*it, BRAID_KERNEL_MAX_INPUTS, where + ".also_writes");
      for (const json& v : aw) {
        const auto id =
            static_cast<int32_t>(integer_in(v, 0, static_cast<int64_t>(g.values.size()) - 1, where + ".also_writes"));
        if (!n.reads_value(id)) bad(where + ".also_writes names a value the kernel does not read");
        n.also_writes.push_back(id);
      }
    }
    check_node(n, where);
    g.nodes.push_back(std::move(n));
  }
  const json& outputs = array(field(doc, "outputs", "the file"), kMaxItems, "outputs");
  std::unordered_set<int32_t> taken;
  for (size_t k = 0; k < outputs.size(); ++k) {
    const std::string where = "outputs[" + std::to_string(k) + "]";
    Output o;
    o.value = static_cast<int32_t>(
        integer_in(field(outputs[k], "value", where), 0, static_cast<int64_t>(g.values.size()) - 1, where + ".value"));
    o.dtype = dtype_of(field(outputs[k], "dtype", where), where + ".dtype");
    const std::vector<int64_t> shape = dims(field(outputs[k], "shape", where), where + ".shape");
    o.shape = Shape::of(shape);
    const Value& v = g.values[static_cast<size_t>(o.value)];
    if (v.kind != ValueKind::internal) bad(where + " is not a computed value");
    if (!taken.insert(o.value).second) bad(where + " repeats another output's value");
    // An output is its value or a reshape of it: the same dtype, the same number of bytes (a bool output's
    // value is the uint8 its kernels wrote, core/dtype.h kernel_dtype).
    if (kernel_dtype(o.dtype) != kernel_dtype(v.dtype)) bad(where + ": its dtype is not its value's");
    if (byte_size(shape, o.dtype, where) != v.bytes) bad(where + ": its shape and dtype do not cover its value");
    g.outputs.push_back(std::move(o));
  }
  // An internal value must be written before it is read (it has no contents of its own).
  std::vector<char> written(g.values.size(), 0);
  for (size_t v = 0; v < g.values.size(); ++v) written[v] = g.values[v].kind != ValueKind::internal;
  for (size_t k = 0; k < g.nodes.size(); ++k) {
    for (const ViewRef& r : g.nodes[k].in)
      if (!written[static_cast<size_t>(r.value)])
        bad("nodes[" + std::to_string(k) + "] reads a value before any node writes it");
    for (const ViewRef& r : g.nodes[k].out) written[static_cast<size_t>(r.value)] = 1;
  }
  for (const Output& o : g.outputs)
    if (!written[static_cast<size_t>(o.value)]) bad("an output is never written");
}

}  // namespace braid::graph
