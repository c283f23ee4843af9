/* The `linformer` attention kind (Wang et al. 2020, arXiv 2006.04768): keys and values projected along
 * the sequence axis to k rows by learned matrices E, F (k x n, n = max_len of param_floats), then
 * ordinary softmax attention of the T queries over the k projected keys:
 *   K' = E[:, :S] K,  V' = F[:, :S] V,  out = softmax(scale Q K'^T) V'   (per head; S = T, M = 0)
 * Inputs shorter than n use the leading S columns of E and F. Bidirectional only (no causal mode, no
 * memory rows, no relative positions, no global tokens, no shape.window): the caps say so.
 *
 * Sharing (option share, the paper's names):
 *   none      one E and one F per head                       P = 2H projections
 *   headwise  one E and one F for all heads of the group     P = 2   (default; fairseq's layout)
 *   kv        one matrix for keys and values, all heads      P = 1   (E = F)
 * Layerwise sharing (one projection for every layer) is the model's business: it passes the same
 * params/dparams arrays to several layers (every layer's backward accumulates into the one dparams).
 *
 * Parameter layout: params holds max_len * P * k floats, position-major, each projection stored
 * transposed: element E_p[j][s] (row j < k, column s < n) is params[(s * P + p) * k + j]. The leading
 * S columns of every projection are then simply the first S * P * k floats, so forward and backward do
 * not need n. Projection p: share=none: E of head h is p = 2h, F of head h is p = 2h + 1; headwise:
 * E is 0, F is 1; kv: E = F = 0. The caller must keep T <= max_len (reads stop at row T of the array).
 *
 * Init (param_init): xavier-uniform with gain 1/sqrt(2) on each k x n matrix, U(-a, a) with
 * a = sqrt(3 / (k + n)), as fairseq's Linformer (compress_k / compress_v) does.
 *
 * Forward writes out and lse (as the full kind). Backward writes dq, dk = E^T dK', dv = F^T dV' and
 * ACCUMULATES dE, dF into dparams (same layout). Cost O(S k D) per head for the projections and
 * O(T k D) for the attention, all through lc_gemm (shared projections: one product per sequence for all
 * heads; share=kv with values beside keys in the row, as in a fused qkv buffer: one for keys and values);
 * workspace O(threads * 512 k + B * 4 k H D) floats: per thread one block of at most 512 query
 * rows of scores, per sequence the projected keys and values of all heads and their gradients. */
#ifndef LC_ATTN_LINFORMER_H
#define LC_ATTN_LINFORMER_H

#include <stddef.h>
#include <stdint.h>

#include "attn/attn.h"

typedef enum { LC_LINFORMER_SHARE_NONE = 0, LC_LINFORMER_SHARE_HEADWISE = 1, LC_LINFORMER_SHARE_KV = 2 } lc_linformer_share;

typedef struct {
    int k;     /* projected length, >= 1 (default 256) */
    int share; /* lc_linformer_share (default headwise) */
} lc_attn_linformer_opts;

extern const lc_attn_kind lc_attn_linformer;

/* Number of projection matrices P for a group of H heads, and which one head h uses for keys / values. */
int lc_attn_linformer_projections(const lc_attn_linformer_opts *o, int H);
int lc_attn_linformer_key_proj(const lc_attn_linformer_opts *o, int h);
int lc_attn_linformer_value_proj(const lc_attn_linformer_opts *o, int h);

size_t lc_attn_linformer_param_floats(const void *opts, int H, int D, int max_len);
void lc_attn_linformer_param_init(float *params, const void *opts, int H, int D, int max_len, uint64_t seed);
size_t lc_attn_linformer_workspace(const lc_attn_shape *s, const void *opts);
void lc_attn_linformer_forward(const lc_attn_shape *s, const void *opts, const lc_attn_tensors *t, float *work);
void lc_attn_linformer_backward(const lc_attn_shape *s, const void *opts, const lc_attn_tensors *t, float *work);

#endif
