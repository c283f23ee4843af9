/* Elementwise activations: GELU (tanh approximation, as PyTorch approximate="tanh") and ReLU, forward and
 * backward (backward accumulates into dinp), parallel over elements, with double references; and the
 * residual sum of two tensors. */
#include <math.h>

#include "core/threads.h"
#include "kernels/fastmath.h"
#include "kernels/kernels.h"

#define LC_GELU_SCALE 0.7978845608028654 /* sqrt(2 / pi) */
#define LC_GELU_CUBIC 0.044715
#define LC_PARALLEL_MIN 32768 /* below this many elements threads cost more than they save */

static inline float lc_gelu(float x) {
    float u = (float)LC_GELU_SCALE * (x + (float)LC_GELU_CUBIC * x * x * x);
    return 0.5f * x * (1.0f + lc_tanhf(u));
}

/* d/dx of 0.5 x (1 + tanh u), u = s (x + a x^3): 0.5 (1 + t) + 0.5 x (1 - t^2) s (1 + 3 a x^2). */
static inline float lc_gelu_grad(float x) {
    float u = (float)LC_GELU_SCALE * (x + (float)LC_GELU_CUBIC * x * x * x);
    float t = lc_tanhf(u);
    float du = (float)LC_GELU_SCALE * (1.0f + 3.0f * (float)LC_GELU_CUBIC * x * x);
    return 0.5f * (1.0f + t) + 0.5f * x * (1.0f - t * t) * du;
}

void lc_gelu_forward(float *out, const float *inp, size_t n) {
#ifdef _OPENMP
#pragma omp parallel for schedule(dynamic, LC_CHUNK_FLOATS) if (n > LC_PARALLEL_MIN)
#endif
    for (size_t i = 0; i < n; i++) out[i] = lc_gelu(inp[i]);
}

void lc_gelu_backward(float *dinp, const float *inp, const float *dout, size_t n) {
#ifdef _OPENMP
#pragma omp parallel for schedule(dynamic, LC_CHUNK_FLOATS) if (n > LC_PARALLEL_MIN)
#endif
    for (size_t i = 0; i < n; i++) dinp[i] += lc_gelu_grad(inp[i]) * dout[i];
}

void lc_gelu_forward_ref(double *out, const double *inp, size_t n) {
    for (size_t i = 0; i < n; i++) {
        double x = inp[i];
        out[i] = 0.5 * x * (1.0 + tanh(LC_GELU_SCALE * (x + LC_GELU_CUBIC * x * x * x)));
    }
}

void lc_gelu_backward_ref(double *dinp, const double *inp, const double *dout, size_t n) {
    for (size_t i = 0; i < n; i++) {
        double x = inp[i];
        double t = tanh(LC_GELU_SCALE * (x + LC_GELU_CUBIC * x * x * x));
        double du = LC_GELU_SCALE * (1.0 + 3.0 * LC_GELU_CUBIC * x * x);
        dinp[i] += (0.5 * (1.0 + t) + 0.5 * x * (1.0 - t * t) * du) * dout[i];
    }
}

void lc_relu_forward(float *out, const float *inp, size_t n) {
#ifdef _OPENMP
#pragma omp parallel for schedule(dynamic, LC_CHUNK_FLOATS) if (n > LC_PARALLEL_MIN)
#endif
    for (size_t i = 0; i < n; i++) out[i] = inp[i] > 0 ? inp[i] : 0.0f;
}

void lc_relu_backward(float *dinp, const float *inp, const float *dout, size_t n) {
#ifdef _OPENMP
#pragma omp parallel for schedule(dynamic, LC_CHUNK_FLOATS) if (n > LC_PARALLEL_MIN)
#endif
    for (size_t i = 0; i < n; i++) dinp[i] += inp[i] > 0 ? dout[i] : 0.0f;
}

void lc_relu_forward_ref(double *out, const double *inp, size_t n) {
    for (size_t i = 0; i < n; i++) out[i] = inp[i] > 0 ? inp[i] : 0.0;
}

void lc_relu_backward_ref(double *dinp, const double *inp, const double *dout, size_t n) {
    for (size_t i = 0; i < n; i++) dinp[i] += inp[i] > 0 ? dout[i] : 0.0;
}

void lc_add(float *out, const float *a, const float *b, long n) {
#pragma omp parallel for schedule(dynamic, LC_CHUNK_FLOATS) if (n > LC_PARALLEL_MIN)
    for (long i = 0; i < n; i++) out[i] = a[i] + b[i];
}
