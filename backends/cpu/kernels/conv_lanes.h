// float32 direct convolutions with output channels across the vector lanes (AVX-512: 16 channels a
// register), for the shapes where im2col + gemm spends as long copying as multiplying: few
// output channels (gemm's M is small) and small images (LeNet's second layer: K = 50, 9x9 outputs).
// Why and the figures: backends/cpu/README.md, "Convolutions".
#pragma once
#include "im2col.h"

namespace braid::cpu::kern::lanes {

// Whether the forward kernel runs on this CPU (AVX-512) and takes this geometry on
// `cores` cores; conv_forward may be called only then.
bool forward_fits(const ConvGeom& G, int cores);
// y = conv(x, w) + bias (bias may be null); NCHW / KCRS / NKPQ, dense.
void conv_forward(Exec& ex, const ConvGeom& G, const float* x, const float* w, const float* bias, float* y);

// Whether the weight-gradient kernel runs here and takes this geometry; then
// dw = sum over images of dy (x) x, NKPQ / NCHW / KCRS, dense, overwritten. The images are summed in
// fixed runs (two per core), so the result depends on the core count, not on the scheduling.
bool backward_weight_fits(const ConvGeom& G, int cores);
void conv_backward_weight(Exec& ex, const ConvGeom& G, const float* dy, const float* x, float* dw);

}  // namespace braid::cpu::kern::lanes
