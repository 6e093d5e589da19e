// Collectives over a list of same-shape tensors on several devices, built from engine-scheduled
// copies (transfer queues) and in-place reductions over element ranges (each device's comm queue),
// so they overlap with compute and order themselves after the ops that wrote their inputs. See
// docs/PARALLEL.md for the algorithms and how one is chosen.
#pragma once
#include <cstdint>
#include <span>

#include "braid.h"
#include "tensor/tensor.h"

namespace braid::parallel {

// One reduction: the binary kernel op that combines two values, and the scale applied at the end
// (AVG: 1/n). Validated against the dtype by make_reduction, which takes the op by reference: an
// out-of-range value from the application is read as an integer, never loaded as the enum (UBSan).
struct Reduction {
  braid_binary_op combine = BRAID_BINARY_ADD;
  bool average = false;
};
Reduction make_reduction(const braid_collective_op& op, braid_dtype dtype, const char* name);

// Checks a collective's tensor list: count >= 1, valid live handles of one context, one dtype and
// shape, distinct storages. Returns the tensors.
std::vector<Tensor*> checked_group(int32_t count, const braid_tensor* tensors, const char* name);
// A device or tensor count of a call: positive (checked before its arrays: an empty C++ list's data()
// is NULL, and the count is what is wrong).
void check_count(int32_t count, const char* name);

// The algorithm AUTO picks for `bytes` per tensor over these devices.
braid_allreduce_algorithm choose_allreduce(std::span<Tensor* const> ts, uint64_t bytes);
// Whether the DIRECT allreduce can run over these tensors' devices.
bool direct_possible(std::span<Tensor* const> ts);

// Each collective pushes its ops as one Engine::PushUnit: against any other thread's ops (another
// collective on the same tensors included) it behaves as one op, ordered by the engine like any other.
// In place: every tensor becomes the reduction of all of them.
void allreduce(std::span<Tensor* const> ts, Reduction r, braid_allreduce_algorithm algorithm);
// In place: ts[root] becomes the reduction of all of them; the others are left as they were.
void reduce(std::span<Tensor* const> ts, int32_t root, Reduction r);
// Every tensor becomes a copy of ts[root] (a binomial tree rooted at root).
void broadcast(std::span<Tensor* const> ts, int32_t root);
// outs[d] (count * numel elements) = the concatenation of ins in order, for every d.
void all_gather(std::span<Tensor* const> ins, std::span<Tensor* const> outs);
// outs[d] (numel / count elements) = part d of the reduction of ins.
void reduce_scatter(std::span<Tensor* const> ins, std::span<Tensor* const> outs, Reduction r);

}  // namespace braid::parallel
