// What the Trainer needs of a process group, as an interface: runtime/distributed (the layer above)
// implements it and hands it down (docs/ARCHITECTURE.md, "Layers"), so this layer never includes that
// one. Both calls push engine ops and return at once, like the in-process collectives.
#pragma once
#include <cstdint>
#include <memory>

#include "braid.h"
#include "tensor/tensor.h"

namespace braid::parallel {

class CrossProcess {
 public:
  virtual ~CrossProcess() = default;
  // t becomes the sum of every process's t.
  virtual void allreduce_sum(Tensor& t) = 0;
  // Every process's t becomes root's.
  virtual void broadcast(Tensor& t, int32_t root) = 0;
  // The context the group's calls run in: the trainer's tensors must be of it.
  virtual const ::braid_context_t* context() const = 0;
};

// Makes the trainer reduce its gradients across the processes of `cross` after its own replicas
// (NULL: within this process only), and broadcasts its parameters from process 0 so that every
// process starts from the same values. Throws BRAID_ERR_INVALID_ARGUMENT for a trainer of another
// context.
void trainer_set_cross_process(braid_trainer tr, std::shared_ptr<CrossProcess> cross);

}  // namespace braid::parallel
