/* Directional finite differences over every parameter tensor of a model laid out by a parameter table
 * (tests of the classifier; usable by any model with a params/grads pair): for each tensor, the
 * derivative of a loss along (the gradient's direction + a random unit vector), by central differences
 * in float, against the backward's. Include after harness.h. */
#ifndef LC_TESTS_FD_KIT_H
#define LC_TESTS_FD_KIT_H

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/rng.h"
#include "core/table.h"
#include "nn/tensors.h"

/* grads: the backward's gradient of loss() (a copy: loss() may overwrite the model's); returns the tensors
 * checked. */
static int fd_check_table(const lc_table *ptab, float *params, const float *grads, double (*loss)(void *), void *user,
                          const char *what, double rtol, double atol) {
    float *d = malloc(sizeof(float) * ptab->total);
    lc_rng rng;
    lc_rng_seed(&rng, 99);
    const double eps = 1e-3;
    int checked = 0;
    for (int i = 0; i < ptab->n; i++) {
        const lc_slot *s = &ptab->slots[i];
        const float *g = grads + s->offset;
        double norm2 = 0, gnorm = 0, gd = 0;
        for (size_t j = 0; j < s->count; j++) gnorm += (double)g[j] * g[j];
        gnorm = gnorm > 0 ? sqrt(gnorm) : 1;
        for (size_t j = 0; j < s->count; j++) d[j] = lc_rng_normal(&rng), norm2 += (double)d[j] * d[j];
        for (size_t j = 0; j < s->count; j++) d[j] = (float)(d[j] / sqrt(norm2) + g[j] / gnorm);
        norm2 = 0;
        for (size_t j = 0; j < s->count; j++) norm2 += (double)d[j] * d[j];
        if (norm2 < 1e-6) { /* the two cancelled (a one-element tensor): the gradient's direction alone */
            for (size_t j = 0; j < s->count; j++) d[j] = (float)(g[j] / gnorm);
            norm2 = 1;
        }
        for (size_t j = 0; j < s->count; j++) d[j] = (float)(d[j] / sqrt(norm2)), gd += (double)g[j] * d[j];
        float *p = params + s->offset;
        for (size_t j = 0; j < s->count; j++) p[j] += (float)eps * d[j];
        const double up = loss(user);
        for (size_t j = 0; j < s->count; j++) p[j] -= 2 * (float)eps * d[j];
        const double down = loss(user);
        for (size_t j = 0; j < s->count; j++) p[j] += (float)eps * d[j];
        const double fd = (up - down) / (2 * eps);
        char label[512];
        snprintf(label, sizeof label, "%s %s", what, s->name);
        CHECK_CLOSE(label, &gd, &fd, 1, rtol, atol);
        checked++;
    }
    free(d);
    return checked;
}

/* Parameters far from the initialisation (which makes every gradient tiny) so that the differences see
 * every path: LayerNorm gains 1 + U(-0.3, 0.3), matrices U(-a, a) with a = 1.5 / sqrt(fan-in), the rest
 * U(-0.3, 0.3), drawn from seed in list order. */
static inline void fd_sharpen(const lc_tensor_list *l, const lc_table *ptab, float *params, uint64_t seed) {
    lc_rng r;
    lc_rng_seed(&r, seed);
    for (int i = 0; i < l->n; i++) {
        const lc_tensor *t = &l->t[i];
        if (!lc_tensor_is_param(t)) continue;
        const lc_slot *s = &ptab->slots[t->slot];
        const float base = t->role == LC_ROLE_NORM_GAIN ? 1.0f : 0.0f;
        const float a = t->role == LC_ROLE_MATRIX ? 1.5f / sqrtf((float)t->shape[1]) : 0.3f;
        for (size_t j = 0; j < s->count; j++) params[s->offset + j] = base + a * (2 * lc_rng_uniform(&r) - 1);
    }
}

#endif
