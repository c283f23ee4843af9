/* What a model laid out by a tensor list (the hierarchical model, the classifier) does with it: bind its
 * pointers to the buffers, find a tensor's numbers, and one optimisation step (the mean loss and the
 * gradient norm checked, clipping by the global norm, AdamW per parameter tensor with weight decay where
 * the list says, at the schedule's rate times the tensor's lc_lr_scale_factor). */
#include <math.h>

#include "kernels/kernels.h"
#include "nn/tensors.h"

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

float *lc_tensor_values(const lc_tensor_list *l, const lc_tensor_buffers *b, int i) {
    const lc_tensor *t = &l->t[i];
    const int param = lc_tensor_is_param(t);
    return (param ? *b->params : *b->state) + (param ? b->ptab : b->stab)->slots[t->slot].offset;
}

void lc_tensors_bind(const lc_tensor_list *l, const lc_tensor_buffers *b, lc_tensor_site_fn site, void *user) {
    for (int i = 0; i < l->n; i++) {
        const lc_tensor *t = &l->t[i];
        float *value = lc_tensor_values(l, b, i);
        float *grad = lc_tensor_is_param(t) ? *b->grads + (value - *b->params) : NULL;
        const int first = t->layer < 0 ? 0 : t->layer, last = t->layer < 0 ? 0 : t->layer + t->layers - 1;
        for (int k = first; k <= last; k++) {
            float **dst = site(user, t, k, 0);
            if (dst) *dst = value;
            if (grad && (dst = site(user, t, k, 1))) *dst = grad;
        }
    }
}
