// FUSED_ELEMENTWISE: a chain of elementwise ops (graph mode's fusion) in one pass over memory. The
// walk is map()'s (common.h: operands merged into as few axes as possible, runs along the innermost
// axis); each run is cut into tiles of kTile elements, whose inputs are loaded into registers (arrays
// of kTile values), the program runs instruction by instruction over the tile (each a loop the
// compiler vectorises), and the last register is stored. Intermediates never leave L1.
#include "common.h"
// (common.h first: see the note at its top)
#include <array>
#include <string>

#include "convert.h"
#include "elementwise_ops.h"
#include "fused_program.h"

namespace braid::cpu::kern {
namespace {

constexpr int64_t kTile = 64;
constexpr int kMaxRegs = BRAID_KERNEL_MAX_INPUTS + BRAID_FUSED_MAX_INSTRS;

using Instr = plugin::FusedInstruction;

// One instruction over a tile, with the op's element function fn inlined. BRAID_HOT, like the unfused
// kernels' loops (common.h, detail::Fixed): the AVX2+FMA clone where the CPU has it, so exp, tanh, ...
// vectorise as wide and round to the same last bits as unfused. (Inside Program::run, the loops were
// compiled for the baseline ISA: half the width, no fma, different bits.)
template <class T, class Fn>
struct TileLoops {
  BRAID_HOT static void unary(Fn& fn, T* __restrict out, const T* __restrict x, int64_t m) {
    for (int64_t e = 0; e < m; ++e) out[e] = fn(x[e]);
  }
  BRAID_HOT static void binary(Fn& fn, T* __restrict out, const T* __restrict x, const T* __restrict y, int64_t m) {
    for (int64_t e = 0; e < m; ++e) out[e] = fn(x[e], y[e]);
  }
  BRAID_HOT static void scalar_right(Fn& fn, T* __restrict out, const T* __restrict x, T s, int64_t m) {
    for (int64_t e = 0; e < m; ++e) out[e] = fn(x[e], s);
  }
  BRAID_HOT static void scalar_left(Fn& fn, T* __restrict out, const T* __restrict x, T s, int64_t m) {
    for (int64_t e = 0; e < m; ++e) out[e] = fn(s, x[e]);
  }
};

template <class T>
struct Program {
  std::array<Instr, BRAID_FUSED_MAX_INSTRS> code;
  int n = 0, k = 0;
  const double* f = nullptr;

  // Runs the program over m elements whose inputs are in r[0..k): each instruction reads registers
  // below its own, so the tiles never alias.
  void run(T (*r)[kTile], int64_t m) const {
    for (int j = 0; j < n; ++j) {
      const Instr& in = code[size_t(j)];
      T* out = r[k + j];
      const T* x = r[in.a];
      if (in.kind == 0) {
        with_float_unary<T>(braid_unary_op(in.op),
                            [&](auto fn, bool) { TileLoops<T, decltype(fn)>::unary(fn, out, x, m); });
      } else if (in.kind == 1) {
        const T* y = r[in.b];
        with_float_binary<T>(braid_binary_op(in.op),
                             [&](auto fn) { TileLoops<T, decltype(fn)>::binary(fn, out, x, y, m); });
      } else {
        const T s = convert<T>(f[in.b]);
        with_float_binary<T>(braid_binary_op(in.op), [&](auto fn) {
          if (in.kind == 3)
            TileLoops<T, decltype(fn)>::scalar_left(fn, out, x, s, m);
          else
            TileLoops<T, decltype(fn)>::scalar_right(fn, out, x, s, m);
        });
      }
    }
  }
};

template <class T, int K>
void fused_typed(Exec& ex, const Call& c, const Program<T>& p) {
  const auto& out = c.outputs[0];
  std::array<const int64_t*, K + 1> strides;
  strides[0] = out.strides;
  for (int k = 0; k < K; ++k) strides[size_t(k + 1)] = c.inputs[k].strides;
  const Layout<K + 1> L = make_layout<K + 1>(out.ndim, out.shape, strides);
  T* o = data_of<T>(out);
  std::array<const T*, K> in;
  for (int k = 0; k < K; ++k) in[size_t(k)] = data_of<const T>(c.inputs[k]);
  parallel(ex, L.numel, kGrain, [&](int64_t begin, int64_t end) {
    alignas(64) T regs[kMaxRegs][kTile];
    for_each_row(L, begin, end, [&](const int64_t* off, int64_t count) {
      for (int64_t t = 0; t < count; t += kTile) {
        const int64_t m = std::min(kTile, count - t);
        for (int k = 0; k < K; ++k) {
          const int64_t s = L.inner_stride(k + 1);
          const T* src = in[size_t(k)] + off[k + 1] + t * s;
          if (s == 1)
            std::copy_n(src, m, regs[k]);
          else
            for (int64_t e = 0; e < m; ++e) regs[k][e] = src[e * s];
        }
        p.run(regs, m);
        const int64_t s = L.inner_stride(0);
        T* dst = o + off[0] + t * s;
        const T* res = regs[p.k + p.n - 1];
        if (s == 1)
          std::copy_n(res, m, dst);
        else
          for (int64_t e = 0; e < m; ++e) dst[e * s] = res[e];
      }
    });
  });
}

template <class T>
void fused_dispatch(Exec& ex, const Call& c, const Program<T>& p) {
  switch (c.num_inputs) {
    case 1: fused_typed<T, 1>(ex, c, p); break;
    case 2: fused_typed<T, 2>(ex, c, p); break;
    case 3: fused_typed<T, 3>(ex, c, p); break;
    case 4: fused_typed<T, 4>(ex, c, p); break;
    case 5: fused_typed<T, 5>(ex, c, p); break;
    default: fused_typed<T, 6>(ex, c, p); break;
  }
}

}  // namespace

KernelResult k_fused_elementwise(const Call& c, Exec& ex) {
  plugin::FusedProgram program;
  if (!program.decode(c)) return fail(BRAID_ERR_INVALID_ARGUMENT, "cpu backend: fused_elementwise: invalid program");
  visit_dtype(FloatTypes{}, c.outputs[0].dtype, [&]<class T>(Tag<T>) {
    Program<T> p{program.code, program.count, program.inputs, c.f};
    fused_dispatch<T>(ex, c, p);
  });
  return {};
}

}  // namespace braid::cpu::kern
