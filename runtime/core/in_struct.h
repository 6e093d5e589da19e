// In-structs at the C boundary (option and parameter structs the application passes): read honouring
// the caller's struct_size, so an older caller (a shorter struct) gets the defaults for the fields it
// does not know (docs/ABI.md). Every version of a struct ends after a whole field, so a struct_size
// that ends inside one is no version at all: reading it would splice the caller's first bytes of a
// field into its default (a learning rate of 0.009999997 for half a double). It is refused.
#pragma once
#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <span>

#include "braid.h"
#include "core/error.h"

namespace braid {

struct FieldSpan {
  size_t offset, size, align;
};
#define BRAID_FIELD(T, f) \
  ::braid::FieldSpan { offsetof(T, f), sizeof(T::f), alignof(decltype(T::f)) }

// Whether fields, in order, are every field of a struct of that size and alignment after its leading
// uint32_t struct_size: each starts where the one before ends, give or take padding (always less than
// its own alignment), and the last one ends where the struct does, give or take its tail padding. A
// field added to abi/braid.h and not to the list below leaves a gap or a tail (the list once lacked
// braid_optimizer_params' beta1 and beta2, so a struct_size ending inside them was not refused); the
// static_assert in BRAID_FIELDS then stops the build.
constexpr bool lists_every_field(std::span<const FieldSpan> fields, size_t size, size_t align) {
  size_t end = sizeof(uint32_t);
  for (const FieldSpan& f : fields) {
    if (f.offset < end || f.offset - end >= f.align) return false;
    end = f.offset + f.size;
  }
  return (end + align - 1) / align * align == size;
}

// The fields after struct_size of each in-struct, one overload per struct (a struct read without one
// does not compile), checked against the struct itself at compile time.
#define BRAID_FIELDS(T, ...)                                                                   \
  inline constexpr FieldSpan kFieldsOf_##T[] = {__VA_ARGS__};                                  \
  static_assert(lists_every_field(kFieldsOf_##T, sizeof(T), alignof(T)), #T                    \
                ": BRAID_FIELDS in core/in_struct.h must list every field after struct_size, " \
                "in order, as abi/braid.h declares them");                                     \
  inline std::span<const FieldSpan> fields_of(const T*) { return kFieldsOf_##T; }
BRAID_FIELDS(braid_context_options, BRAID_FIELD(braid_context_options, backends),
             BRAID_FIELD(braid_context_options, backend_path), BRAID_FIELD(braid_context_options, engine_mode),
             BRAID_FIELD(braid_context_options, max_inflight_ops),
             BRAID_FIELD(braid_context_options, max_inflight_bytes), BRAID_FIELD(braid_context_options, profile_path),
             BRAID_FIELD(braid_context_options, seed), BRAID_FIELD(braid_context_options, compute_queues))
BRAID_FIELDS(braid_conv2d_params, BRAID_FIELD(braid_conv2d_params, stride), BRAID_FIELD(braid_conv2d_params, padding))
BRAID_FIELDS(braid_pool2d_params, BRAID_FIELD(braid_pool2d_params, kind), BRAID_FIELD(braid_pool2d_params, kernel),
             BRAID_FIELD(braid_pool2d_params, stride), BRAID_FIELD(braid_pool2d_params, padding),
             BRAID_FIELD(braid_pool2d_params, global))
BRAID_FIELDS(braid_batch_norm_params, BRAID_FIELD(braid_batch_norm_params, eps),
             BRAID_FIELD(braid_batch_norm_params, momentum), BRAID_FIELD(braid_batch_norm_params, training))
BRAID_FIELDS(braid_adam_params, BRAID_FIELD(braid_adam_params, lr), BRAID_FIELD(braid_adam_params, beta1),
             BRAID_FIELD(braid_adam_params, beta2), BRAID_FIELD(braid_adam_params, epsilon),
             BRAID_FIELD(braid_adam_params, weight_decay), BRAID_FIELD(braid_adam_params, step))
BRAID_FIELDS(braid_dataset_options, BRAID_FIELD(braid_dataset_options, name), BRAID_FIELD(braid_dataset_options, dir),
             BRAID_FIELD(braid_dataset_options, split))
BRAID_FIELDS(braid_batch_iterator_options, BRAID_FIELD(braid_batch_iterator_options, batch_size),
             BRAID_FIELD(braid_batch_iterator_options, shuffle), BRAID_FIELD(braid_batch_iterator_options, seed),
             BRAID_FIELD(braid_batch_iterator_options, drop_last), BRAID_FIELD(braid_batch_iterator_options, device),
             BRAID_FIELD(braid_batch_iterator_options, prefetch), BRAID_FIELD(braid_batch_iterator_options, num_parts),
             BRAID_FIELD(braid_batch_iterator_options, part_index))
BRAID_FIELDS(braid_collective_options, BRAID_FIELD(braid_collective_options, op),
             BRAID_FIELD(braid_collective_options, algorithm))
BRAID_FIELDS(braid_optimizer_params, BRAID_FIELD(braid_optimizer_params, kind),
             BRAID_FIELD(braid_optimizer_params, learning_rate), BRAID_FIELD(braid_optimizer_params, momentum),
             BRAID_FIELD(braid_optimizer_params, weight_decay), BRAID_FIELD(braid_optimizer_params, beta1),
             BRAID_FIELD(braid_optimizer_params, beta2), BRAID_FIELD(braid_optimizer_params, epsilon),
             BRAID_FIELD(braid_optimizer_params, rescale_grad))
BRAID_FIELDS(braid_trainer_options, BRAID_FIELD(braid_trainer_options, optimizer),
             BRAID_FIELD(braid_trainer_options, bucket_bytes), BRAID_FIELD(braid_trainer_options, algorithm),
             BRAID_FIELD(braid_trainer_options, flags))
BRAID_FIELDS(braid_process_group_options, BRAID_FIELD(braid_process_group_options, rank),
             BRAID_FIELD(braid_process_group_options, world_size),
             BRAID_FIELD(braid_process_group_options, master_addr),
             BRAID_FIELD(braid_process_group_options, master_port), BRAID_FIELD(braid_process_group_options, backend),
             BRAID_FIELD(braid_process_group_options, timeout_seconds), BRAID_FIELD(braid_process_group_options, flags))
#undef BRAID_FIELDS
// braid_trainer_options embeds braid_optimizer_params by value; the Trainer reads the fields after it
// from where the caller's optimizer ends (its own struct_size: read_trainer_options in
// parallel/trainer.cpp), so braid_optimizer_params may grow at its end like any in-struct.
static_assert(offsetof(braid_trainer_options, bucket_bytes) ==
                  offsetof(braid_trainer_options, optimizer) + sizeof(braid_optimizer_params),
              "bucket_bytes must follow the embedded optimizer directly (read_trainer_options relies on it)");

// *in over defaults, up to the caller's struct_size (kept in the result); defaults when in is NULL.
// `what` names the struct in errors ("params", "options").
template <class T>
T read_in_struct(const T* in, T defaults, const char* what) {
  if (!in) return defaults;
  const uint32_t size = in->struct_size;
  if (size < sizeof(uint32_t) || size > 4096)
    fail(BRAID_ERR_INVALID_ARGUMENT, what, "->struct_size ", size,
         " is not a valid size; set it to sizeof the struct (the *_INIT macro does)");
  for (const FieldSpan& f : fields_of(static_cast<const T*>(nullptr)))
    if (size > f.offset && size < f.offset + f.size)
      fail(BRAID_ERR_INVALID_ARGUMENT, what, "->struct_size ", size,
           " ends inside a field, so it is the size of no version of the struct; set it to sizeof the struct (the "
           "*_INIT macro does)");
  std::memcpy(&defaults, in, std::min<size_t>(size, sizeof(T)));
  return defaults;
}

}  // namespace braid
