// A graph (docs/GRAPH.md): the kernels a traced function ran, over values, in program order. It is
// kernel-level on purpose: every op, however composite, reaches the backends as kernel calls, so a
// graph replays exactly what imperative execution ran, and its passes and its JSON need to know only
// the kernel ops of abi/braid_backend.h.
//
// A value is one storage. Its kinds:
//  - input: bound to the run's i-th input tensor;
//  - param: a storage that existed before tracing (a parameter, a constant made earlier): the graph
//    reads it where it is at run time, so updates to it (an optimizer step) are seen; a loaded graph
//    owns its params;
//  - internal: made during tracing by a kernel of the graph: allocated by the run (memory planning).
// Values are not single-assignment: in-place kernels and partial writes (concat) write a value again,
// and passes treat a value's writers in order.
#pragma once
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "braid_backend.h"
#include "context/context.h"
#include "core/handle_pool.h"
#include "core/shape.h"
#include "tensor/tensor.h"

namespace braid::graph {

// A value's index into the graph's per-value arrays.
inline size_t at(int32_t v) noexcept { return static_cast<size_t>(v); }

enum class ValueKind : uint8_t { input, param, internal };

struct Value {
  ValueKind kind = ValueKind::internal;
  uint64_t bytes = 0;                 // the storage's size
  braid_dtype dtype = BRAID_FLOAT32;  // of its first view (for inspection and export)
  Shape shape;                        // of its first view
  int32_t input = -1;                 // input: its index among the graph's inputs
  std::string name;                   // param: its name in exported files ("param0", ...)
  TensorRef tensor;                   // param: a handle over it (whole storage, the root for autograd)
  // The traced handle that is the value's own tensor in an interpreted run (run.cpp): the input, the
  // parameter's root, the first writer's output; -1 when unknown (a loaded graph).
  int32_t base_handle = -1;
};

// A kernel operand or result: a view into a value, the byte offset relative to the value's start.
struct ViewRef {
  int32_t value = -1;
  uint64_t offset = 0;
  braid_dtype dtype = BRAID_FLOAT32;
  int32_t ndim = 0;
  int64_t shape[BRAID_MAX_DIMS] = {};
  int64_t strides[BRAID_MAX_DIMS] = {};
  Shape tshape;  // the shape of the tensor handle the op was given (autograd's view of the operand)
  // That handle, numbered per trace: an interpreted run gives each traced handle one tensor, so that a
  // write through a reshaped alias is seen through that alias and not through the others, as in
  // imperative autograd. -1 when unknown (a loaded graph, a node a pass made).
  int32_t handle = -1;

  bool same_as(const ViewRef& o) const noexcept;
  bool same_shape(const ViewRef& o) const noexcept;  // ndim and sizes
  uint64_t numel() const noexcept;
  // Contiguous (row-major) and starting at the value's first byte, covering `bytes`.
  bool covers_whole(uint64_t bytes) const noexcept;
};

struct Node {
  std::string name;  // the op that pushed it ("dense", "relu", ...)
  braid_kernel_op kop = BRAID_KOP_COUNT;
  int64_t i[8] = {};
  double f[8] = {};
  std::vector<ViewRef> in, out;
  // Values written besides the outputs' (kernel-side in-place updates: batch norm's running stats).
  std::vector<int32_t> also_writes;

  bool is_random() const noexcept;
  bool reads_value(int32_t v) const noexcept;
  bool writes_value(int32_t v) const noexcept;
};

struct Output {
  int32_t value = -1;
  braid_dtype dtype = BRAID_FLOAT32;
  Shape shape;
  int32_t handle = -1;  // the traced handle returned (ViewRef::handle)
};

// Where one run puts each internal value: a slot of the run's workspace (several values whose
// lifetimes do not overlap share a slot), or (for a value that a graph output is) a storage of its
// own. Slots are separate allocations, not offsets in one: GPUs cap one buffer's size (lavapipe at
// 128 MiB per storage buffer) well below what a large graph's intermediates add up to. A run takes its
// slots from the device's caching allocator and they go back when it ends, so graphs that are not
// running hold no memory (a hybrid function keeps a graph per input shape) and the bytes serve the
// next run, of any graph, or imperative ops.
struct Plan {
  std::vector<int32_t> slot;         // per value; -1 when not in the workspace
  std::vector<uint64_t> slot_bytes;  // per slot
  uint64_t workspace_bytes = 0;      // their sum
  bool planned = false;
};

// A run's kernel calls made once the plan exists: views into parameters are final, and a run fills in
// the buffers of its inputs, outputs and workspace slots (run.cpp).
struct Prepared {
  enum class Source : uint8_t { input, output, slot };
  struct Patch {
    uint32_t call;
    bool output;      // in call.outputs (else call.inputs)
    uint8_t operand;  // index in that array
    Source source;    // the run's input, output or workspace slot `index`
    int32_t index;
    uint64_t offset;  // within that storage
  };
  std::vector<braid_kernel_call> calls;
  std::vector<Patch> patches;
  std::vector<uint32_t> random_calls;   // draw anew each run
  std::vector<Storage*> reads, writes;  // parameters (inputs, outputs and slots added per run)
  std::vector<int32_t> written_inputs;  // inputs an in-place kernel writes
  bool ready = false;
};

struct Graph {
  Context* ctx = nullptr;  // holds a context reference (released after everything else, in ~Graph)
  Device* device = nullptr;
  std::vector<Value> values;
  std::vector<Node> nodes;
  std::vector<int32_t> inputs;  // value per input
  std::vector<Output> outputs;
  Plan plan;
  Prepared prepared;
  // BRAID_GRAPH_PASS_* bits applied; PLAN_MEMORY makes (re)planning reuse bytes, FUSE_ELEMENTWISE
  // makes runs fuse elementwise chains.
  uint32_t passes_applied = 0;
  // Runs are serialised: they share the plan and the prepared calls.
  std::mutex run_mu;

  Graph() = default;
  Graph(const Graph&) = delete;
  Graph& operator=(const Graph&) = delete;
  ~Graph();

  void drop_plan() noexcept {
    plan = Plan{};
    prepared = Prepared{};
  }
  // Renumbers values after nodes were removed: unused internal values and params disappear.
  void compact_values();
};

}  // namespace braid::graph

// The handle behind braid_graph (HandlePool: a stale handle is refused without being read).
struct braid_graph_t {
  // The application's references and a hybrid function's cache entry (core/handle_pool.h): a release
  // beyond the application's own is refused instead of freeing a graph the hybrid still runs.
  braid::SharedRefs refs;
  braid::graph::Graph g;
};
