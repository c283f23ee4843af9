/* Checkpoints of processes training together (train/dist.h): process 0 writes one file holding every
 * process's XL memory, and a resume with any number of processes dividing the saved global batch gives
 * each its streams and their memory, so the run continues as if it had not stopped. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/status.h"
#include "kernels/fastmath.h"
#include "models/lm/lm.h"
#include "train/checkpoint_meta.h"
#include "train/dist.h"
#include "train/safetensors.h"

static int has_memory(const lc_model *m) { return m->cfg.model == LC_MODEL_XL && !m->kv_mode && m->mem_rows > 0; }

/* Every process returns when the file is written (so none exits, and has mpirun end the others, while
 * process 0 still writes), with process 0's status. */
static lc_status shared_status(lc_status st, const char *path) {
    long worst = st;
    lc_dist_max_longs(&worst, 1);
    if (st || !worst) return st;
    return lc_fail((lc_status)worst, "%s: process 0 could not save it", path);
}

lc_status lc_checkpoint_save_dist(const lc_model *m, const lc_train_options *o, const char *path) {
    const int R = lc_dist_size(), root = lc_dist_rank() == 0;
    lc_train_options opts = *o;
    opts.ranks = R;
    if (R == 1) return lc_checkpoint_save(m, &opts, path);
    /* every process takes the same path below, with memory of the same shape (the settings were compared
     * at the start: this is the last guard before process 0 gathers into a buffer of its own size) */
    const int L = m->cfg.n_layer;
    const size_t per = has_memory(m) ? (size_t)m->mem_B * (size_t)m->cap_M * (size_t)m->cfg.d_model : 0;
    const uint64_t shape[3] = {(uint64_t)has_memory(m), (uint64_t)L, (uint64_t)per};
    if (!lc_dist_same_u64(lc_data_hash((const uint8_t *)shape, sizeof shape)))
        return lc_fail(LC_ERR_ARG, "%s: the processes hold XL memory of different shapes (different --batch or "
                       "--mem-len?): nothing saved", path);
    if (!has_memory(m)) return shared_status(root ? lc_checkpoint_save(m, &opts, path) : LC_OK, path);
    /* the memory of every stream, laid out as one model with batch B x R would hold it */
    float *all = root ? malloc(sizeof(float) * per * (size_t)R * (size_t)L) : NULL;
    float **mem = root ? malloc(sizeof(float *) * (size_t)L) : NULL;
    if (root && (!all || !mem)) lc_dist_abort(1); /* the others wait in the gather: end them too */
    lc_status st = LC_OK;
    for (int l = 0; l < L && !st; l++) {
        if (lc_dist_gather_floats(m->mem[l], per, root ? all + per * (size_t)R * (size_t)l : NULL))
            st = lc_fail(LC_ERR_ARG, "%s: the processes hold XL memory of different sizes: nothing saved", path);
        if (root) mem[l] = all + per * (size_t)R * (size_t)l;
    }
    if (st) {
        free(all), free(mem);
        return st;
    }
    if (root) {
        lc_model view = *m; /* the same model, seen with every process's streams */
        view.mem = mem;
        view.mem_B = m->mem_B * R;
        st = lc_checkpoint_save(&view, &opts, path);
    }
    free(all);
    free(mem);
    return shared_status(st, path);
}

lc_status lc_checkpoint_load_dist(const char *path, lc_model **out, lc_train_options *opts) {
    const long R = lc_dist_size();
    *out = NULL;
    lc_st_file *f;
    lc_status st = lc_st_open(path, &f);
    if (st) return st;
    lc_ckpt_meta *h = malloc(sizeof *h);
    if (!h) st = lc_fail(LC_ERR_NOMEM, "%s: out of memory", path);
    if (!st) st = lc_ckpt_meta_parse(f, h);
    const long ranks = h && h->opts.ranks > 0 ? h->opts.ranks : 1, streams = h ? h->opts.batch * ranks : 0;
    if (!st && streams % R)
        st = lc_fail(LC_ERR_ARG, "%s was trained on %ld streams (%ld processes x batch %d), which %ld processes "
                     "cannot share: run with a number of processes dividing %ld", path, streams, ranks,
                     h->opts.batch, R, streams);
    if (!st) st = lc_checkpoint_load(path, (int)(streams / R), out, opts);
    /* one process of all the streams: lc_checkpoint_load restored the memory; else this process's part */
    if (!st && R > 1 && h->memory_batch == streams) st = lc_ckpt_read_memory(f, h, *out, lc_dist_rank() * (streams / R), (*out)->max_B);
    if (!st) opts->batch = (int)(streams / R);
    if (st && *out) lc_model_free(*out), *out = NULL;
    free(h);
    lc_st_close(f);
    return st;
}
