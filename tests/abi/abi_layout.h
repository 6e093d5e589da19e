/* abi_layout.h — the public ABI pinned: sizes, offsets and enumerator values of abi/braid.h and
 * abi/braid_backend.h as observed on x86-64 Linux (LP64, System V) for ABI 1.0. Included from C++
 * (abi_layout_test.cpp) and from C11 (c_client.c), so both languages must agree with the pinned values.
 *
 * A failing assertion here means an ABI change. Appending a field to an option struct or a function
 * to braid_backend_api (with a minor bump) is allowed: update the size pin. Changing an existing
 * offset or enumerator value is not (it needs a major version).
 */
#ifndef BRAID_TESTS_ABI_LAYOUT_H_
#define BRAID_TESTS_ABI_LAYOUT_H_

#include <stddef.h>

#include "braid_backend.h"

#ifdef __cplusplus
#define BRAID_PIN_ASSERT(cond, msg) static_assert(cond, msg)
#define BRAID_PIN_ALIGNOF(type) alignof(type)
#else
#define BRAID_PIN_ASSERT(cond, msg) _Static_assert(cond, msg)
#define BRAID_PIN_ALIGNOF(type) _Alignof(type)
#endif

#define BRAID_PIN_SIZE(type, size) BRAID_PIN_ASSERT(sizeof(type) == (size), "ABI change: sizeof(" #type ")")
#define BRAID_PIN_ALIGN(type, align) \
  BRAID_PIN_ASSERT(BRAID_PIN_ALIGNOF(type) == (align), "ABI change: alignment of " #type)
#define BRAID_PIN_OFFSET(type, field, off) \
  BRAID_PIN_ASSERT(offsetof(type, field) == (off), "ABI change: offsetof(" #type ", " #field ")")
#define BRAID_PIN_VALUE(name, value) BRAID_PIN_ASSERT((int)(name) == (value), "ABI change: value of " #name)

/* Versions (this file pins ABI 1.0; a bump means reviewing the pins below). */
BRAID_PIN_ASSERT(BRAID_ABI_MAJOR == 1 && BRAID_ABI_MINOR == 13, "braid.h version changed: review abi_layout.h");
BRAID_PIN_ASSERT(BRAID_BACKEND_ABI_MAJOR == 1 && BRAID_BACKEND_ABI_MINOR == 7,
                 "braid_backend.h version changed: review abi_layout.h");
BRAID_PIN_ASSERT(BRAID_MAX_DIMS == 8, "ABI change: BRAID_MAX_DIMS");
BRAID_PIN_ASSERT(BRAID_KERNEL_MAX_INPUTS == 6, "ABI change: BRAID_KERNEL_MAX_INPUTS");
BRAID_PIN_ASSERT(BRAID_KERNEL_MAX_OUTPUTS == 4, "ABI change: BRAID_KERNEL_MAX_OUTPUTS");
BRAID_PIN_ASSERT(BRAID_MAX_WAITS == 16, "ABI change: BRAID_MAX_WAITS");

/* Enumerator values: portable (they do not depend on the target). */
BRAID_PIN_ASSERT(sizeof(braid_status) == 4, "ABI change: sizeof(braid_status)");
BRAID_PIN_VALUE(BRAID_OK, 0);
BRAID_PIN_VALUE(BRAID_ERR_INVALID_ARGUMENT, 1);
BRAID_PIN_VALUE(BRAID_ERR_SHAPE, 2);
BRAID_PIN_VALUE(BRAID_ERR_DTYPE, 3);
BRAID_PIN_VALUE(BRAID_ERR_DEVICE, 4);
BRAID_PIN_VALUE(BRAID_ERR_OUT_OF_MEMORY, 5);
BRAID_PIN_VALUE(BRAID_ERR_UNSUPPORTED, 6);
BRAID_PIN_VALUE(BRAID_ERR_NOT_FOUND, 7);
BRAID_PIN_VALUE(BRAID_ERR_ABI_MISMATCH, 8);
BRAID_PIN_VALUE(BRAID_ERR_INVALID_STATE, 9);
BRAID_PIN_VALUE(BRAID_ERR_KERNEL, 10);
BRAID_PIN_VALUE(BRAID_ERR_IO, 11);
BRAID_PIN_VALUE(BRAID_ERR_TIMEOUT, 12);
BRAID_PIN_VALUE(BRAID_ERR_INTERNAL, 13);
BRAID_PIN_ASSERT(sizeof(braid_dtype) == 4, "ABI change: sizeof(braid_dtype)");
BRAID_PIN_VALUE(BRAID_FLOAT32, 0);
BRAID_PIN_VALUE(BRAID_FLOAT64, 1);
BRAID_PIN_VALUE(BRAID_INT32, 2);
BRAID_PIN_VALUE(BRAID_INT64, 3);
BRAID_PIN_VALUE(BRAID_UINT8, 4);
BRAID_PIN_VALUE(BRAID_FLOAT16, 5);
BRAID_PIN_VALUE(BRAID_BFLOAT16, 6);
BRAID_PIN_VALUE(BRAID_BOOL, 7);
BRAID_PIN_VALUE(BRAID_DTYPE_COUNT, 8);
BRAID_PIN_ASSERT(sizeof(braid_engine_mode) == 4, "ABI change: sizeof(braid_engine_mode)");
BRAID_PIN_VALUE(BRAID_ENGINE_DEFAULT, 0);
BRAID_PIN_VALUE(BRAID_ENGINE_ASYNC, 1);
BRAID_PIN_VALUE(BRAID_ENGINE_SYNC, 2);
BRAID_PIN_ASSERT(sizeof(braid_device_kind) == 4, "ABI change: sizeof(braid_device_kind)");
BRAID_PIN_VALUE(BRAID_DEVICE_CPU, 0);
BRAID_PIN_VALUE(BRAID_DEVICE_GPU_DISCRETE, 1);
BRAID_PIN_VALUE(BRAID_DEVICE_GPU_INTEGRATED, 2);
BRAID_PIN_VALUE(BRAID_DEVICE_GPU_VIRTUAL, 3);
BRAID_PIN_VALUE(BRAID_DEVICE_OTHER, 4);
BRAID_PIN_ASSERT(sizeof(braid_unary_op) == 4, "ABI change: sizeof(braid_unary_op)");
BRAID_PIN_VALUE(BRAID_UNARY_NEG, 0);
BRAID_PIN_VALUE(BRAID_UNARY_ABS, 1);
BRAID_PIN_VALUE(BRAID_UNARY_EXP, 2);
BRAID_PIN_VALUE(BRAID_UNARY_LOG, 3);
BRAID_PIN_VALUE(BRAID_UNARY_SQRT, 4);
BRAID_PIN_VALUE(BRAID_UNARY_RELU, 5);
BRAID_PIN_VALUE(BRAID_UNARY_SIGMOID, 6);
BRAID_PIN_VALUE(BRAID_UNARY_TANH, 7);
BRAID_PIN_VALUE(BRAID_UNARY_SQUARE, 8);
BRAID_PIN_VALUE(BRAID_UNARY_SIGN, 9);
BRAID_PIN_VALUE(BRAID_UNARY_COUNT, 10);
BRAID_PIN_ASSERT(sizeof(braid_binary_op) == 4, "ABI change: sizeof(braid_binary_op)");
BRAID_PIN_VALUE(BRAID_BINARY_ADD, 0);
BRAID_PIN_VALUE(BRAID_BINARY_SUB, 1);
BRAID_PIN_VALUE(BRAID_BINARY_MUL, 2);
BRAID_PIN_VALUE(BRAID_BINARY_DIV, 3);
BRAID_PIN_VALUE(BRAID_BINARY_POW, 4);
BRAID_PIN_VALUE(BRAID_BINARY_MAXIMUM, 5);
BRAID_PIN_VALUE(BRAID_BINARY_MINIMUM, 6);
BRAID_PIN_VALUE(BRAID_BINARY_EQUAL, 7);
BRAID_PIN_VALUE(BRAID_BINARY_LESS, 8);
BRAID_PIN_VALUE(BRAID_BINARY_GREATER, 9);
BRAID_PIN_VALUE(BRAID_BINARY_FLOOR_DIVIDE, 10);
BRAID_PIN_VALUE(BRAID_BINARY_MOD, 11);
BRAID_PIN_VALUE(BRAID_BINARY_COUNT, 12);
BRAID_PIN_ASSERT(sizeof(braid_compare_op) == 4, "ABI change: sizeof(braid_compare_op)");
BRAID_PIN_VALUE(BRAID_COMPARE_EQUAL, 0);
BRAID_PIN_VALUE(BRAID_COMPARE_NOT_EQUAL, 1);
BRAID_PIN_VALUE(BRAID_COMPARE_LESS, 2);
BRAID_PIN_VALUE(BRAID_COMPARE_LESS_EQUAL, 3);
BRAID_PIN_VALUE(BRAID_COMPARE_GREATER, 4);
BRAID_PIN_VALUE(BRAID_COMPARE_GREATER_EQUAL, 5);
BRAID_PIN_VALUE(BRAID_COMPARE_COUNT, 6);
BRAID_PIN_ASSERT(sizeof(braid_reduce_op) == 4, "ABI change: sizeof(braid_reduce_op)");
BRAID_PIN_VALUE(BRAID_REDUCE_SUM, 0);
BRAID_PIN_VALUE(BRAID_REDUCE_MEAN, 1);
BRAID_PIN_VALUE(BRAID_REDUCE_MAX, 2);
BRAID_PIN_VALUE(BRAID_REDUCE_MIN, 3);
BRAID_PIN_VALUE(BRAID_REDUCE_NORM, 4);
BRAID_PIN_VALUE(BRAID_REDUCE_COUNT, 5);
BRAID_PIN_ASSERT(sizeof(braid_pool_kind) == 4, "ABI change: sizeof(braid_pool_kind)");
BRAID_PIN_VALUE(BRAID_POOL_MAX, 0);
BRAID_PIN_VALUE(BRAID_POOL_AVG, 1);
BRAID_PIN_ASSERT(sizeof(braid_grad_req) == 4, "ABI change: sizeof(braid_grad_req)");
BRAID_PIN_VALUE(BRAID_GRAD_NULL, 0);
BRAID_PIN_VALUE(BRAID_GRAD_WRITE, 1);
BRAID_PIN_VALUE(BRAID_GRAD_ADD, 2);
BRAID_PIN_ASSERT(sizeof(braid_kernel_op) == 4, "ABI change: sizeof(braid_kernel_op)");
BRAID_PIN_VALUE(BRAID_KOP_FILL, 0);
BRAID_PIN_VALUE(BRAID_KOP_ARANGE, 1);
BRAID_PIN_VALUE(BRAID_KOP_RANDOM_UNIFORM, 2);
BRAID_PIN_VALUE(BRAID_KOP_RANDOM_NORMAL, 3);
BRAID_PIN_VALUE(BRAID_KOP_COPY, 4);
BRAID_PIN_VALUE(BRAID_KOP_UNARY, 5);
BRAID_PIN_VALUE(BRAID_KOP_BINARY, 6);
BRAID_PIN_VALUE(BRAID_KOP_BINARY_SCALAR, 7);
BRAID_PIN_VALUE(BRAID_KOP_REDUCE, 8);
BRAID_PIN_VALUE(BRAID_KOP_ARGMAX, 9);
BRAID_PIN_VALUE(BRAID_KOP_MATMUL, 10);
BRAID_PIN_VALUE(BRAID_KOP_CONV2D, 11);
BRAID_PIN_VALUE(BRAID_KOP_POOL2D, 12);
BRAID_PIN_VALUE(BRAID_KOP_BATCH_NORM, 13);
BRAID_PIN_VALUE(BRAID_KOP_SOFTMAX, 14);
BRAID_PIN_VALUE(BRAID_KOP_SOFTMAX_CE, 15);
BRAID_PIN_VALUE(BRAID_KOP_DROPOUT, 16);
BRAID_PIN_VALUE(BRAID_KOP_SGD_UPDATE, 17);
BRAID_PIN_VALUE(BRAID_KOP_SGD_MOMENTUM, 18);
BRAID_PIN_VALUE(BRAID_KOP_ADAM_UPDATE, 19);
BRAID_PIN_VALUE(BRAID_KOP_CONV2D_BWD_DATA, 20);
BRAID_PIN_VALUE(BRAID_KOP_CONV2D_BWD_WEIGHT, 21);
BRAID_PIN_VALUE(BRAID_KOP_POOL2D_BWD, 22);
BRAID_PIN_VALUE(BRAID_KOP_BATCH_NORM_BWD, 23);
BRAID_PIN_VALUE(BRAID_KOP_SOFTMAX_CE_BWD, 24);
BRAID_PIN_VALUE(BRAID_KOP_COMBINE, 25);
BRAID_PIN_VALUE(BRAID_KOP_FUSED_ELEMENTWISE, 26);
BRAID_PIN_VALUE(BRAID_KOP_WHERE, 27);
BRAID_PIN_VALUE(BRAID_KOP_TAKE, 28);
BRAID_PIN_VALUE(BRAID_KOP_TAKE_BWD, 29);
BRAID_PIN_VALUE(BRAID_KOP_COUNT, 30);
BRAID_PIN_ASSERT(sizeof(braid_work_kind) == 4, "ABI change: sizeof(braid_work_kind)");
BRAID_PIN_VALUE(BRAID_WORK_KERNEL, 0);
BRAID_PIN_VALUE(BRAID_WORK_COPY, 1);
BRAID_PIN_VALUE(BRAID_WORK_MARKER, 2);
BRAID_PIN_VALUE(BRAID_WORK_KERNELS, 3);
BRAID_PIN_ASSERT(sizeof(braid_queue_kind) == 4, "ABI change: sizeof(braid_queue_kind)");
BRAID_PIN_VALUE(BRAID_QUEUE_COMPUTE, 0);
BRAID_PIN_VALUE(BRAID_QUEUE_TRANSFER, 1);
BRAID_PIN_ASSERT(sizeof(braid_log_level) == 4, "ABI change: sizeof(braid_log_level)");
BRAID_PIN_VALUE(BRAID_LOG_DEBUG, 0);
BRAID_PIN_VALUE(BRAID_LOG_INFO, 1);
BRAID_PIN_VALUE(BRAID_LOG_WARNING, 2);
BRAID_PIN_VALUE(BRAID_LOG_ERROR, 3);

/* Every option/params/info struct and every table starts with uint32_t struct_size (all targets). */
BRAID_PIN_OFFSET(braid_context_options, struct_size, 0);
BRAID_PIN_OFFSET(braid_backend_info, struct_size, 0);
BRAID_PIN_OFFSET(braid_device_info, struct_size, 0);
BRAID_PIN_OFFSET(braid_memory_stats, struct_size, 0);
BRAID_PIN_OFFSET(braid_conv2d_params, struct_size, 0);
BRAID_PIN_OFFSET(braid_pool2d_params, struct_size, 0);
BRAID_PIN_OFFSET(braid_batch_norm_params, struct_size, 0);
BRAID_PIN_OFFSET(braid_adam_params, struct_size, 0);
BRAID_PIN_OFFSET(braid_kernel_call, struct_size, 0);
BRAID_PIN_OFFSET(braid_copy_desc, struct_size, 0);
BRAID_PIN_OFFSET(braid_work, struct_size, 0);
BRAID_PIN_OFFSET(braid_host_api, struct_size, 0);
BRAID_PIN_OFFSET(braid_backend_device_props, struct_size, 0);
BRAID_PIN_OFFSET(braid_backend_api, struct_size, 0);

/* Scalar and handle types. */
BRAID_PIN_ASSERT(sizeof(braid_device) == 4, "ABI change: braid_device is int32_t");

#if defined(__x86_64__) && defined(__LP64__)
BRAID_PIN_ASSERT(sizeof(braid_context) == 8 && sizeof(braid_tensor) == 8, "ABI change: handle size");

BRAID_PIN_SIZE(braid_context_options, 72);
BRAID_PIN_ALIGN(braid_context_options, 8);
BRAID_PIN_OFFSET(braid_context_options, struct_size, 0);
BRAID_PIN_OFFSET(braid_context_options, backends, 8);
BRAID_PIN_OFFSET(braid_context_options, backend_path, 16);
BRAID_PIN_OFFSET(braid_context_options, engine_mode, 24);
BRAID_PIN_OFFSET(braid_context_options, max_inflight_ops, 32);
BRAID_PIN_OFFSET(braid_context_options, max_inflight_bytes, 40);
BRAID_PIN_OFFSET(braid_context_options, profile_path, 48);
BRAID_PIN_OFFSET(braid_context_options, seed, 56);
BRAID_PIN_OFFSET(braid_context_options, compute_queues, 64); /* 1.2 */

BRAID_PIN_SIZE(braid_backend_info, 48);
BRAID_PIN_ALIGN(braid_backend_info, 8);
BRAID_PIN_OFFSET(braid_backend_info, struct_size, 0);
BRAID_PIN_OFFSET(braid_backend_info, name, 8);
BRAID_PIN_OFFSET(braid_backend_info, path, 16);
BRAID_PIN_OFFSET(braid_backend_info, abi_major, 24);
BRAID_PIN_OFFSET(braid_backend_info, abi_minor, 28);
BRAID_PIN_OFFSET(braid_backend_info, loaded, 32);
BRAID_PIN_OFFSET(braid_backend_info, device_count, 36);
BRAID_PIN_OFFSET(braid_backend_info, reason, 40);

BRAID_PIN_SIZE(braid_device_info, 120);
BRAID_PIN_ALIGN(braid_device_info, 8);
BRAID_PIN_OFFSET(braid_device_info, struct_size, 0);
BRAID_PIN_OFFSET(braid_device_info, id, 8);
BRAID_PIN_OFFSET(braid_device_info, backend, 16);
BRAID_PIN_OFFSET(braid_device_info, name, 24);
BRAID_PIN_OFFSET(braid_device_info, kind, 32);
BRAID_PIN_OFFSET(braid_device_info, backend_index, 36);
BRAID_PIN_OFFSET(braid_device_info, uuid, 40);
BRAID_PIN_OFFSET(braid_device_info, memory_bytes, 56);
BRAID_PIN_OFFSET(braid_device_info, compute_units, 64);
BRAID_PIN_OFFSET(braid_device_info, compute_queues, 68);
BRAID_PIN_OFFSET(braid_device_info, transfer_queues, 72);
BRAID_PIN_OFFSET(braid_device_info, l1_cache_bytes, 80);
BRAID_PIN_OFFSET(braid_device_info, l2_cache_bytes, 88);
BRAID_PIN_OFFSET(braid_device_info, l3_cache_bytes, 96);
BRAID_PIN_OFFSET(braid_device_info, dtype_mask, 104);
BRAID_PIN_OFFSET(braid_device_info, properties_json, 112); /* 1.1 */

BRAID_PIN_SIZE(braid_memory_stats, 56);
BRAID_PIN_ALIGN(braid_memory_stats, 8);
BRAID_PIN_OFFSET(braid_memory_stats, struct_size, 0);
BRAID_PIN_OFFSET(braid_memory_stats, allocated_bytes, 8);
BRAID_PIN_OFFSET(braid_memory_stats, reserved_bytes, 16);
BRAID_PIN_OFFSET(braid_memory_stats, peak_allocated_bytes, 24);
BRAID_PIN_OFFSET(braid_memory_stats, peak_reserved_bytes, 32);
BRAID_PIN_OFFSET(braid_memory_stats, alloc_count, 40);
BRAID_PIN_OFFSET(braid_memory_stats, backend_alloc_count, 48);

BRAID_PIN_SIZE(braid_device_perf, 56); /* 1.4 */
BRAID_PIN_ALIGN(braid_device_perf, 8);
BRAID_PIN_OFFSET(braid_device_perf, struct_size, 0);
BRAID_PIN_OFFSET(braid_device_perf, matmul_flops_f32, 8);
BRAID_PIN_OFFSET(braid_device_perf, matmul_flops_f64, 16);
BRAID_PIN_OFFSET(braid_device_perf, copy_bytes_per_s, 24);
BRAID_PIN_OFFSET(braid_device_perf, host_to_device_bytes_per_s, 32);
BRAID_PIN_OFFSET(braid_device_perf, device_to_host_bytes_per_s, 40);
BRAID_PIN_OFFSET(braid_device_perf, seconds, 48);

/* Graph mode (1.5). */
BRAID_PIN_VALUE(BRAID_GRAPH_PASS_DEAD_CODE, 1);
BRAID_PIN_VALUE(BRAID_GRAPH_PASS_COMMON_SUBEXPRESSIONS, 2);
BRAID_PIN_VALUE(BRAID_GRAPH_PASS_FOLD_CONSTANTS, 4);
BRAID_PIN_VALUE(BRAID_GRAPH_PASS_PLAN_MEMORY, 8);
BRAID_PIN_VALUE(BRAID_GRAPH_PASS_FUSE_ELEMENTWISE, 16);
BRAID_PIN_VALUE(BRAID_GRAPH_PASS_ALL, 31);
BRAID_PIN_SIZE(braid_graph_info, 56);
BRAID_PIN_OFFSET(braid_graph_info, num_inputs, 4);
BRAID_PIN_OFFSET(braid_graph_info, device, 20);
BRAID_PIN_OFFSET(braid_graph_info, pushes_per_run, 24);
BRAID_PIN_OFFSET(braid_graph_info, workspace_bytes, 32);
BRAID_PIN_OFFSET(braid_graph_info, intermediate_bytes, 40);
BRAID_PIN_OFFSET(braid_graph_info, passes, 48);
BRAID_PIN_OFFSET(braid_graph_info, kernels_per_run, 52);
BRAID_PIN_SIZE(braid_graph_node_info, 104);
BRAID_PIN_OFFSET(braid_graph_node_info, name, 8);
BRAID_PIN_OFFSET(braid_graph_node_info, kernel, 16);
BRAID_PIN_OFFSET(braid_graph_node_info, num_inputs, 24);
BRAID_PIN_OFFSET(braid_graph_node_info, dtype, 32);
BRAID_PIN_OFFSET(braid_graph_node_info, ndim, 36);
BRAID_PIN_OFFSET(braid_graph_node_info, shape, 40);
BRAID_PIN_SIZE(braid_graph_tensor_info, 80);
BRAID_PIN_OFFSET(braid_graph_tensor_info, dtype, 4);
BRAID_PIN_OFFSET(braid_graph_tensor_info, ndim, 8);
BRAID_PIN_OFFSET(braid_graph_tensor_info, shape, 16);

BRAID_PIN_SIZE(braid_conv2d_params, 20);
BRAID_PIN_ALIGN(braid_conv2d_params, 4);
BRAID_PIN_OFFSET(braid_conv2d_params, struct_size, 0);
BRAID_PIN_OFFSET(braid_conv2d_params, stride, 4);
BRAID_PIN_OFFSET(braid_conv2d_params, padding, 12);

BRAID_PIN_SIZE(braid_pool2d_params, 36);
BRAID_PIN_ALIGN(braid_pool2d_params, 4);
BRAID_PIN_OFFSET(braid_pool2d_params, struct_size, 0);
BRAID_PIN_OFFSET(braid_pool2d_params, kind, 4);
BRAID_PIN_OFFSET(braid_pool2d_params, kernel, 8);
BRAID_PIN_OFFSET(braid_pool2d_params, stride, 16);
BRAID_PIN_OFFSET(braid_pool2d_params, padding, 24);
BRAID_PIN_OFFSET(braid_pool2d_params, global, 32);

BRAID_PIN_SIZE(braid_batch_norm_params, 32);
BRAID_PIN_ALIGN(braid_batch_norm_params, 8);
BRAID_PIN_OFFSET(braid_batch_norm_params, struct_size, 0);
BRAID_PIN_OFFSET(braid_batch_norm_params, eps, 8);
BRAID_PIN_OFFSET(braid_batch_norm_params, momentum, 16);
BRAID_PIN_OFFSET(braid_batch_norm_params, training, 24);

BRAID_PIN_SIZE(braid_adam_params, 56);
BRAID_PIN_ALIGN(braid_adam_params, 8);
BRAID_PIN_OFFSET(braid_adam_params, struct_size, 0);
BRAID_PIN_OFFSET(braid_adam_params, lr, 8);
BRAID_PIN_OFFSET(braid_adam_params, beta1, 16);
BRAID_PIN_OFFSET(braid_adam_params, beta2, 24);
BRAID_PIN_OFFSET(braid_adam_params, epsilon, 32);
BRAID_PIN_OFFSET(braid_adam_params, weight_decay, 40);
BRAID_PIN_OFFSET(braid_adam_params, step, 48);

BRAID_PIN_SIZE(braid_buffer_view, 152);
BRAID_PIN_ALIGN(braid_buffer_view, 8);
BRAID_PIN_OFFSET(braid_buffer_view, buffer, 0);
BRAID_PIN_OFFSET(braid_buffer_view, byte_offset, 8);
BRAID_PIN_OFFSET(braid_buffer_view, dtype, 16);
BRAID_PIN_OFFSET(braid_buffer_view, ndim, 20);
BRAID_PIN_OFFSET(braid_buffer_view, shape, 24);
BRAID_PIN_OFFSET(braid_buffer_view, strides, 88);

BRAID_PIN_SIZE(braid_kernel_call, 1664);
BRAID_PIN_ALIGN(braid_kernel_call, 8);
BRAID_PIN_OFFSET(braid_kernel_call, struct_size, 0);
BRAID_PIN_OFFSET(braid_kernel_call, op, 4);
BRAID_PIN_OFFSET(braid_kernel_call, num_inputs, 8);
BRAID_PIN_OFFSET(braid_kernel_call, num_outputs, 12);
BRAID_PIN_OFFSET(braid_kernel_call, inputs, 16);
BRAID_PIN_OFFSET(braid_kernel_call, outputs, 928);
BRAID_PIN_OFFSET(braid_kernel_call, i, 1536);
BRAID_PIN_OFFSET(braid_kernel_call, f, 1600);

BRAID_PIN_SIZE(braid_copy_desc, 64);
BRAID_PIN_ALIGN(braid_copy_desc, 8);
BRAID_PIN_OFFSET(braid_copy_desc, struct_size, 0);
BRAID_PIN_OFFSET(braid_copy_desc, src_buffer, 8);
BRAID_PIN_OFFSET(braid_copy_desc, src_offset, 16);
BRAID_PIN_OFFSET(braid_copy_desc, src_host, 24);
BRAID_PIN_OFFSET(braid_copy_desc, dst_buffer, 32);
BRAID_PIN_OFFSET(braid_copy_desc, dst_offset, 40);
BRAID_PIN_OFFSET(braid_copy_desc, dst_host, 48);
BRAID_PIN_OFFSET(braid_copy_desc, bytes, 56);

BRAID_PIN_SIZE(braid_work, 328);
BRAID_PIN_ALIGN(braid_work, 8);
BRAID_PIN_OFFSET(braid_work, struct_size, 0);
BRAID_PIN_OFFSET(braid_work, kind, 4);
BRAID_PIN_OFFSET(braid_work, kernel, 8);
BRAID_PIN_OFFSET(braid_work, copy, 16);
BRAID_PIN_OFFSET(braid_work, num_waits, 24);
BRAID_PIN_OFFSET(braid_work, waits, 32);
BRAID_PIN_OFFSET(braid_work, wait_values, 160);
BRAID_PIN_OFFSET(braid_work, signal, 288);
BRAID_PIN_OFFSET(braid_work, signal_value, 296);
BRAID_PIN_OFFSET(braid_work, token, 304);
BRAID_PIN_OFFSET(braid_work, flags, 312);
BRAID_PIN_OFFSET(braid_work, num_kernels, 316); /* ABI 1.3: a 1.2 host's braid_work ends here */
BRAID_PIN_OFFSET(braid_work, kernels, 320);

BRAID_PIN_SIZE(braid_host_api, 40);
BRAID_PIN_ALIGN(braid_host_api, 8);
BRAID_PIN_OFFSET(braid_host_api, struct_size, 0);
BRAID_PIN_OFFSET(braid_host_api, abi_major, 4);
BRAID_PIN_OFFSET(braid_host_api, abi_minor, 8);
BRAID_PIN_OFFSET(braid_host_api, log, 16);
BRAID_PIN_OFFSET(braid_host_api, work_begin, 24);
BRAID_PIN_OFFSET(braid_host_api, work_end, 32);

BRAID_PIN_SIZE(braid_backend_device_props, 208);
BRAID_PIN_ALIGN(braid_backend_device_props, 8);
BRAID_PIN_OFFSET(braid_backend_device_props, struct_size, 0);
BRAID_PIN_OFFSET(braid_backend_device_props, name, 4);
BRAID_PIN_OFFSET(braid_backend_device_props, kind, 132);
BRAID_PIN_OFFSET(braid_backend_device_props, uuid, 136);
BRAID_PIN_OFFSET(braid_backend_device_props, memory_bytes, 152);
BRAID_PIN_OFFSET(braid_backend_device_props, compute_units, 160);
BRAID_PIN_OFFSET(braid_backend_device_props, compute_queues, 164);
BRAID_PIN_OFFSET(braid_backend_device_props, transfer_queues, 168);
BRAID_PIN_OFFSET(braid_backend_device_props, l1_cache_bytes, 176);
BRAID_PIN_OFFSET(braid_backend_device_props, l2_cache_bytes, 184);
BRAID_PIN_OFFSET(braid_backend_device_props, l3_cache_bytes, 192);
BRAID_PIN_OFFSET(braid_backend_device_props, dtype_mask, 200);
BRAID_PIN_OFFSET(braid_backend_device_props, host_visible, 204);

BRAID_PIN_SIZE(braid_backend_api, 216);
BRAID_PIN_ALIGN(braid_backend_api, 8);
BRAID_PIN_OFFSET(braid_backend_api, struct_size, 0);
BRAID_PIN_OFFSET(braid_backend_api, abi_major, 4);
BRAID_PIN_OFFSET(braid_backend_api, abi_minor, 8);
BRAID_PIN_OFFSET(braid_backend_api, name, 16);
BRAID_PIN_OFFSET(braid_backend_api, device_count, 24);
BRAID_PIN_OFFSET(braid_backend_api, device_props, 32);
BRAID_PIN_OFFSET(braid_backend_api, device_open, 40);
BRAID_PIN_OFFSET(braid_backend_api, device_close, 48);
BRAID_PIN_OFFSET(braid_backend_api, buffer_alloc, 56);
BRAID_PIN_OFFSET(braid_backend_api, buffer_free, 64);
BRAID_PIN_OFFSET(braid_backend_api, buffer_host_pointer, 72);
BRAID_PIN_OFFSET(braid_backend_api, queue_create, 80);
BRAID_PIN_OFFSET(braid_backend_api, queue_destroy, 88);
BRAID_PIN_OFFSET(braid_backend_api, queue_submit, 96);
BRAID_PIN_OFFSET(braid_backend_api, queue_flush, 104);
BRAID_PIN_OFFSET(braid_backend_api, semaphore_create, 112);
BRAID_PIN_OFFSET(braid_backend_api, semaphore_destroy, 120);
BRAID_PIN_OFFSET(braid_backend_api, semaphore_query, 128);
BRAID_PIN_OFFSET(braid_backend_api, semaphore_signal, 136);
BRAID_PIN_OFFSET(braid_backend_api, semaphore_wait, 144);
BRAID_PIN_OFFSET(braid_backend_api, semaphore_notify, 152);
BRAID_PIN_OFFSET(braid_backend_api, semaphore_fail, 160);
BRAID_PIN_OFFSET(braid_backend_api, supports, 168);
BRAID_PIN_OFFSET(braid_backend_api, shutdown, 176);
BRAID_PIN_OFFSET(braid_backend_api, device_props_json, 184);  /* 1.1 */
BRAID_PIN_OFFSET(braid_backend_api, supports_call, 192);      /* 1.4 */
BRAID_PIN_OFFSET(braid_backend_api, get_proc_address, 200);   /* 1.4 */
BRAID_PIN_OFFSET(braid_backend_api, buffer_import_host, 208); /* 1.7 */
#endif                                                        /* x86-64 */

/* data section (ABI 1.1): datasets and mini-batch iterators. */
BRAID_PIN_ASSERT(sizeof(braid_dataset_split) == 4, "ABI change: sizeof(braid_dataset_split)");
BRAID_PIN_VALUE(BRAID_SPLIT_TRAIN, 0);
BRAID_PIN_VALUE(BRAID_SPLIT_TEST, 1);
BRAID_PIN_OFFSET(braid_dataset_options, struct_size, 0);
BRAID_PIN_OFFSET(braid_batch_iterator_options, struct_size, 0);
#if defined(__x86_64__) && defined(__LP64__)
BRAID_PIN_SIZE(braid_dataset_options, 32);
BRAID_PIN_ALIGN(braid_dataset_options, 8);
BRAID_PIN_OFFSET(braid_dataset_options, name, 8);
BRAID_PIN_OFFSET(braid_dataset_options, dir, 16);
BRAID_PIN_OFFSET(braid_dataset_options, split, 24);

BRAID_PIN_SIZE(braid_batch_iterator_options, 56);
BRAID_PIN_ALIGN(braid_batch_iterator_options, 8);
BRAID_PIN_OFFSET(braid_batch_iterator_options, batch_size, 8);
BRAID_PIN_OFFSET(braid_batch_iterator_options, shuffle, 16);
BRAID_PIN_OFFSET(braid_batch_iterator_options, seed, 24);
BRAID_PIN_OFFSET(braid_batch_iterator_options, drop_last, 32);
BRAID_PIN_OFFSET(braid_batch_iterator_options, device, 36);
BRAID_PIN_OFFSET(braid_batch_iterator_options, prefetch, 40);
BRAID_PIN_OFFSET(braid_batch_iterator_options, num_parts, 44);
BRAID_PIN_OFFSET(braid_batch_iterator_options, part_index, 48);
#endif /* x86-64 */

/* parallel section (ABI 1.2): collectives, optimizers, KVStore, Trainer. */
BRAID_PIN_VALUE(BRAID_COLLECTIVE_SUM, 0);
BRAID_PIN_VALUE(BRAID_COLLECTIVE_PROD, 1);
BRAID_PIN_VALUE(BRAID_COLLECTIVE_MAX, 2);
BRAID_PIN_VALUE(BRAID_COLLECTIVE_MIN, 3);
BRAID_PIN_VALUE(BRAID_COLLECTIVE_AVG, 4);
BRAID_PIN_VALUE(BRAID_ALLREDUCE_AUTO, 0);
BRAID_PIN_VALUE(BRAID_ALLREDUCE_NAIVE, 1);
BRAID_PIN_VALUE(BRAID_ALLREDUCE_TREE, 2);
BRAID_PIN_VALUE(BRAID_ALLREDUCE_RING, 3);
BRAID_PIN_VALUE(BRAID_ALLREDUCE_BIRING, 4);
BRAID_PIN_VALUE(BRAID_ALLREDUCE_DIRECT, 5);
BRAID_PIN_VALUE(BRAID_OPTIMIZER_SGD, 0);
BRAID_PIN_VALUE(BRAID_OPTIMIZER_ADAM, 1);
BRAID_PIN_OFFSET(braid_collective_options, struct_size, 0);
BRAID_PIN_OFFSET(braid_optimizer_params, struct_size, 0);
BRAID_PIN_OFFSET(braid_trainer_options, struct_size, 0);
#if defined(__x86_64__) && defined(__LP64__)
BRAID_PIN_SIZE(braid_collective_options, 12);
BRAID_PIN_OFFSET(braid_collective_options, op, 4);
BRAID_PIN_OFFSET(braid_collective_options, algorithm, 8);
BRAID_PIN_SIZE(braid_optimizer_params, 64);
BRAID_PIN_OFFSET(braid_optimizer_params, kind, 4);
BRAID_PIN_OFFSET(braid_optimizer_params, learning_rate, 8);
BRAID_PIN_OFFSET(braid_optimizer_params, momentum, 16);
BRAID_PIN_OFFSET(braid_optimizer_params, weight_decay, 24);
BRAID_PIN_OFFSET(braid_optimizer_params, beta1, 32);
BRAID_PIN_OFFSET(braid_optimizer_params, beta2, 40);
BRAID_PIN_OFFSET(braid_optimizer_params, epsilon, 48);
BRAID_PIN_OFFSET(braid_optimizer_params, rescale_grad, 56);
BRAID_PIN_SIZE(braid_trainer_options, 96);
/* ABI 1.8: process groups */
BRAID_PIN_SIZE(braid_process_group_options, 56);
BRAID_PIN_OFFSET(braid_process_group_options, rank, 4);
BRAID_PIN_OFFSET(braid_process_group_options, world_size, 8);
BRAID_PIN_OFFSET(braid_process_group_options, master_addr, 16);
BRAID_PIN_OFFSET(braid_process_group_options, master_port, 24);
BRAID_PIN_OFFSET(braid_process_group_options, backend, 32);
BRAID_PIN_OFFSET(braid_process_group_options, timeout_seconds, 40);
BRAID_PIN_OFFSET(braid_process_group_options, flags, 48);
BRAID_PIN_SIZE(braid_process_group_info, 64);
BRAID_PIN_OFFSET(braid_process_group_info, timeout_seconds, 24);
BRAID_PIN_OFFSET(braid_process_group_info, backend, 32);
BRAID_PIN_SIZE(braid_kvstore_info, 16);
BRAID_PIN_OFFSET(braid_kvstore_info, rank, 4);
BRAID_PIN_OFFSET(braid_kvstore_info, num_workers, 8);
BRAID_PIN_OFFSET(braid_kvstore_info, num_servers, 12);
BRAID_PIN_OFFSET(braid_trainer_options, optimizer, 8);
BRAID_PIN_OFFSET(braid_trainer_options, bucket_bytes, 72);
BRAID_PIN_OFFSET(braid_trainer_options, algorithm, 80);
BRAID_PIN_OFFSET(braid_trainer_options, flags, 88);
#endif /* x86-64 */

#endif /* BRAID_TESTS_ABI_LAYOUT_H_ */
