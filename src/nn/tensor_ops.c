/* What a model laid out by a tensor list (the hierarchical model, the classifier) does with it: bind its
 * pointers to the buffers and find a tensor's numbers. Its optimisation step is train/optimizer.h's. */
#include "nn/tensors.h"

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
