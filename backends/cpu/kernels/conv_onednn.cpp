// float32 convolutions through oneDNN's JIT kernels (see conv_onednn.h and backends/cpu/README.md,
// "Convolutions").
//
// How the cores are shared: Debian builds oneDNN on OpenMP, but the device's cores belong to its
// oneTBB arena. Every thread that calls oneDNN here runs it as an OpenMP team of one, so oneDNN never
// starts a thread pool of its own; the parallelism is braid's: the batch is cut into one run of images
// per core, and each run is one single-threaded oneDNN call on one arena worker (the weight gradient's
// runs each sum their own images, then the runs add up in a fixed order, as the builtin kernel does).
//
// Layouts: braid's tensors are NCHW and KCRS. oneDNN's fast kernels want blocked layouts (channels in
// groups of 8 or 16, the vector width); each call reorders its operands into them and the result back,
// as a framework on plain tensors must. A primitive for each shape, pass and run size is made once and
// cached (making one JIT-compiles it).
#include "common.h"
// (common.h first: see the note at its top)
#include "conv_onednn.h"
#include "gemm_onednn.h"

// Without oneDNN the header's inline stubs stand in for all of this file.
#ifdef BRAID_HAVE_ONEDNN
#include <oneapi/dnnl/dnnl.hpp>

#include <atomic>
#include <cstdlib>
#include <cstring>
#include <map>
#include <mutex>
#include <tuple>
#include <unordered_map>

#include "host.h"

namespace braid::cpu::kern::onednn {
namespace {

using dnnl::memory;
using Tag = memory::format_tag;
constexpr auto kF32 = memory::data_type::f32;

enum class Mode { automatic, onednn, builtin };

// BRAID_CPU_CONV, read once, when the first convolution runs.
Mode mode() {
  static const Mode m = [] {
    const char* v = std::getenv("BRAID_CPU_CONV");
    if (v == nullptr || *v == '\0' || std::strcmp(v, "builtin") == 0) return Mode::builtin;
    if (std::strcmp(v, "onednn") == 0) return Mode::onednn;
    if (std::strcmp(v, "auto") == 0) return Mode::automatic;
    host::log(BRAID_LOG_WARNING,
              std::string("cpu backend: BRAID_CPU_CONV=") + v + " is none of builtin, onednn, auto; using builtin");
    return Mode::builtin;
  }();
  return m;
}

const dnnl::engine& engine() {
  static const dnnl::engine eng(dnnl::engine::kind::cpu, 0);
  return eng;
}

// Every primitive here takes its scratchpad from the caller. oneDNN's own (library) scratchpad is, in
// Debian's build, one buffer per thread that a primitive may only use from the thread that made it;
// plans are made on one thread and run on the arena's workers, several at once, and a padded 1x1
// weight gradient (im2col into that scratchpad) crashed that way. Each run carves its own instead.
const dnnl::primitive_attr& user_scratchpad() {
  static const dnnl::primitive_attr attr = [] {
    dnnl::primitive_attr a;
    a.set_scratchpad_mode(dnnl::scratchpad_mode::user);
    return a;
  }();
  return attr;
}

// One operand of a primitive: braid's layout, the primitive's, and the reorder between them (plain to
// the primitive's for inputs, back for the output), absent when they agree.
struct Operand {
  memory::desc plain, used;
  dnnl::reorder convert;
  int arg = 0;
  bool reorders = false;
  memory::desc scratchpad;  // the reorder's

  Operand() = default;
  Operand(const memory::desc& p, const memory::desc& u, int a, bool is_output) : plain(p), used(u), arg(a) {
    reorders = plain != used;
    if (!reorders) return;
    const auto pd = is_output ? dnnl::reorder::primitive_desc(engine(), used, engine(), plain, user_scratchpad())
                              : dnnl::reorder::primitive_desc(engine(), plain, engine(), used, user_scratchpad());
    convert = dnnl::reorder(pd);
    scratchpad = pd.scratchpad_desc();
  }
  size_t used_bytes() const { return reorders ? used.get_size() : 0; }
  // Reorders `from` into `to` on s, with `pad` (at least scratchpad's size) as its scratchpad.
  void reorder(dnnl::stream& s, const memory& from, const memory& to, void* pad) const {
    std::unordered_map<int, memory> args{{DNNL_ARG_FROM, from}, {DNNL_ARG_TO, to}};
    if (scratchpad.get_size() > 0) args.emplace(DNNL_ARG_SCRATCHPAD, memory(scratchpad, engine(), pad));
    convert.execute(s, args);
  }
};

// A pass over one run of `n` images: in0 and the output are per image (x or dy; y, dx), in1 is the
// weights (forward, data gradient: one copy shared by every run) or x (weight gradient: per run).
struct Plan {
  bool usable = false;
  dnnl::primitive prim;
  memory::desc prim_scratchpad;
  Operand in0, in1, out;
  // One run's scratchpad: the primitive and its reorders run one after another, so they share it.
  size_t scratchpad_bytes() const {
    return std::max(
        {prim_scratchpad.get_size(), in0.scratchpad.get_size(), in1.scratchpad.get_size(), out.scratchpad.get_size()});
  }
};

using Key = std::tuple<Pass, bool, int64_t, int64_t, int64_t, int64_t, int64_t, int64_t, int64_t, int64_t, int64_t,
                       int64_t, int64_t>;

Plan make_plan(Pass pass, bool bias, int64_t n, const ConvGeom& G) {
  Plan plan;
  const memory::dims x{n, G.C, G.H, G.W}, w{G.K, G.C, G.R, G.S}, y{n, G.K, G.P, G.Q}, strides{G.sh, G.sw},
      pad_l{G.ph, G.pw}, pad_r{(G.P - 1) * G.sh + G.R - G.H - G.ph, (G.Q - 1) * G.sw + G.S - G.W - G.pw};
  if (pad_r[0] < 0 || pad_r[1] < 0) return plan;  // the output drops input rows: leave it to the builtin
  const memory::desc x_any(x, kF32, Tag::any), w_any(w, kF32, Tag::any), y_any(y, kF32, Tag::any),
      x_plain(x, kF32, Tag::nchw), w_plain(w, kF32, Tag::oihw), y_plain(y, kF32, Tag::nchw),
      b(memory::dims{G.K}, kF32, Tag::x);
  using dnnl::algorithm, dnnl::prop_kind;
  namespace d = dnnl;
  const dnnl::primitive_attr& attr = user_scratchpad();
  const auto fwd_desc = bias ? d::convolution_forward::desc(prop_kind::forward_training, algorithm::convolution_direct,
                                                            x_any, w_any, b, y_any, strides, pad_l, pad_r)
                             : d::convolution_forward::desc(prop_kind::forward_training, algorithm::convolution_direct,
                                                            x_any, w_any, y_any, strides, pad_l, pad_r);
  const d::convolution_forward::primitive_desc fwd(fwd_desc, attr, engine());
  const char* impl = nullptr;
  switch (pass) {
    case Pass::forward:
      plan.prim = d::convolution_forward(fwd);
      plan.in0 = Operand(x_plain, fwd.src_desc(), DNNL_ARG_SRC, false);
      plan.in1 = Operand(w_plain, fwd.weights_desc(), DNNL_ARG_WEIGHTS, false);
      plan.out = Operand(y_plain, fwd.dst_desc(), DNNL_ARG_DST, true);
      impl = fwd.impl_info_str();
      plan.prim_scratchpad = fwd.scratchpad_desc();
      break;
    case Pass::backward_data: {
      const d::convolution_backward_data::primitive_desc pd(
          d::convolution_backward_data::desc(algorithm::convolution_direct, x_any, w_any, y_any, strides, pad_l, pad_r),
          attr, engine(), fwd);
      plan.prim = d::convolution_backward_data(pd);
      plan.in0 = Operand(y_plain, pd.diff_dst_desc(), DNNL_ARG_DIFF_DST, false);
      plan.in1 = Operand(w_plain, pd.weights_desc(), DNNL_ARG_WEIGHTS, false);
      plan.out = Operand(x_plain, pd.diff_src_desc(), DNNL_ARG_DIFF_SRC, true);
      impl = pd.impl_info_str();
      plan.prim_scratchpad = pd.scratchpad_desc();
      break;
    }
    case Pass::backward_weight: {
      const d::convolution_backward_weights::primitive_desc pd(
          d::convolution_backward_weights::desc(algorithm::convolution_direct, x_any, w_any, y_any, strides, pad_l,
                                                pad_r),
          attr, engine(), fwd);
      plan.prim = d::convolution_backward_weights(pd);
      plan.in0 = Operand(y_plain, pd.diff_dst_desc(), DNNL_ARG_DIFF_DST, false);
      plan.in1 = Operand(x_plain, pd.src_desc(), DNNL_ARG_SRC, false);
      plan.out = Operand(w_plain, pd.diff_weights_desc(), DNNL_ARG_DIFF_WEIGHTS, true);
      impl = pd.impl_info_str();
      plan.prim_scratchpad = pd.scratchpad_desc();
      break;
    }
  }
  // oneDNN's reference kernels are plain loops, slower than braid's own: only its JIT kernels qualify.
  plan.usable = impl != nullptr && std::strncmp(impl, "ref", 3) != 0;
  return plan;
}

// The cached plan for a pass over runs of n images; made (JIT-compiled) on first use. A shape oneDNN
// cannot take (an exception while making it) is cached as unusable, so it is tried once.
std::shared_ptr<const Plan> plan_for(Pass pass, bool bias, int64_t n, const ConvGeom& G) {
  static std::mutex mu;
  static std::map<Key, std::shared_ptr<const Plan>> cache;
  const Key key{pass, bias, n, G.C, G.H, G.W, G.K, G.R, G.S, G.sh, G.sw, G.ph, G.pw};
  const std::lock_guard lock(mu);
  if (const auto it = cache.find(key); it != cache.end()) return it->second;
  // A program uses a handful of shapes; one that keeps making new ones must not grow this forever.
  if (cache.size() >= 256) cache.clear();
  Plan plan;
  try {
    single_threaded();
    plan = make_plan(pass, bias, n, G);
  } catch (const std::exception& e) {
    host::log(BRAID_LOG_DEBUG,
              std::string("cpu backend: oneDNN declined a convolution, builtin kernels run it: ") + e.what());
    plan = Plan{};
  }
  return cache.emplace(key, std::make_shared<const Plan>(std::move(plan))).first->second;
}

// Cuts scratch into 64-byte aligned pieces (oneDNN's kernels read whole cache lines).
class Carver {
 public:
  void reserve(size_t bytes) { total_ += round(bytes); }
  void bind(std::byte* base) {
    next_ = reinterpret_cast<std::byte*>((reinterpret_cast<uintptr_t>(base) + 63) & ~uintptr_t{63});
  }
  size_t total() const { return total_ + 64; }
  void* take(size_t bytes) {
    if (bytes == 0) return nullptr;
    void* p = next_;
    next_ += round(bytes);
    return p;
  }

 private:
  static size_t round(size_t b) { return (b + 63) & ~size_t{63}; }
  size_t total_ = 0;
  std::byte* next_ = nullptr;
};

// Runs `pass` over the batch: runs of images (one per core), each a single-threaded oneDNN call.
//   in0, out: per-image operands (image i at in0 + i * in0_image, out + i * out_image floats)
//   in1: shared (the weights) when in1_image is 0, else per image (the weight gradient's x)
// The weight gradient's runs each write a [K, C, R, S] of their own, then add up into out.
bool run(Exec& ex, Pass pass, const ConvGeom& G, const float* in0, int64_t in0_image, const float* in1,
         int64_t in1_image, const float* bias, float* out, int64_t out_image) {
  if (G.N < ex.concurrency()) return false;  // fewer images than cores: builtin splits within one
  const int64_t parts = std::min<int64_t>(ex.concurrency(), G.N), base = G.N / parts, extra = G.N % parts;
  // array_split: the first `extra` runs take one image more, so at most two plans.
  auto run_first = [&](int64_t p) { return p * base + std::min(p, extra); };
  std::shared_ptr<const Plan> plans[2];
  try {
    plans[0] = plan_for(pass, bias != nullptr, base + (extra > 0 ? 1 : 0), G);
    plans[1] = extra > 0 && base > 0 ? plan_for(pass, bias != nullptr, base, G) : plans[0];
  } catch (const std::exception&) {
    return false;  // out of memory while caching
  }
  if (!plans[0]->usable || !plans[1]->usable) return false;
  auto plan_of = [&](int64_t p) -> const Plan& { return *plans[p < extra || extra == 0 ? 0 : 1]; };
  const bool shared_in1 = in1_image == 0, summed_out = pass == Pass::backward_weight;
  const int64_t out_elems = G.K * G.crs();  // the weight gradient's size

  // Scratch: the shared in1 in each plan's layout; per run the reordered in0, in1, out, oneDNN's
  // scratchpad, and the weight gradient's partial sums of runs 1..parts-1.
  Carver carve;
  for (const auto& pl : plans) carve.reserve(shared_in1 ? pl->in1.used_bytes() : 0);
  for (int64_t p = 0; p < parts; ++p) {
    const Plan& pl = plan_of(p);
    carve.reserve(pl.in0.used_bytes());
    carve.reserve(shared_in1 ? 0 : pl.in1.used_bytes());
    carve.reserve(pl.out.used_bytes());
    carve.reserve(pl.scratchpad_bytes());
    if (summed_out && p > 0) carve.reserve(size_t(out_elems) * sizeof(float));
  }
  const Scratch<std::byte> scratch(0, carve.total());
  carve.bind(scratch.get());
  struct RunBuffers {
    void *in0 = nullptr, *in1 = nullptr, *out = nullptr, *pad = nullptr;
    float* partial = nullptr;
  };
  void* shared[2] = {};
  for (int i = 0; i < 2; ++i) shared[i] = shared_in1 ? carve.take(plans[i]->in1.used_bytes()) : nullptr;
  std::vector<RunBuffers> bufs(static_cast<size_t>(parts));
  for (int64_t p = 0; p < parts; ++p) {
    const Plan& pl = plan_of(p);
    RunBuffers& b = bufs[size_t(p)];
    b.in0 = carve.take(pl.in0.used_bytes());
    b.in1 = shared_in1 ? nullptr : carve.take(pl.in1.used_bytes());
    b.out = carve.take(pl.out.used_bytes());
    b.pad = carve.take(pl.scratchpad_bytes());
    b.partial =
        summed_out ? (p == 0 ? out : static_cast<float*>(carve.take(size_t(out_elems) * sizeof(float)))) : nullptr;
  }

  try {
    single_threaded();
    const dnnl::engine& eng = engine();
    // The shared weights, reordered once per plan (both plans usually want the same layout).
    memory w_used[2];
    if (shared_in1) {
      dnnl::stream s(eng);
      for (int i = 0; i < 2; ++i) {
        const Operand& o = plans[i]->in1;
        if (i == 1 && plans[1] == plans[0]) {
          w_used[1] = w_used[0];
          continue;
        }
        memory plain(o.plain, eng, const_cast<float*>(in1));
        if (!o.reorders) {
          w_used[i] = plain;
          continue;
        }
        w_used[i] = memory(o.used, eng, shared[i]);
        // Before the runs start, so run 0's scratchpad is free (plan i is run 0's or the last run's).
        o.reorder(s, plain, w_used[i], bufs[i == 0 ? 0 : size_t(parts - 1)].pad);
      }
      s.wait();
    }
    std::atomic<bool> failed{false};
    parallel(ex, parts, 1, [&](int64_t b, int64_t e) {
      try {
        single_threaded();
        dnnl::stream s(eng);
        for (int64_t p = b; p < e; ++p) {
          const Plan& pl = plan_of(p);
          const RunBuffers& rb = bufs[size_t(p)];
          const int64_t first = run_first(p);
          std::unordered_map<int, memory> args;
          auto input = [&](const Operand& o, const float* src, void* buf) {
            memory plain(o.plain, eng, const_cast<float*>(src));
            if (!o.reorders) return args.emplace(o.arg, plain), void();
            memory used(o.used, eng, buf);
            o.reorder(s, plain, used, rb.pad);
            args.emplace(o.arg, used);
          };
          input(pl.in0, in0 + first * in0_image, rb.in0);
          if (shared_in1)
            args.emplace(pl.in1.arg, w_used[&pl == plans[0].get() ? 0 : 1]);
          else
            input(pl.in1, in1 + first * in1_image, rb.in1);
          if (bias != nullptr)
            args.emplace(DNNL_ARG_BIAS, memory(memory::desc({G.K}, kF32, Tag::x), eng, const_cast<float*>(bias)));
          float* dst = summed_out ? rb.partial : out + first * out_image;
          memory out_plain(pl.out.plain, eng, dst);
          memory out_used = pl.out.reorders ? memory(pl.out.used, eng, rb.out) : out_plain;
          args.emplace(pl.out.arg, out_used);
          if (pl.prim_scratchpad.get_size() > 0)
            args.emplace(DNNL_ARG_SCRATCHPAD, memory(pl.prim_scratchpad, eng, rb.pad));
          pl.prim.execute(s, args);
          if (pl.out.reorders) pl.out.reorder(s, out_used, out_plain, rb.pad);
        }
        s.wait();
      } catch (const std::exception&) {
        failed.store(true, std::memory_order_relaxed);
      }
    });
    if (failed.load()) return false;
  } catch (const std::exception&) {
    return false;
  }
  if (summed_out)  // runs 1.. onto run 0's sum, in order: the same bits every time for a shape and core count
    for (int64_t p = 1; p < parts; ++p) {
      const float* part = bufs[size_t(p)].partial;
      for (int64_t i = 0; i < out_elems; ++i) out[i] += part[i];
    }
  return true;
}

// ---- the choice between oneDNN and the builtin kernels ------------------------------------------

// Calls of a shape while it is measured: 0 and 1 warm each implementation up (oneDNN JIT-compiles, the
// builtin's scratch is faulted in), then kTrials timed calls each, alternating; the faster minimum wins.
constexpr int kTrials = 2;

}  // namespace

struct Tuning {
  int calls = 0;                    // trial calls handed out
  double best[2] = {1e300, 1e300};  // fastest timed call: [0] builtin, [1] oneDNN
  int decided = -1;                 // -1 while measuring, else 1 = oneDNN, 0 = builtin
};

namespace {
// Per shape and core count (the runs, and so either implementation's speed, follow from both).
using TuneKey = std::tuple<Key, int>;
std::mutex tuning_mu;
std::map<TuneKey, Tuning>& tunings() {
  static std::map<TuneKey, Tuning> m;  // node-based: a Tuning* stays valid while others are added
  return m;
}
}  // namespace

Choice::Choice(Pass pass, const ConvGeom& G, bool bias, int cores) {
  switch (mode()) {
    case Mode::onednn: onednn_ = true; return;
    case Mode::builtin: return;
    case Mode::automatic: break;
  }
  const TuneKey key{Key{pass, bias, G.N, G.C, G.H, G.W, G.K, G.R, G.S, G.sh, G.sw, G.ph, G.pw}, cores};
  const std::lock_guard lock(tuning_mu);
  auto it = tunings().find(key);
  if (it == tunings().end()) {
    // A program uses a handful of shapes; one that keeps making new ones is not measured past these.
    if (tunings().size() >= 1024) return;
    it = tunings().emplace(key, Tuning{}).first;
  }
  Tuning& t = it->second;
  if (t.decided >= 0) {
    onednn_ = t.decided == 1;
    return;
  }
  const int call = t.calls++;
  onednn_ = call % 2 == 1;  // builtin first, oneDNN second: a shape oneDNN declines is decided early
  timed_ = call >= 2;
  tuning_ = &t;
  start_ = std::chrono::steady_clock::now();
}

Choice::~Choice() {
  if (tuning_ == nullptr) return;
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start_).count();
  const std::lock_guard lock(tuning_mu);
  Tuning& t = *tuning_;
  if (t.decided >= 0) return;  // another thread's trial decided meanwhile
  if (declined_) {             // oneDNN cannot run this shape: nothing to compare
    t.decided = 0;
    return;
  }
  if (!timed_) return;
  double& best = t.best[onednn_ ? 1 : 0];
  best = std::min(best, seconds);
  if (t.calls >= 2 + 2 * kTrials && t.best[0] < 1e300 && t.best[1] < 1e300) t.decided = t.best[1] < t.best[0] ? 1 : 0;
}

// Each entry is one Call (gemm_onednn.h): refused once the process is exiting.
template <class F>
bool guarded(F&& conv) {
  Call call;
  if (!call.admitted() || !conv()) return false;
  call.succeeded(Call::conv);
  return true;
}

bool conv_forward(Exec& ex, const ConvGeom& G, const float* x, const float* w, const float* bias, float* y) {
  return guarded([&] { return run(ex, Pass::forward, G, x, G.C * G.hw(), w, 0, bias, y, G.K * G.pq()); });
}

bool conv_backward_data(Exec& ex, const ConvGeom& G, const float* dy, const float* w, float* dx) {
  return guarded([&] { return run(ex, Pass::backward_data, G, dy, G.K * G.pq(), w, 0, nullptr, dx, G.C * G.hw()); });
}

bool conv_backward_weight(Exec& ex, const ConvGeom& G, const float* dy, const float* x, float* dw) {
  return guarded([&] { return run(ex, Pass::backward_weight, G, dy, G.K * G.pq(), x, G.C * G.hw(), nullptr, dw, 0); });
}

}  // namespace braid::cpu::kern::onednn

#endif  // BRAID_HAVE_ONEDNN
