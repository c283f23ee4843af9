/* The byte-level decoder language model: activation planning (one allocation), the compute plan and
 * the model's lifetime. Parameters are laid out and initialised from the tensor list (nn/params.c). */
#include "models/lm/lm.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/rng.h"
#include "core/threads.h"
#include "kernels/kernels.h"
#include "nn/stacks.h"

/* ---------------------------------------------------------------- planning helpers */

/* A slot to be patched with its address once the table is allocated. */
typedef struct {
    float **dst;
    int slot;
} lc_fixup;

typedef struct {
    lc_table *tab;
    lc_fixup *fix;
    int n, cap;
    int failed;
} lc_plan;

static void plan_add(lc_plan *p, float **dst, const char *name, int ndim, long d0, long d1) {
    long shape[2] = {d0, d1};
    if (p->failed) return;
    int slot = lc_table_add(p->tab, name, ndim, shape);
    if (slot < 0) { p->failed = 1; return; }
    if (p->n == p->cap) {
        p->cap = p->cap ? 2 * p->cap : 64;
        lc_fixup *f = realloc(p->fix, (size_t)p->cap * sizeof *f);
        if (!f) { p->failed = 1; return; }
        p->fix = f;
    }
    p->fix[p->n++] = (lc_fixup){dst, slot};
}

static void plan_patch(const lc_plan *p, float *base) {
    for (int i = 0; i < p->n; i++)
        if (p->fix[i].dst) *p->fix[i].dst = base + p->tab->slots[p->fix[i].slot].offset;
}

/* ---------------------------------------------------------------- activations */

static int is_mlm(const lc_config *c) { return c->objective == LC_OBJECTIVE_MLM; }

/* The attention shape of every layer at the model's capacity. */
static lc_attn_shape layer_shape(const lc_model *m) {
    const lc_config *c = &m->cfg;
    const int xl = c->model == LC_MODEL_XL;
    lc_attn_shape sh;
    memset(&sh, 0, sizeof sh);
    sh.B = m->max_B, sh.H = c->n_head, sh.T = m->cap_T + c->extra_tokens, sh.M = m->cap_M, sh.D = c->d_model / c->n_head;
    sh.causal = !is_mlm(c), sh.scale = 1;
    sh.relpos = xl;
    sh.window = xl && c->same_length ? c->mem_len : 0;
    sh.threads = m->threads;
    return sh;
}

/* Whether some head group of the layer reads key panels (then the model keeps them with the cache). */
static int layer_reads_panels(const lc_attn_layer *layer) {
    for (int i = 0; i < layer->n_groups; i++)
        if (layer->group[i].kind->caps & LC_ATTN_CAP_PANELS) return 1;
    return 0;
}

/* The cache's second layouts (key panels, value rows, r panels) for the layers that read them: one
 * allocation on the first inference pass, so training never holds them, zeroed once (the panels' rows
 * past the cache's last are read, never used). Without the memory the model runs without them (the
 * attention reads the cache's views): slower, the same results up to rounding. */
void lc_model_alloc_stores(lc_model *m) {
    if (m->stores || m->cfg.model != LC_MODEL_XL) return;
    const long H = m->cfg.n_head, D = m->cfg.d_model / H;
    const long per_layer = m->max_B * H * (m->k_panel_floats + (long)m->kv_rows * D) + H * m->r_panel_floats;
    int layers = 0;
    for (int l = 0; l < m->cfg.n_layer; l++) layers += m->kv[l] && layer_reads_panels(&m->layers[l]);
    if (!layers || !(m->stores = lc_alloc_aligned(sizeof(float) * (size_t)(layers * per_layer)))) return;
    memset(m->stores, 0, sizeof(float) * (size_t)(layers * per_layer));
    float *at = m->stores;
    for (int l = 0; l < m->cfg.n_layer; l++)
        if (m->kv[l] && layer_reads_panels(&m->layers[l])) {
            m->k_panels[l] = at, at += m->max_B * H * m->k_panel_floats;
            m->v_rows[l] = at, at += m->max_B * H * (long)m->kv_rows * D;
            m->r_panels[l] = at, at += H * m->r_panel_floats;
        }
}

static void plan_acts(lc_model *m, lc_plan *p) {
    const lc_config *c = &m->cfg;
    int xl = c->model == LC_MODEL_XL, pre = c->norm == LC_NORM_PRE;
    long T = m->cap_T + c->extra_tokens, Mc = m->cap_M, S = T + Mc, B = m->max_B; /* rows inside the model */
    long N_out = B * m->cap_T; /* scored rows (without the extra tokens) */
    long N = B * T, NS = B * S, C = c->d_model, F = c->d_ff, H = c->n_head;
    m->k_panel_floats = (long)lc_panel_floats(m->kv_rows, (int)(C / H));
    m->r_panel_floats = (long)lc_panel_floats(S, (int)(C / H));
    char nm[LC_NAME_MAX];
    /* Reversible layers keep two streams instead of every layer's input, and one set of activations
     * that every layer reuses (backward recomputes them); rev_store keeps them all (a reference). */
    const int rev = c->reversible, shared_acts = rev && !m->rev_store;
    const long K = c->ffn_chunk > 0 && c->ffn_chunk < N ? c->ffn_chunk : N; /* feed-forward rows at once */
    for (int l = 0; l <= c->n_layer; l++) {
        if (rev && l > 0 && l < c->n_layer) continue;
        snprintf(nm, sizeof nm, "res.%d", l);
        plan_add(p, &m->res[l], nm, 2, N, C);
    }
    if (rev) {
        plan_add(p, &m->rev_y1, "rev.y1", 2, N, C);
        plan_add(p, &m->rev_y2, "rev.y2", 2, N, C);
        plan_add(p, &m->rev_d1, "rev.d1", 2, N, C);
        plan_add(p, &m->rev_d2, "rev.d2", 2, N, C);
        for (int l = 0; m->rev_store && l <= c->n_layer; l++) {
            snprintf(nm, sizeof nm, "rev.x1.%d", l);
            plan_add(p, &m->rev_x1[l], nm, 2, N, C);
            snprintf(nm, sizeof nm, "rev.x2.%d", l);
            plan_add(p, &m->rev_x2[l], nm, 2, N, C);
        }
    }
    for (int l = 0; l < (shared_acts ? 1 : c->n_layer); l++) {
        lc_block_acts *a = &m->bact[l];
#define A(field, suffix, rows, cols)                                                                   \
    snprintf(nm, sizeof nm, "blocks.%d.%s", l, suffix);                                                \
    plan_add(p, &a->field, nm, 2, rows, cols)
        if (Mc > 0) {
            A(cat, "cat", NS, C);
            snprintf(nm, sizeof nm, "blocks.%d.memory", l);
            plan_add(p, &m->mem[l], nm, 2, B * Mc, C);
            snprintf(nm, sizeof nm, "blocks.%d.kv_cache", l);
            plan_add(p, &m->kv[l], nm, 2, B * m->kv_rows, 2 * C);
        }
        A(norm1, "norm1", pre ? NS : N, C);
        A(mean1, "mean1", pre ? NS : N, 1);
        A(rstd1, "rstd1", pre ? NS : N, 1);
        A(qkv, "qkv", NS, 3 * C);
        if (xl) { A(r, "r", S, C); }
        A(att, "att", N, C);
        A(lse, "lse", B * H * T, 1);
        if (m->blk[l].qkvg_w) {
            A(qkvg, "qkvg", NS, 3 * C);
            A(lse_g, "lse_g", B * H * T, 1);
        }
        A(s1, "s1", N, C);
        if (pre) { A(norm2, "norm2", N, C); }
        else { A(s2, "s2", N, C); }
        A(mean2, "mean2", N, 1);
        A(rstd2, "rstd2", N, 1);
        A(fc1, "fc1", K, F);
        A(act, "act", K, F);
#undef A
    }
    if (pre) {
        plan_add(p, &m->lnf, "ln_f.out", 2, N, C);
        plan_add(p, &m->lnf_mean, "ln_f.mean", 2, N, 1);
        plan_add(p, &m->lnf_rstd, "ln_f.rstd", 2, N, 1);
    }
    if (xl) plan_add(p, &m->sinus, "sinusoids", 2, S, C);
    int any_groups = 0;
    for (int l = 0; l < c->n_layer; l++) any_groups |= m->layers[l].n_groups > 1;
    if (xl && any_groups) plan_add(p, &m->rel_scratch, "rel.group", 2, 2 * S, C);
    plan_add(p, &m->logits, "logits", 2, N_out, c->vocab);
    plan_add(p, &m->dlogits, "dlogits", 2, N_out, c->vocab);
    plan_add(p, &m->losses, "losses", 2, N_out, 1);
    plan_add(p, &m->lse, "logits.lse", 2, N_out, 1);
    if (c->extra_tokens) {
        plan_add(p, &m->head_in, "head.in", 2, N_out, C);
        plan_add(p, &m->d_head_in, "d.head.in", 2, N_out, C);
    }
    plan_add(p, &m->dres, "d.res", 2, N, C);
    plan_add(p, &m->tmp, "tmp", 2, N, C);
    lc_block_scratch *s = &m->scratch;
    plan_add(p, &s->d_a, "d.a", 2, N, C);
    plan_add(p, &s->d_b, "d.b", 2, N, C);
    plan_add(p, &s->d_tmp, "d.tmp", 2, N, C);
    plan_add(p, &s->d_att, "d.att", 2, N, C);
    plan_add(p, &s->d_norm, "d.norm", 2, NS, C);
    if (Mc > 0) plan_add(p, &s->d_cat, "d.cat", 2, NS, C);
    plan_add(p, &s->d_qkv, "d.qkv", 2, NS, 3 * C);
    int any_global = 0;
    for (int l = 0; l < c->n_layer; l++) any_global |= m->blk[l].qkvg_w != NULL;
    if (any_global) plan_add(p, &s->d_qkvg, "d.qkvg", 2, NS, 3 * C);
    plan_add(p, &s->d_fc1, "d.fc1", 2, K, F);
    plan_add(p, &s->d_act, "d.act", 2, K, F);
    if (xl) {
        plan_add(p, &s->d_r, "d.r", 2, S, C);
        plan_add(p, &s->d_u, "d.u", 1, C, 0);
        plan_add(p, &s->d_v, "d.v", 1, C, 0);
    }
}

/* The compute plan: the attention workspace for m->threads threads at the model's capacity (the largest
 * over the layers; they run one after another). */
static lc_status plan_compute(lc_model *m) {
    const lc_attn_shape sh = layer_shape(m);
    size_t work = 1;
    for (int l = 0; l < m->cfg.n_layer; l++) {
        const size_t need = lc_attn_layer_workspace(&m->layers[l], &sh);
        work = need > work ? need : work;
    }
    if (m->attn_work && work <= m->attn_work_floats) return LC_OK;
    const lc_status fits = lc_check_fits(work * sizeof(float), "the attention workspace");
    if (fits) return fits;
    float *p = lc_alloc_aligned(work * sizeof(float));
    if (!p) return lc_fail(LC_ERR_NOMEM, "out of memory for the attention workspace (%zu MB)", work * 4 >> 20);
    lc_free(m->attn_work);
    m->attn_work = p;
    m->attn_work_floats = work;
    return LC_OK;
}

lc_status lc_model_set_threads(lc_model *m, int threads) {
    lc_clear_error();
    const int avail = lc_threads_available();
    const int n = threads <= 0 || threads > avail ? avail : threads;
    const int old = m->threads;
    m->threads = n;
    lc_status st = plan_compute(m);
    if (st) m->threads = old;
    return st;
}

int lc_model_threads(const lc_model *m) { return m->threads; }

lc_status lc_model_set_precision(lc_model *m, lc_precision p) {
    lc_clear_error();
    lc_status st = lc_precision_check(p);
    if (st) return st;
    m->cfg.precision = p;
    return LC_OK;
}

/* Every layer's head groups must accept the shapes the model will run (lengths, memory, positions). */
static lc_status check_attention(const lc_model *m) {
    const lc_config *c = &m->cfg;
    const lc_attn_shape sh = layer_shape(m);
    /* the longest sequence the model takes: global positions beyond it are configured in vain */
    const int longest = (m->cap_T > c->seq_len ? m->cap_T : c->seq_len) + c->extra_tokens;
    char err[512];
    for (int l = 0; l < c->n_layer; l++) {
        const lc_attn_layer *layer = &m->layers[l];
        if (lc_attn_layer_check(layer, &sh, err, sizeof err) ||
            lc_attn_layer_check_globals(layer, longest, err, sizeof err))
            return lc_fail(LC_ERR_ARG, "attn layer %d: %s", l, err);
    }
    return LC_OK;
}

/* (Re)build the activation table for the model's capacity (max_B, cap_T, cap_M). The new plan is laid
 * out and checked against the machine's memory before the old buffers are released, so a plan that
 * cannot fit leaves the model as it was. */
static lc_status build_acts(lc_model *m) {
    lc_status st = check_attention(m);
    if (st) return st;
    const int rows = m->cap_T + m->cfg.extra_tokens; /* per sequence inside the model */
    const size_t N = (size_t)m->max_B * (size_t)rows;
    const int old_kv_rows = m->kv_rows;
    m->kv_rows = 2 * m->cap_M + m->cap_T; /* room to append for cap_M tokens between compactions */
    lc_table tab;
    lc_table_init(&tab);
    lc_plan ap = {&tab, NULL, 0, 0, 0};
    plan_acts(m, &ap);
    st = ap.failed ? lc_fail(LC_ERR_NOMEM, "out of memory planning the activations")
                   : lc_check_fits(tab.total * sizeof(float) + 2 * N * sizeof(int),
                                   "the activations (batch, segment and memory lengths)");
    float *acts = st ? NULL : lc_table_alloc(&tab);
    int *global_pos = acts ? malloc(sizeof(int) * (size_t)rows) : NULL;
    int *tokens = global_pos ? calloc(N, sizeof *tokens) : NULL, *targets = tokens ? calloc(N, sizeof *targets) : NULL;
    if (!targets) {
        if (!st) st = lc_fail(LC_ERR_NOMEM, "out of memory for %zu rows of activations", N);
        lc_free(acts), free(global_pos), free(tokens), free(ap.fix);
        lc_table_free(&tab);
        m->kv_rows = old_kv_rows;
        return st;
    }
    lc_free(m->acts);
    lc_table_free(&m->atab);
    free(m->tokens), free(m->targets), free(m->global_pos);
    m->atab = tab, m->acts = acts, m->tokens = tokens, m->targets = targets, m->global_pos = global_pos;
    for (int t = 0; t < rows; t++) m->global_pos[t] = t;
    memset(m->bact, 0, (size_t)m->cfg.n_layer * sizeof *m->bact);
    memset(m->mem, 0, (size_t)m->cfg.n_layer * sizeof *m->mem);
    memset(m->kv, 0, (size_t)m->cfg.n_layer * sizeof *m->kv);
    lc_free(m->stores); /* sized by the old shape: the next inference pass allocates them again */
    m->stores = NULL;
    memset(m->k_panels, 0, (size_t)m->cfg.n_layer * sizeof *m->k_panels);
    memset(m->v_rows, 0, (size_t)m->cfg.n_layer * sizeof *m->v_rows);
    memset(m->r_panels, 0, (size_t)m->cfg.n_layer * sizeof *m->r_panels);
    plan_patch(&ap, m->acts);
    free(ap.fix);
    lc_status st_plan = plan_compute(m);
    if (st_plan) return st_plan;
    if (m->cfg.reversible && !m->rev_store) /* one set of activations for every layer */
        for (int l = 1; l < m->cfg.n_layer; l++) m->bact[l] = m->bact[0];
    m->mem_rows = 0;
    m->have_targets = 0; /* the buffers of the last forward are gone: backward needs a new forward */
    m->kv_mode = 0;
    m->kv_start = 0;
    m->r_ready = 0;
    m->sinus_rows = -1;
    return LC_OK;
}

/* ---------------------------------------------------------------- lifetime */

lc_status lc_model_create(const lc_config *cfg, int max_batch, uint64_t seed, lc_model **out) {
    lc_clear_error();
    *out = NULL;
    lc_status st = lc_config_validate(cfg);
    if (st) return st;
    if (max_batch < 1) return lc_fail(LC_ERR_ARG, "batch must be at least 1, got %d", max_batch);
    lc_model *m = calloc(1, sizeof *m);
    if (!m) return lc_fail(LC_ERR_NOMEM, "out of memory creating the model");
    m->cfg = *cfg;
    if (!m->cfg.attn[0]) strcpy(m->cfg.attn, "full"); /* the default, spelled out (checkpoints record it) */
    m->max_B = max_batch;
    m->seed = seed;
    { /* the process's thread count, capped at the cores it may use */
        const int avail = lc_threads_available(), want = lc_get_threads();
        m->threads = want > avail ? avail : want;
    }
    int L = cfg->n_layer;
    m->layers = calloc((size_t)L, sizeof *m->layers);
    if (!m->layers) goto nomem;
    {
        char err[512];
        if (lc_attn_spec_build(cfg->attn, L, cfg->n_head, cfg->d_model / cfg->n_head, lc_config_attn_keys(cfg),
                               m->layers, err, sizeof err)) {
            lc_model_free(m);
            return lc_fail(LC_ERR_ARG, "%s", err);
        }
    }
    m->bact = calloc((size_t)L, sizeof *m->bact);
    m->res = calloc((size_t)L + 1, sizeof *m->res);
    m->mem = calloc((size_t)L, sizeof *m->mem);
    m->kv = calloc((size_t)L, sizeof *m->kv);
    m->k_panels = calloc((size_t)L, sizeof *m->k_panels);
    m->v_rows = calloc((size_t)L, sizeof *m->v_rows);
    m->r_panels = calloc((size_t)L, sizeof *m->r_panels);
    m->rev_x1 = calloc((size_t)L + 1, sizeof *m->rev_x1);
    m->rev_x2 = calloc((size_t)L + 1, sizeof *m->rev_x2);
    if (!m->rev_x1 || !m->rev_x2) goto nomem;
    if (!m->bact || !m->res || !m->mem || !m->kv || !m->k_panels || !m->v_rows || !m->r_panels) goto nomem;

    if ((st = lc_model_build_params(m, seed))) { lc_model_free(m); return st; }

    m->cap_T = cfg->seq_len;
    m->cap_M = cfg->model == LC_MODEL_XL ? cfg->mem_len : 0;
    if ((st = build_acts(m))) { lc_model_free(m); return st; }
    *out = m;
    return LC_OK;
nomem:
    lc_model_free(m);
    return lc_fail(LC_ERR_NOMEM, "out of memory allocating the model");
}

void lc_model_free(lc_model *m) {
    if (!m) return;
    lc_model_free_params(m);
    lc_free(m->acts);
    lc_free(m->attn_work);
    lc_table_free(&m->atab);
    free(m->layers);
    free(m->global_pos);
    free(m->bact);
    free(m->res);
    free(m->mem);
    free(m->kv);
    lc_free(m->stores);
    free(m->k_panels);
    free(m->v_rows);
    free(m->r_panels);
    free(m->rev_x1);
    free(m->rev_x2);
    free(m->tokens);
    free(m->targets);
    free(m);
}

const lc_config *lc_model_config(const lc_model *m) { return &m->cfg; }

size_t lc_model_num_params(const lc_model *m) {
    size_t n = 0;
    for (int i = 0; i < m->ptab.n; i++) n += m->ptab.slots[i].count;
    return n;
}

size_t lc_model_param_bytes(const lc_model *m) { return 4 * m->ptab.total * sizeof(float); }
size_t lc_model_activation_bytes(const lc_model *m) { return (m->atab.total + m->attn_work_floats) * sizeof(float); }

void lc_model_zero_grad(lc_model *m) { memset(m->grads, 0, m->ptab.total * sizeof(float)); }
const float *lc_model_logits(const lc_model *m) { return m->logits; }
void lc_model_set_noise_key(lc_model *m, long key) { m->noise_key = key; }
long lc_model_step(const lc_model *m) { return m->step; }

uint64_t lc_model_step_seed(const lc_model *m, uint64_t what) {
    return lc_seed_mix(lc_seed_mix(m->seed, (uint64_t)m->noise_key), what);
}

lc_status lc_model_resize(lc_model *m, int max_batch, int seq_len, int mem_len) {
    lc_clear_error();
    const lc_config *c = &m->cfg;
    if (max_batch < 1) return lc_fail(LC_ERR_ARG, "batch must be at least 1, got %d", max_batch);
    int limit = c->model == LC_MODEL_XL ? 1 << 24 : c->seq_len;
    if (seq_len < 1 || seq_len > limit)
        return lc_fail(LC_ERR_ARG, "seg-len must be 1..%d for this model, got %d", limit, seq_len);
    if (mem_len < 0 || mem_len > 1 << 24) return lc_fail(LC_ERR_ARG, "mem-len must be 0..16777216, got %d", mem_len);
    if (c->model != LC_MODEL_XL && mem_len > 0) return lc_fail(LC_ERR_ARG, "mem-len needs an xl model");
    if (c->model == LC_MODEL_XL && c->same_length && mem_len < 1)
        return lc_fail(LC_ERR_ARG, "same-length needs mem-len >= 1");
    const int old_B = m->max_B, old_T = m->cap_T, old_M = m->cap_M, old_mem = m->cfg.mem_len;
    m->max_B = max_batch;
    m->cap_T = seq_len;
    m->cap_M = mem_len;
    if (c->model == LC_MODEL_XL) m->cfg.mem_len = mem_len;
    lc_status st = check_attention(m);
    if (st) { /* keep the model as it was */
        m->max_B = old_B, m->cap_T = old_T, m->cap_M = old_M, m->cfg.mem_len = old_mem;
        return st;
    }
    return build_acts(m);
}

lc_status lc_model_set_reversible_store(lc_model *m, int on) {
    if (!m->cfg.reversible) return lc_fail(LC_ERR_ARG, "not a reversible model");
    m->rev_store = on != 0;
    return build_acts(m);
}

lc_status lc_model_set_xl_options(lc_model *m, int clamp_len, int same_length) {
    lc_clear_error();
    if (m->cfg.model != LC_MODEL_XL) return lc_fail(LC_ERR_ARG, "clamp-len and same-length need an xl model");
    if (clamp_len < 0) return lc_fail(LC_ERR_ARG, "clamp-len must be >= 0, got %d", clamp_len);
    if (same_length && m->cfg.mem_len < 1) return lc_fail(LC_ERR_ARG, "same-length needs mem-len >= 1");
    int replan = (same_length != 0) != (m->cfg.same_length != 0);
    m->cfg.clamp_len = clamp_len;
    m->cfg.same_length = same_length != 0;
    m->sinus_rows = -1;
    m->r_ready = 0;
    return replan ? build_acts(m) : LC_OK; /* the attention workspace depends on the window */
}
