// The autograd C API: the recording switch, gradient buffers, and backward.
#include <algorithm>
#include <unordered_map>

#include "autograd/gradients.h"
#include "autograd/tape.h"
#include "context/context.h"
#include "core/dtype.h"
#include "ops/call.h"
#include "ops/op_builder.h"
#include "tensor/handle_watch.h"
#include "tensor/tensor.h"

using namespace braid;
using namespace braid::autograd;

namespace {

// A gradient that would flow into the history of a value that something autograd does not record had
// overwritten (through another handle over its storage, or in part) before the op read it: that
// history did not make the value the op read, so the gradient would be silently wrong.
[[noreturn]] void refuse_stale(const Node& n, size_t k) {
  fail(BRAID_ERR_INVALID_STATE, "input ", k, " of ", n.name, " (shape ", n.inputs[k]->shape.str(),
       ") was overwritten after it was computed and before ", n.name,
       " read it, by an op autograd does not record (copy_into or write_host into a handle over the same memory, an "
       "in-place update), so its recorded history no longer made that value. Record the write as an op, or "
       "compute the value again");
}

// Nodes reachable from the heads, consumers before producers (reverse DFS post-order).
std::vector<Node*> topological(const std::vector<Meta*>& heads) {
  std::vector<Node*> post;
  std::unordered_map<Node*, bool> seen;  // true once finished
  struct Frame {
    Node* node;
    size_t input;
    size_t producer;
  };
  std::vector<Frame> stack;
  auto visit = [&](Node* n) {
    if (seen.count(n)) return;
    if (n->freed)
      fail(BRAID_ERR_INVALID_STATE, "the graph through ", n->name,
           " was freed by an earlier backward; pass retain_graph = 1 to the first backward to run another");
    seen[n] = false;
    stack.push_back({n, 0, 0});
  };
  for (Meta* m : heads)
    for (auto& p : m->producers) {
      visit(p.node.get());
      while (!stack.empty()) {
        Node* n = stack.back().node;
        Node* child = nullptr;
        {
          Frame& f = stack.back();  // not used after visit(): pushing may move the stack
          while (!child && f.input < n->in_meta.size()) {
            const Meta* m = n->in_meta[f.input].get();
            if (!n->needs[f.input] || !m || f.producer >= m->producers.size()) {
              ++f.input;
              f.producer = 0;
              continue;
            }
            if (f.input < 32 && (n->stale_inputs >> f.input & 1u)) refuse_stale(*n, f.input);
            Node* c = m->producers[f.producer++].node.get();
            if (!seen.count(c)) child = c;
          }
        }
        if (child) {
          visit(child);
          continue;
        }
        seen[n] = true;
        post.push_back(n);
        stack.pop_back();
      }
    }
  std::reverse(post.begin(), post.end());
  return post;
}

class Backward {
 public:
  explicit Backward(Context&) {}

  void add(const std::shared_ptr<Meta>& m, TensorRef g) {
    keep_.push_back(m);
    auto it = grads_.find(m.get());
    if (it == grads_.end()) {
      grads_.emplace(m.get(), std::move(g));
    } else {
      it->second = sum(it->second.get(), g.get());
    }
  }

  void run(const std::vector<Meta*>& heads, bool retain) {
    std::vector<Node*> order = topological(heads);
    // Before any gradient op is pushed or any leaf written: a refused backward changes nothing.
    for (Node* n : order) check_saved(*n);
    // A leaf's gradient is final once every node that reads the leaf has been differentiated: it is
    // written into the leaf's buffer right then, not after the whole graph, so work waiting on it (a
    // Trainer's bucketed allreduce) can start while the rest of backward still runs.
    std::unordered_map<Meta*, size_t> pending;
    auto for_leaf_inputs = [](Node* n, auto&& fn) {
      for (size_t k = 0; k < n->inputs.size(); ++k)
        if (n->needs[k] && n->in_meta[k] && n->in_meta[k]->leaf) fn(n->in_meta[k].get());
    };
    for (Node* n : order) for_leaf_inputs(n, [&](Meta* m) { ++pending[m]; });
    auto settle = [&](Node* n) {
      for_leaf_inputs(n, [&](Meta* m) {
        if (--pending[m] == 0) write_leaf(m);
      });
    };
    std::vector<TensorRef> zeros, dx;
    std::vector<Tensor*> dys;
    for (Node* n : order) {
      dys.assign(n->outputs.size(), nullptr);
      zeros.clear();
      bool any = false;
      for (size_t k = 0; k < n->outputs.size(); ++k) {
        auto m = n->out_meta[k].lock();
        auto it = m ? grads_.find(m.get()) : grads_.end();
        if (it != grads_.end()) {
          dys[k] = it->second.get();
          any = true;
        }
      }
      if (!any) {
        settle(n);
        continue;
      }
      for (size_t k = 0; k < dys.size(); ++k)
        if (!dys[k] && dtype_is_floating(n->outputs[k]->dtype)) {
          zeros.push_back(op::full_like(*n->outputs[k], 0.0));
          dys[k] = zeros.back().get();
        }
      gradient(*n, dys, dx);
      for (size_t k = 0; k < dx.size(); ++k)
        if (dx[k].get() && n->in_meta[k]) add(n->in_meta[k], std::move(dx[k]));
      settle(n);
    }
    // Leaves no node read (a head that is itself a leaf).
    std::vector<Meta*> rest;
    for (auto& [m, g] : grads_) rest.push_back(m);
    for (Meta* m : rest) write_leaf(m);
    if (!retain)
      for (Node* n : order) {
        // A reshape keeps nothing a backward frees (its handles share the output's memory): a view
        // kept past this backward (of a leaf parameter, used again next step) still leads to its input.
        if (is_reshape(*n)) continue;
        n->freed = true;
        n->inputs.clear();
        n->in_meta.clear();
        n->outputs.clear();
      }
  }

 private:
  // Two gradients of one tensor added up. float16 and bfloat16 are storage types (casts only): their
  // gradients (a value cast to float16 and read twice) add in float32.
  static TensorRef sum(Tensor* a, Tensor* b) {
    if (dtype_is_float(a->dtype)) return op::add(a, b);
    TensorRef a32 = op::cast(a, BRAID_FLOAT32), b32 = op::cast(b, BRAID_FLOAT32);
    TensorRef s = op::add(a32.get(), b32.get());
    return op::cast(s.get(), a->dtype);
  }

  // Refuses a node whose gradient would read a value (saved_values) that an in-place write changed
  // after the node was recorded: the gradient would be computed from the new value, silently wrong.
  static void check_saved(const Node& n) {
    const uint32_t saved = saved_values(n);
    auto check = [&](const std::vector<TensorRef>& ts, std::span<const uint32_t> recorded, int first,
                     const char* what) {
      for (size_t k = 0; k < ts.size() && k < recorded.size() && first + k < 32; ++k) {
        if (!(saved >> (first + k) & 1u)) continue;
        const uint32_t now = ts[k]->storage->version.load(std::memory_order_relaxed);
        if (now != recorded[k])
          fail(BRAID_ERR_INVALID_STATE, "one of the tensors the gradient of ", n.name, " needs (its ", what, " ", k,
               ", shape ", ts[k]->shape.str(), ") was modified in place after ", n.name, " was recorded (version ", now,
               ", recorded at version ", recorded[k],
               "): its gradient would be computed from the new value. Update tensors after backward, or compute "
               "again after the update");
      }
    };
    check(n.inputs, n.in_versions, 0, "input");
    check(n.outputs, n.out_versions, kSavedOutput, "output");
  }

  // Writes or adds the leaf's final gradient into its buffer (by its req) and forgets it.
  void write_leaf(Meta* m) {
    auto it = grads_.find(m);
    if (it == grads_.end()) return;
    if (m->leaf && m->grad.get()) {
      if (m->req == BRAID_GRAD_ADD) {
        TensorRef sum = op::add(m->grad.get(), it->second.get());
        op::copy_into(sum.get(), m->grad.get());
      } else {
        op::copy_into(it->second.get(), m->grad.get());
      }
    }
    grads_.erase(it);
  }

  std::unordered_map<Meta*, TensorRef> grads_;
  std::vector<std::shared_ptr<Meta>> keep_;  // the keys stay alive while the map uses them
};

}  // namespace

extern "C" {

BRAID_API braid_status braid_autograd_set_recording(braid_context ctx, int32_t on, int32_t* prev) {
  return guard("braid_autograd_set_recording", [&] {
    const ContextRef c_use = use_context(ctx, "ctx");
    Context& c = *c_use;
    if (on) install_recorder(c);
    const bool was = c.recording.set(on != 0);
    if (prev) *prev = was ? 1 : 0;
  });
}

BRAID_API braid_status braid_autograd_is_recording(braid_context ctx, int32_t* out) {
  return guard("braid_autograd_is_recording", [&] {
    require(out, "out");
    *out = use_context(ctx, "ctx")->recording.on() ? 1 : 0;
  });
}

BRAID_API braid_status braid_tensor_attach_grad(braid_tensor t, braid_grad_req req) {
  return guard("braid_tensor_attach_grad", [&] {
    Tensor& x = checked_tensor(t, "t");
    const int32_t r = enum_int(req);
    if (r != BRAID_GRAD_NULL && r != BRAID_GRAD_WRITE && r != BRAID_GRAD_ADD)
      fail(BRAID_ERR_INVALID_ARGUMENT, "invalid braid_grad_req ", r);
    if (r == BRAID_GRAD_NULL) {
      if (x.ag) {
        x.ag->leaf = false;
        x.ag->req = BRAID_GRAD_NULL;
        x.ag->grad = TensorRef();
      }
      return;
    }
    if (!dtype_is_float(x.dtype))
      fail(BRAID_ERR_DTYPE, "gradients need a float32 or float64 tensor, not ", dtype_name(x.dtype));
    // A value with a history becomes a leaf for the ops recorded from now on; those recorded before
    // keep the edge to its history (as MXNet's attach_grad), so their gradients still reach its inputs.
    forget_history(*x.ctx, x);
    TensorRef grad = x.ag && x.ag->grad.get() ? TensorRef() : op::full_like(x, 0.0);
    install_recorder(*x.ctx);
    if (!x.ag) x.ag = std::make_shared<Meta>();
    if (grad.get()) {
      x.ag->grad = std::move(grad);
      x.ag->grad_version_used = x.ag->grad->storage->version.load(std::memory_order_relaxed);
    }
    x.ag->req = req;
    x.ag->leaf = true;
    x.ag->producers.clear();
  });
}

BRAID_API braid_status braid_tensor_grad(braid_tensor t, braid_tensor* out) {
  return guard("braid_tensor_grad", [&] {
    require(out, "out");
    *out = nullptr;
    Tensor& x = checked_tensor(t, "t");
    if (!x.ag || !x.ag->grad.get())
      fail(BRAID_ERR_INVALID_STATE, "no gradient is attached to this tensor (braid_tensor_attach_grad)");
    *out = op::retain(x.ag->grad.get()).release();
    HandleWatch::note(*out, +1);  // an existing handle handed out: a retain of it, as a hybrid's fn sees
  });
}

BRAID_API braid_status braid_backward(int32_t count, const braid_tensor* heads, const braid_tensor* head_grads,
                                      int32_t retain_graph) {
  return guard("braid_backward", [&] {
    if (count <= 0) fail(BRAID_ERR_INVALID_ARGUMENT, "count must be positive, got ", count);
    require(heads, "heads");
    Context& ctx = *checked_tensor(heads[0], "heads[0]").ctx;
    PauseRecording pause(ctx.recording);
    Backward bw(ctx);
    std::vector<Meta*> metas;
    for (int32_t i = 0; i < count; ++i) {
      Tensor& y = checked_tensor(heads[i], cat("heads[", i, "]").c_str());
      if (y.ctx != &ctx) fail(BRAID_ERR_INVALID_ARGUMENT, "heads belong to different contexts");
      if (!requires_grad(y))
        fail(BRAID_ERR_INVALID_STATE, "head ", i,
             " does not require a gradient: it was not computed while recording from a tensor with an attached "
             "gradient");
      if (history_is_stale(y))
        fail(BRAID_ERR_INVALID_STATE, "head ", i, " (shape ", y.shape.str(),
             ") was overwritten after it was computed, by an op autograd does not record (copy_into or write_host "
             "into a handle over the same memory, an in-place update), so its recorded history no longer made it");
      TensorRef g;
      if (head_grads && head_grads[i]) {
        Tensor& hg = checked_tensor(head_grads[i], cat("head_grads[", i, "]").c_str());
        if (!(hg.shape == y.shape))
          fail(BRAID_ERR_SHAPE, "head_grads[", i, "] has shape ", hg.shape.str(), ", head ", y.shape.str());
        if (hg.dtype != y.dtype)
          fail(BRAID_ERR_DTYPE, "head_grads[", i, "] has dtype ", dtype_name(hg.dtype), ", head ", dtype_name(y.dtype));
        if (&hg.device() != &y.device())
          fail(BRAID_ERR_DEVICE, "head_grads[", i, "] is on another device than its head");
        g = op::retain(&hg);
      } else {
        if (y.shape.numel() != 1)
          fail(BRAID_ERR_SHAPE, "head ", i, " has ", y.shape.numel(),
               " elements: pass a head gradient for a non-scalar head");
        g = op::full_like(y, 1.0);
      }
      bw.add(y.ag, std::move(g));
      metas.push_back(y.ag.get());
    }
    bw.run(metas, retain_graph != 0);
  });
}

}  // extern "C"
