/* Byte embedding plus learned absolute positions: forward, backward and double references. */
#include <string.h>

#include "core/threads.h"
#include "nn/nn.h"

void lc_embedding_forward(float *out, const int *tokens, const float *wte, const float *wpe, int B, int T, int C) {
#pragma omp parallel for schedule(dynamic, LC_CHUNK_ROWS)
    for (long r = 0; r < (long)B * T; r++) {
        const float *e = wte + (long)tokens[r] * C;
        const float *p = wpe ? wpe + (r % T) * C : NULL;
        float *o = out + r * C;
        for (int c = 0; c < C; c++) o[c] = e[c] + (p ? p[c] : 0.0f);
    }
}

/* Rows that share a token (or a position) add into the same gradient row, so the loop runs in a fixed
 * order over rows and splits only the channels between threads. */
void lc_embedding_backward(float *dwte, float *dwpe, const float *dout, const int *tokens, int B, int T, int C) {
    long n = (long)B * T;
#pragma omp parallel for schedule(dynamic, 1)
    for (int c = 0; c < C; c++) {
        for (long r = 0; r < n; r++) {
            float d = dout[r * C + c];
            if (dwte) dwte[(long)tokens[r] * C + c] += d;
            if (dwpe) dwpe[(r % T) * C + c] += d;
        }
    }
}

void lc_embedding_forward_ref(double *out, const int *tokens, const double *wte, const double *wpe, int B, int T,
                              int C) {
    for (long r = 0; r < (long)B * T; r++)
        for (int c = 0; c < C; c++) out[r * C + c] = wte[(long)tokens[r] * C + c] + (wpe ? wpe[(r % T) * C + c] : 0);
}

void lc_embedding_backward_ref(double *dwte, double *dwpe, const double *dout, const int *tokens, int B, int T,
                               int C) {
    for (long r = 0; r < (long)B * T; r++)
        for (int c = 0; c < C; c++) {
            if (dwte) dwte[(long)tokens[r] * C + c] += dout[r * C + c];
            if (dwpe) dwpe[(r % T) * C + c] += dout[r * C + c];
        }
}
