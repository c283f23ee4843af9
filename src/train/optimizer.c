/* The optimizer of every model family: the training options' defaults, the learning-rate schedule
 * (linear warm-up, then cosine decay to min_lr), per-tensor learning-rate factors (lc_train_options.lr_scale,
 * the CLI's --lr-scale) and AdamW over a tensor list (train/optimizer.h).
 *
 * Factors: rules "PREFIX=F[@STEPS]" joined by commas. A parameter tensor whose checkpoint name starts with
 * PREFIX trains at F times the schedule's rate, for its first STEPS optimizer steps only when @STEPS is
 * given; the longest matching prefix among the rules still in force decides (the first of equally long
 * ones). This is how a fine-tuning run gives a pre-trained encoder a lower rate than a new head, or freezes
 * it (F = 0) for its first steps. */
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "core/status.h"
#include "kernels/kernels.h"
#include "longctx/train.h"
#include "train/optimizer.h"

typedef struct {
    const char *prefix;
    size_t prefix_len;
    double factor;
    long until; /* 0: every step */
} lr_rule;

/* Reads the rule at s (up to ',' or the end) into r; returns the character after it, or NULL when the
 * rule is malformed. */
static const char *parse_rule(const char *s, lr_rule *r) {
    const size_t len = strcspn(s, ",");
    const char *eq = memchr(s, '=', len);
    if (!eq || eq == s || memchr(s, '@', (size_t)(eq - s))) return NULL;
    r->prefix = s, r->prefix_len = (size_t)(eq - s);
    const char *num = eq + 1, *end = s + len;
    if (num == end || !(*num == '.' || (*num >= '0' && *num <= '9'))) return NULL;
    char *after = NULL;
    errno = 0;
    r->factor = strtod(num, &after);
    if (errno || after == num || !(r->factor >= 0 && r->factor <= 1000)) return NULL;
    r->until = 0;
    if (after < end && *after == '@') {
        const char *digits = after + 1;
        if (digits == end || *digits < '0' || *digits > '9') return NULL;
        errno = 0;
        const long long v = strtoll(digits, &after, 10);
        if (errno || v < 1 || v > (1LL << 40)) return NULL;
        r->until = (long)v;
    }
    if (after != end) return NULL;
    return *end ? end + 1 : end;
}

lc_status lc_lr_scale_check(const char *spec) {
    if (!spec) return LC_OK;
    if (strlen(spec) >= LC_LR_SCALE_CHARS)
        return lc_fail(LC_ERR_ARG, "lr-scale is longer than %d characters", LC_LR_SCALE_CHARS - 1);
    for (const char *s = spec; *s;) {
        lr_rule r;
        const char *next = parse_rule(s, &r);
        if (!next || (*next == '\0' && next[-1] == ','))
            return lc_fail(LC_ERR_ARG, "lr-scale: '%.*s' is not PREFIX=F[@STEPS] (F in 0..1000, STEPS >= 1)",
                           (int)strcspn(s, ","), s);
        s = next;
    }
    return LC_OK;
}

double lc_lr_scale_factor(const char *spec, const char *name, long step) {
    double factor = 1;
    size_t best = 0;
    for (const char *s = spec; s && *s;) {
        lr_rule r;
        const char *next = parse_rule(s, &r);
        if (!next) break; /* lc_lr_scale_check refuses such a spec before training */
        if ((r.until == 0 || step < r.until) && r.prefix_len > best && strncmp(name, r.prefix, r.prefix_len) == 0)
            factor = r.factor, best = r.prefix_len;
        s = next;
    }
    return factor;
}

void lc_train_options_default(lc_train_options *o) {
    memset(o, 0, sizeof *o);
    o->steps = 2000;
    o->batch = 16;
    o->grad_accum = 1;
    o->lr = 2e-3f;
    o->min_lr = 1e-4f;
    o->warmup = 100;
    o->weight_decay = 0.1f;
    o->beta1 = 0.9f;
    o->beta2 = 0.99f;
    o->eps = 1e-8f;
    o->clip = 1.0f;
    o->eval_every = 250;
    o->eval_bytes = 32768;
    o->seed = 1337;
    o->ranks = 1;
}

double lc_learning_rate(const lc_train_options *o, long step) {
    if (o->warmup > 0 && step < o->warmup) return o->lr * (double)(step + 1) / (double)o->warmup;
    long decay = o->steps - o->warmup;
    if (decay <= 0) return o->lr;
    double progress = (double)(step - o->warmup) / (double)decay;
    if (progress > 1) progress = 1;
    return o->min_lr + 0.5 * (1.0 + cos(M_PI * progress)) * (o->lr - o->min_lr);
}

void lc_tensors_adamw(const lc_tensor_list *l, const lc_table *ptab, float *const buffers[4],
                      const lc_train_options *o, long step, double norm) {
    float *params = buffers[0], *grads = buffers[1], *am = buffers[2], *av = buffers[3];
    if (o->clip > 0 && norm > o->clip) lc_scale(grads, ptab->total, (float)(o->clip / norm));
    const float lr = (float)lc_learning_rate(o, step);
    for (int i = 0; i < l->n; i++) {
        const lc_tensor *t = &l->t[i];
        if (!lc_tensor_is_param(t)) continue;
        const lc_slot *s = &ptab->slots[t->slot];
        const float tensor_lr = lr * (float)lc_lr_scale_factor(o->lr_scale, t->name, step);
        lc_adamw_update(params + s->offset, grads + s->offset, am + s->offset, av + s->offset, s->count, tensor_lr,
                        o->beta1, o->beta2, o->eps, t->decay ? o->weight_decay : 0.0f, (int)(step + 1));
    }
}

lc_status lc_tensors_step(const lc_tensor_list *l, const lc_tensor_buffers *b, const lc_train_options *o, long *step,
                          lc_step_pass pass, void *model, const void *batch, double *loss) {
    lc_clear_error();
    lc_status st = lc_adamw_options_check(o);
    if (st) return st;
    memset(*b->grads, 0, b->ptab->total * sizeof(float));
    double sum;
    long n;
    return (st = pass(model, batch, &sum, &n)) ? st : lc_tensors_update(l, b, o, step, sum, n, loss);
}

lc_status lc_tensors_update(const lc_tensor_list *l, const lc_tensor_buffers *b, const lc_train_options *o,
                            long *step, double sum, long n, double *loss) {
    const double mean = sum / (double)n, norm = sqrt(lc_sum_squares(*b->grads, b->ptab->total));
    lc_status st = lc_lr_scale_check(o->lr_scale);
    if (st) return st;
    if (!isfinite(mean) || !isfinite(norm))
        return lc_fail(LC_ERR_NUMERIC, "training diverged at step %ld: %s is not finite (try a lower --lr)",
                       *step + 1, isfinite(mean) ? "gradient norm" : "loss");
    lc_tensors_adamw(l, b->ptab, (float *[4]){*b->params, *b->grads, *b->adam_m, *b->adam_v}, o, *step, norm);
    (*step)++;
    if (loss) *loss = mean;
    return LC_OK;
}
