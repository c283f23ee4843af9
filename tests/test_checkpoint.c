/* Checkpoint tests: every layout round-trips; the metadata is checked against the file's tensor table
 * before anything is allocated (huge d_ff / n_layer fail fast); every damaged file (truncations, byte
 * flips, any metadata key set to anything) is LC_ERR_FORMAT or LC_ERR_IO naming the file; any 64-bit
 * seed round-trips; an export without the moments loads as the same model with zero moments; FIFOs,
 * directories and devices are refused at once; lc_fail may quote the last error; docs/reference/checkpoint.md
 * names every tensor and metadata key the code can produce. */
#include <signal.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "core/status.h"
#include "core/threads.h"
#include "harness.h"
#include "models/lm/lm.h"
#include "train/checkpoint_meta.h"
#include "train/safetensors.h"
#include "test_files.h"

/* A small model of every layout the checkpoint format knows. */
typedef struct {
    const char *name;
    int xl, post, untied, shared_uv, qk_share, attn_share, mlm, extra, reversible, ffn_chunk;
    const char *attn;
} layout;

/* Fields left out are 0 (off); attn left out is full attention. */
static const layout layouts[] = {
    {"vanilla"},
    {"vanilla-post-untied", .post = 1, .untied = 1},
    {"xl", .xl = 1},
    {"xl-shared-uv-post-untied", .xl = 1, .post = 1, .untied = 1, .shared_uv = 1},
    {"xl-qk-share", .xl = 1, .qk_share = 2},
    {"qk-and-attn-share", .qk_share = 2, .attn_share = 2},
    {"xl-attn-share", .xl = 1, .attn_share = 2},
    {"global", .attn = "window:w=4,global=2"},
    {"mlm-linformer", .mlm = 1, .attn = "linformer:k=4"},
    {"routing", .attn = "1xrouting:clusters=2+1xwindow:w=4"},
    {"bigbird-etc", .extra = 2, .attn = "bigbird:variant=etc,g=2,b=4"},
    {"reversible-lsh", .reversible = 1, .ffn_chunk = 8, .attn = "lsh:buckets=2,chunk=8"},
};
#define N_LAYOUTS (int)(sizeof layouts / sizeof *layouts)

static lc_config layout_config(const layout *s) {
    lc_config c;
    lc_config_preset(&c, "tiny");
    c.n_layer = 2, c.d_model = 16, c.n_head = 2, c.d_ff = 32, c.seq_len = 16;
    c.model = s->xl ? LC_MODEL_XL : LC_MODEL_VANILLA;
    c.mem_len = s->xl ? 8 : 0;
    c.norm = s->post ? LC_NORM_POST : LC_NORM_PRE;
    c.tied = !s->untied, c.shared_uv = s->shared_uv, c.qk_share = s->qk_share, c.attn_share = s->attn_share;
    c.objective = s->mlm ? LC_OBJECTIVE_MLM : LC_OBJECTIVE_CLM;
    c.extra_tokens = s->extra, c.reversible = s->reversible, c.ffn_chunk = s->ffn_chunk;
    snprintf(c.attn, sizeof c.attn, "%s", s->attn ? s->attn : "");
    return c;
}

/* A model of the layout after one training step, so moments (and XL memory) are not zero. */
static lc_model *trained(const layout *s, uint64_t seed) {
    lc_config c = layout_config(s);
    lc_model *m = NULL;
    if (lc_model_create(&c, 2, seed, &m)) { CHECK(0, "%s: %s", s->name, lc_last_error()); return NULL; }
    lc_train_options o;
    lc_train_options_default(&o);
    int tok[32], tgt[32];
    for (int j = 0; j < 32; j++) tok[j] = (j * 7 + 3) % 256, tgt[j] = (j * 5 + 1) % 256;
    if (lc_train_step(m, &o, tok, tgt, 2, 16, NULL)) CHECK(0, "%s: %s", s->name, lc_last_error());
    return m;
}

static lc_train_options options(void) {
    lc_train_options o;
    lc_train_options_default(&o);
    o.batch = 2;
    return o;
}

static int same_model(const lc_model *a, const lc_model *b) {
    const size_t p = a->ptab.total * sizeof(float), s = a->stab.total * sizeof(float);
    return a->ptab.total == b->ptab.total && a->stab.total == b->stab.total && a->step == b->step &&
           a->seed == b->seed && memcmp(&a->cfg, &b->cfg, sizeof a->cfg) == 0 && !memcmp(a->params, b->params, p) &&
           !memcmp(a->adam_m, b->adam_m, p) && !memcmp(a->adam_v, b->adam_v, p) && (!s || !memcmp(a->state, b->state, s));
}

TEST(every_layout_round_trips) {
    for (int i = 0; i < N_LAYOUTS; i++) {
        lc_model *m = trained(&layouts[i], 100 + (uint64_t)i), *back = NULL;
        if (!m) continue;
        lc_train_options o = options();
        const char *p = tmp_path("layout.ckpt");
        CHECK(lc_checkpoint_save(m, &o, p) == LC_OK, "%s: %s", layouts[i].name, lc_last_error());
        CHECK(lc_checkpoint_load(p, 2, &back, NULL) == LC_OK, "%s: %s", layouts[i].name, lc_last_error());
        if (back) {
            CHECK(same_model(m, back), "%s: parameters, moments, state, step, seed and config round-trip",
                  layouts[i].name);
            CHECK(lc_model_memory_rows(back) == lc_model_memory_rows(m), "%s: XL memory rows %d, saved %d",
                  layouts[i].name, lc_model_memory_rows(back), lc_model_memory_rows(m));
        }
        lc_model_free(back);
        lc_model_free(m);
    }
}

/* A file's bytes (NUL-terminated; binary files too), or NULL. */
static char *read_text(const char *path) {
    FILE *f = fopen(path, "rb");
    if (!f) return NULL;
    fseek(f, 0, SEEK_END);
    const long n = ftell(f);
    fseek(f, 0, SEEK_SET);
    char *s = calloc((size_t)n + 1, 1);
    if (fread(s, 1, (size_t)n, f) != (size_t)n) s[0] = 0;
    fclose(f);
    return s;
}

static int all_zero(const float *x, size_t n) {
    for (size_t i = 0; i < n; i++)
        if (x[i] != 0.0f) return 0;
    return 1;
}

/* lc_checkpoint_export: every tensor but the moments; the export loads as the same model with zero moments
 * (and the same XL memory), exporting it again in place changes nothing, and a safetensors file of another
 * tool is LC_ERR_FORMAT naming it. */
TEST(every_layout_exports_its_weights) {
    for (int i = 0; i < N_LAYOUTS; i++) {
        lc_model *m = trained(&layouts[i], 200 + (uint64_t)i), *back = NULL;
        if (!m) continue;
        lc_train_options o = options();
        const char *p = tmp_path("full.ckpt"), *q = tmp_path("export.ckpt");
        CHECK(lc_checkpoint_save(m, &o, p) == LC_OK, "%s: %s", layouts[i].name, lc_last_error());
        lc_export_info info;
        CHECK(lc_checkpoint_export(p, q, &info) == LC_OK, "%s: %s", layouts[i].name, lc_last_error());
        int n_params = 0;
        for (int k = 0; k < m->tensors.n; k++) n_params += lc_tensor_is_param(&m->tensors.t[k]);
        CHECK(info.dropped == 2 * n_params && info.bytes_out < info.bytes_in,
              "%s: %d tensors left out (want %d), %lld of %lld bytes", layouts[i].name, info.dropped, 2 * n_params,
              info.bytes_out, info.bytes_in);
        lc_st_file *f = NULL;
        if (lc_st_open(q, &f) == LC_OK) {
            int moments = 0;
            for (int k = 0; k < lc_st_count(f); k++) moments += strncmp(lc_st_at(f, k)->name, "optim.", 6) == 0;
            CHECK(moments == 0 && lc_st_count(f) == info.tensors, "%s: %d moments in the export", layouts[i].name, moments);
            lc_st_close(f);
        }
        CHECK(lc_checkpoint_load(q, 2, &back, NULL) == LC_OK, "%s: %s", layouts[i].name, lc_last_error());
        if (back) {
            const size_t np = m->ptab.total, ns = m->stab.total;
            CHECK(np == back->ptab.total && !memcmp(m->params, back->params, np * sizeof(float)) &&
                      (!ns || !memcmp(m->state, back->state, ns * sizeof(float))) && m->step == back->step &&
                      m->seed == back->seed && !memcmp(&m->cfg, &back->cfg, sizeof m->cfg),
                  "%s: the export's weights, state, step, seed and config", layouts[i].name);
            CHECK(all_zero(back->adam_m, np) && all_zero(back->adam_v, np), "%s: zero moments", layouts[i].name);
            CHECK(lc_model_memory_rows(back) == lc_model_memory_rows(m), "%s: XL memory rows %d, saved %d",
                  layouts[i].name, lc_model_memory_rows(back), lc_model_memory_rows(m));
        }
        lc_model_free(back);
        lc_model_free(m);
        char *first = read_text(q);
        CHECK(lc_checkpoint_export(q, q, &info) == LC_OK && info.dropped == 0, "%s: in place: %s", layouts[i].name,
              lc_last_error());
        char *again = read_text(q);
        CHECK(first && again && info.bytes_in == info.bytes_out && !memcmp(first, again, (size_t)info.bytes_out),
              "%s: exporting an export changes nothing", layouts[i].name);
        free(first), free(again);
    }
    const char *other = tmp_path("other.safetensors");
    const float one = 1.0f;
    const lc_st_tensor t = {"x", LC_DT_F32, 1, {1}, &one};
    CHECK(lc_st_write(other, &t, 1, NULL, 0) == LC_OK, "%s", lc_last_error());
    CHECK(lc_checkpoint_export(other, tmp_path("x.ckpt"), NULL) == LC_ERR_FORMAT &&
              strstr(lc_last_error(), "not a longctx checkpoint") && strstr(lc_last_error(), other),
          "another tool's file: %s", lc_last_error());
    CHECK(access(tmp_path("x.ckpt"), F_OK) != 0, "no file written for it");
}

/* ------------------------------------------------------------ crafting damaged files */

/* Copy checkpoint src to dst with metadata `key` set to value (NULL: removed; key may be new), leaving
 * out tensor `drop` (NULL: none). */
static void rewrite(const char *src, const char *dst, const char *key, const char *value, const char *drop) {
    lc_st_file *f;
    if (lc_st_open(src, &f)) { CHECK(0, "%s", lc_last_error()); return; }
    const int n = lc_st_count(f);
    lc_st_tensor *t = malloc(sizeof *t * (size_t)(n + 1));
    int k = 0;
    for (int i = 0; i < n; i++)
        if (!drop || strcmp(lc_st_at(f, i)->name, drop)) t[k++] = *lc_st_at(f, i);
    lc_st_meta meta[80];
    int nm = 0, seen = 0;
    const char *name;
    for (int i = 0; (name = lc_ckpt_meta_key(i, NULL)); i++) {
        const char *v = lc_st_get_meta(f, name);
        if (key && strcmp(name, key) == 0) v = value, seen = 1;
        if (v) meta[nm++] = (lc_st_meta){name, v};
    }
    if (key && !seen && value) meta[nm++] = (lc_st_meta){key, value};
    CHECK(lc_st_write(dst, t, k, meta, nm) == LC_OK, "%s", lc_last_error());
    free(t);
    lc_st_close(f);
}

/* A load of a damaged file: LC_OK (the damage was harmless), or LC_ERR_FORMAT / LC_ERR_IO with a message
 * naming the file, and no model left behind. */
static int load_is_clean(const char *path, const char *what) {
    lc_model *m = (lc_model *)&m;
    const lc_status st = lc_checkpoint_load(path, 2, &m, NULL);
    const int ok = st == LC_OK ? m != NULL
                               : (st == LC_ERR_FORMAT || st == LC_ERR_IO) && m == NULL && strstr(lc_last_error(), path);
    if (!ok) CHECK(0, "%s: status %s, message '%s'", what, lc_status_name(st), lc_last_error());
    lc_model_free(st == LC_OK ? m : NULL);
    return ok;
}

/* ------------------------------------------------------------ bug: metadata trusted before tensors */

/* Mapped bytes of this process now. */
static __attribute__((unused)) size_t address_space(void) {
    FILE *f = fopen("/proc/self/statm", "r");
    unsigned long pages = 0;
    if (f) {
        if (fscanf(f, "%lu", &pages) != 1) pages = 0;
        fclose(f);
    }
    return (size_t)pages * (size_t)sysconf(_SC_PAGESIZE);
}

/* Load in a child whose address space may grow by at most `extra` bytes: exit 0 when the load failed
 * with LC_ERR_FORMAT naming the file within `seconds` of the child's CPU time (the work it did: wall time
 * on a shared machine also counts the other processes). */
static double cpu_seconds(void) {
    struct timespec t;
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &t);
    return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

static int load_fails_small_and_fast(const char *path, size_t extra, double seconds) {
    fflush(stdout);
    const pid_t pid = fork();
    if (pid == 0) {
        alarm(30); /* a regression must fail, not hang the suite */
#if !defined(__SANITIZE_ADDRESS__) /* ASan reserves terabytes of shadow memory: no address-space cap */
        const struct rlimit cap = {address_space() + extra, address_space() + extra};
        setrlimit(RLIMIT_AS, &cap);
#endif
        lc_model *m = NULL;
        const double t0 = cpu_seconds();
        const lc_status st = lc_checkpoint_load(path, 2, &m, NULL);
        const double dt = cpu_seconds() - t0;
        const int ok = st == LC_ERR_FORMAT && strstr(lc_last_error(), path) && dt < seconds;
        printf("  %s in %.3f s of CPU: %s: %s\n", ok ? "refused" : "NOT REFUSED", dt, lc_status_name(st), lc_last_error());
        fflush(stdout);
        _exit(ok ? 0 : 1);
    }
    int status = 0;
    waitpid(pid, &status, 0);
    return WIFEXITED(status) && WEXITSTATUS(status) == 0;
}

TEST(huge_metadata_fails_before_allocating) {
    lc_config c = layout_config(&layouts[0]);
    c.d_model = 32, c.d_ff = 128; /* 1024 such layers need over 64 MB */
    lc_model *m = NULL; /* created, never run: no thread exists before the fork */
    if (lc_model_create(&c, 2, 1, &m)) { CHECK(0, "%s", lc_last_error()); return; }
    lc_train_options o = options();
    const char *p = tmp_path("small.ckpt"), *q = tmp_path("huge.ckpt");
    CHECK(lc_checkpoint_save(m, &o, p) == LC_OK, "%s", lc_last_error());
    lc_model_free(m);
    const struct {
        const char *key, *value;
    } edits[] = {{"d_ff", "1048576"}, {"n_layer", "1024"}, {"d_model", "65536"}, {"seq_len", "16777216"}};
    for (size_t i = 0; i < sizeof edits / sizeof *edits; i++) {
        rewrite(p, q, edits[i].key, edits[i].value, NULL);
        CHECK(load_fails_small_and_fast(q, (size_t)64 << 20, 1.0),
              "%s = %s: must fail with LC_ERR_FORMAT naming the file, in < 1 s of CPU and < 64 MB", edits[i].key,
              edits[i].value);
    }
}

/* ------------------------------------------------------------ bug: damaged files and exit codes */

static const char *fuzz_values[] = {"-1", "0", "1", "2", "7", "65536", "1073741824", "9223372036854775808",
                                    "-9223372036854775809", "18446744073709551616", "1.5", "1e3", "nan", "inf",
                                    "abc", "", " 1", "+1", "0x10", "full", "xl", "post", "mlm",
                                    "window:w=4,global=2", "linformer:k=4", "routing:clusters=2", "lsh", NULL};

/* Sizes no tensor proves: an XL model's segment and memory lengths. A valid huge value there is a
 * request for memory that lc_model_create must refuse before allocating; not this file's checks. */
static int unproven_size(const lc_model *m, const char *key, const char *value) {
    return m->cfg.model == LC_MODEL_XL && (!strcmp(key, "seq_len") || !strcmp(key, "mem_len")) &&
           strtod(value, NULL) > 4096;
}

TEST(every_metadata_edit_is_a_clean_error) {
    const int picks[] = {0, 3, 8}; /* vanilla; XL with memory, shared u/v, untied; MLM with kind parameters */
    int runs = 0;
    const double t0 = lc_now_seconds();
    for (size_t s = 0; s < sizeof picks / sizeof *picks; s++) {
        const layout *ly = &layouts[picks[s]];
        lc_model *m = trained(ly, 5);
        if (!m) continue;
        lc_train_options o = options();
        const char *p = tmp_path("fuzz.ckpt"), *q = tmp_path("fuzz-edit.ckpt");
        CHECK(lc_checkpoint_save(m, &o, p) == LC_OK, "%s", lc_last_error());
        const char *key;
        char what[256];
        for (int k = 0; (key = lc_ckpt_meta_key(k, NULL)); k++) {
            for (int v = -1; v < 0 || fuzz_values[v]; v++) { /* v = -1: the key removed */
                const char *value = v < 0 ? NULL : fuzz_values[v];
                if (value && unproven_size(m, key, value)) continue;
                rewrite(p, q, key, value, NULL);
                snprintf(what, sizeof what, "%s: %s = %s", ly->name, key, value ? value : "(removed)");
                load_is_clean(q, what);
                runs++;
            }
        }
        lc_model_free(m);
    }
    printf("  %d edited files in %.1f s\n", runs, lc_now_seconds() - t0);
}

TEST(truncations_and_byte_flips_are_clean_errors) {
    lc_model *m = trained(&layouts[4], 9); /* XL, tied Q/K: header, memory and moments */
    if (!m) return;
    lc_train_options o = options();
    const char *p = tmp_path("flip.ckpt"), *q = tmp_path("flip-edit.ckpt");
    CHECK(lc_checkpoint_save(m, &o, p) == LC_OK, "%s", lc_last_error());
    lc_model_free(m);
    FILE *f = fopen(p, "rb");
    fseek(f, 0, SEEK_END);
    const long size = ftell(f);
    fseek(f, 0, SEEK_SET);
    unsigned char *buf = malloc((size_t)size);
    CHECK(fread(buf, 1, (size_t)size, f) == (size_t)size, "read back");
    fclose(f);
    long header = 0;
    for (int i = 7; i >= 0; i--) header = header << 8 | buf[i];
    char what[128];
    int runs = 0;
    const double t0 = lc_now_seconds();
    for (long cut = 0; cut < size; cut += cut < 8 + header ? 7 : 997) { /* truncations */
        f = fopen(q, "wb");
        fwrite(buf, 1, (size_t)cut, f);
        fclose(f);
        snprintf(what, sizeof what, "truncated to %ld of %ld bytes", cut, size);
        load_is_clean(q, what), runs++;
    }
    const unsigned char flips[] = {0x01, 0x10, 0x80, 0x04, 0x40, 0x02};
    for (long at = 0; at < size; at += at < 8 + header ? 2 : 499) { /* every other header byte, some data */
        const unsigned char flip = flips[at % (long)sizeof flips];
        buf[at] ^= flip;
        f = fopen(q, "wb");
        fwrite(buf, 1, (size_t)size, f);
        fclose(f);
        buf[at] ^= flip;
        snprintf(what, sizeof what, "byte %ld ^ 0x%02x", at, flip);
        load_is_clean(q, what), runs++;
    }
    printf("  %d damaged files in %.1f s\n", runs, lc_now_seconds() - t0);
    free(buf);
}

/* A file whose metadata and tensors disagree in ways that used to load silently or with a usage error. */
TEST(metadata_and_tensors_must_agree) {
    lc_model *m = trained(&layouts[1], 3); /* untied: has lm_head.weight */
    lc_train_options o = options();
    const char *p = tmp_path("agree.ckpt"), *q = tmp_path("agree-edit.ckpt");
    CHECK(lc_checkpoint_save(m, &o, p) == LC_OK, "%s", lc_last_error());
    lc_model_free(m);
    lc_model *back = NULL;
    rewrite(p, q, "tied", "1", NULL);
    CHECK(lc_checkpoint_load(q, 2, &back, NULL) == LC_ERR_FORMAT && strstr(lc_last_error(), "lm_head.weight") &&
              strstr(lc_last_error(), q),
          "a stray tensor is refused by name: %s", lc_last_error());
    rewrite(p, q, NULL, NULL, "blocks.1.ffn.fc2.bias");
    CHECK(lc_checkpoint_load(q, 2, &back, NULL) == LC_ERR_FORMAT && strstr(lc_last_error(), "blocks.1.ffn.fc2.bias"),
          "a missing tensor is named: %s", lc_last_error());
    rewrite(p, q, "attn", "linformer:k=4", NULL); /* parses, but a causal model cannot run it */
    CHECK(lc_checkpoint_load(q, 2, &back, NULL) == LC_ERR_FORMAT && strstr(lc_last_error(), q),
          "a model that cannot be built is a damaged file, not a usage error: %s", lc_last_error());
    rewrite(p, q, "n_head", "3", NULL);
    CHECK(lc_checkpoint_load(q, 2, &back, NULL) == LC_ERR_FORMAT, "bad config");
    const char *e = lc_last_error(), *first = strstr(e, "bad model config");
    CHECK(first && !strstr(first + 1, "bad model config") && strstr(e, "not divisible"),
          "the message says it once: %s", e);
    CHECK(back == NULL, "no model on failure");
}

TEST(non_finite_tensors_are_refused) {
    lc_model *m = trained(&layouts[2], 4);
    lc_train_options o = options();
    const char *p = tmp_path("nan.ckpt"), *q = tmp_path("nan-edit.ckpt");
    CHECK(lc_checkpoint_save(m, &o, p) == LC_OK, "%s", lc_last_error());
    lc_model_free(m);
    const char *victims[] = {"blocks.0.ffn.fc1.weight", "optim.v.wte", "state.memory.1"};
    for (size_t k = 0; k < sizeof victims / sizeof *victims; k++) {
        lc_st_file *f;
        if (lc_st_open(p, &f)) { CHECK(0, "%s", lc_last_error()); return; }
        const int n = lc_st_count(f);
        lc_st_tensor *t = malloc(sizeof *t * (size_t)n);
        float *copy = NULL;
        for (int i = 0; i < n; i++) {
            t[i] = *lc_st_at(f, i);
            if (strcmp(t[i].name, victims[k])) continue;
            size_t count = 1;
            for (int d = 0; d < t[i].ndim; d++) count *= (size_t)t[i].shape[d];
            copy = malloc(count * sizeof *copy);
            memcpy(copy, t[i].data, count * sizeof *copy);
            copy[count / 2] = NAN;
            t[i].data = copy;
        }
        lc_st_meta meta[80];
        int nm = 0;
        const char *key;
        for (int i = 0; (key = lc_ckpt_meta_key(i, NULL)); i++)
            if (lc_st_get_meta(f, key)) meta[nm++] = (lc_st_meta){key, lc_st_get_meta(f, key)};
        CHECK(copy && lc_st_write(q, t, n, meta, nm) == LC_OK, "%s: %s", victims[k], lc_last_error());
        lc_model *back = NULL;
        CHECK(lc_checkpoint_load(q, 2, &back, NULL) == LC_ERR_FORMAT && strstr(lc_last_error(), victims[k]),
              "NaN in %s: %s", victims[k], lc_last_error());
        lc_model_free(back);
        free(copy);
        free(t);
        lc_st_close(f);
    }
}

/* ------------------------------------------------------------ bug: seeds of 2^63 and more */

TEST(any_seed_round_trips) {
    const uint64_t seeds[] = {0, 1ULL << 62, 1ULL << 63, UINT64_MAX};
    for (size_t i = 0; i < sizeof seeds / sizeof *seeds; i++) {
        lc_config c = layout_config(&layouts[0]);
        lc_model *m = NULL, *back = NULL;
        if (lc_model_create(&c, 2, seeds[i], &m)) { CHECK(0, "%s", lc_last_error()); continue; }
        lc_train_options o = options(), saved;
        o.seed = seeds[i];
        const char *p = tmp_path("seed.ckpt");
        CHECK(lc_checkpoint_save(m, &o, p) == LC_OK, "%s", lc_last_error());
        CHECK(lc_checkpoint_load(p, 2, &back, &saved) == LC_OK, "seed %llu: %s", (unsigned long long)seeds[i],
              lc_last_error());
        if (back) CHECK(back->seed == seeds[i] && saved.seed == seeds[i], "seed %llu round-trips",
                        (unsigned long long)seeds[i]);
        lc_model_free(back);
        lc_model_free(m);
    }
}

/* ------------------------------------------------------------ bug: a FIFO as a checkpoint hangs */

static void hung(int sig) {
    (void)sig;
    static const char msg[] = "FAIL: opening a FIFO as a checkpoint hung\n";
    (void)!write(1, msg, sizeof msg - 1);
    _exit(1);
}

TEST(fifos_directories_and_devices_are_refused_at_once) {
    const char *fifo = tmp_path("fifo.ckpt");
    CHECK(mkfifo(fifo, 0600) == 0, "mkfifo");
    signal(SIGALRM, hung);
    alarm(10);
    const char *paths[] = {fifo, tmpdir, "/dev/null"};
    const char *words[] = {"FIFO", "directory", "device"};
    for (int i = 0; i < 3; i++) {
        lc_model *m = NULL;
        const double t0 = lc_now_seconds();
        CHECK(lc_checkpoint_load(paths[i], 2, &m, NULL) == LC_ERR_IO && strstr(lc_last_error(), paths[i]) &&
                  strstr(lc_last_error(), words[i]),
              "%s: %s", paths[i], lc_last_error());
        CHECK(lc_now_seconds() - t0 < 1.0 && m == NULL, "refused at once");
    }
    alarm(0);
    signal(SIGALRM, SIG_DFL);
}

/* ------------------------------------------------------------ bug: lc_fail quoting lc_last_error */

TEST(fail_may_quote_the_last_error) {
    lc_fail(LC_ERR_ARG, "inner %d", 7);
    CHECK(lc_fail(LC_ERR_FORMAT, "outer: %s", lc_last_error()) == LC_ERR_FORMAT, "status");
    CHECK(strcmp(lc_last_error(), "outer: inner 7") == 0, "got '%s'", lc_last_error());
}

/* ------------------------------------------------------------ data record and rank count */

/* The data record (path, size, hash, split) and train.ranks come back as saved; without a path the
 * data.* keys are not written and come back empty; older files without train.ranks read one process. */
TEST(data_record_and_ranks_round_trip) {
    lc_model *m = trained(&layouts[0], 11), *back = NULL;
    if (!m) return;
    lc_train_options o = options(), got;
    snprintf(o.data.path, sizeof o.data.path, "/data/corpus \xc3\xa9t\xc3\xa9.txt");
    o.data.size = 123456789012L, o.data.hash = 0xfedcba9876543210ULL, o.data.split = LC_SPLIT_NANOGPT, o.ranks = 8;
    const char *path = tmp_path("record.ckpt");
    CHECK(lc_checkpoint_save(m, &o, path) == LC_OK, "%s", lc_last_error());
    memset(&got, 0x5a, sizeof got);
    CHECK(lc_checkpoint_load(path, 0, &back, &got) == LC_OK, "%s", lc_last_error());
    CHECK(strcmp(got.data.path, o.data.path) == 0, "path '%s'", got.data.path);
    CHECK(got.data.size == o.data.size && got.data.hash == o.data.hash && got.data.split == LC_SPLIT_NANOGPT,
          "size %ld hash %llx split %d", got.data.size, (unsigned long long)got.data.hash, got.data.split);
    CHECK(got.ranks == 8, "ranks %d", got.ranks);
    lc_model_free(back);
    o.data.path[0] = 0, o.ranks = 1;
    CHECK(lc_checkpoint_save(m, &o, path) == LC_OK, "%s", lc_last_error());
    lc_st_file *f;
    if (lc_st_open(path, &f) == LC_OK) {
        CHECK(!lc_st_get_meta(f, "data.path") && !lc_st_get_meta(f, "data.hash"), "no data.* keys without a path");
        lc_st_close(f);
    }
    memset(&got, 0x5a, sizeof got);
    CHECK(lc_checkpoint_load(path, 0, &back, &got) == LC_OK, "%s", lc_last_error());
    CHECK(!got.data.path[0] && got.data.size == 0 && got.data.hash == 0, "an absent record reads empty");
    lc_model_free(back);
    const char *old = tmp_path("no_ranks.ckpt");
    rewrite(path, old, "train.ranks", NULL, NULL);
    CHECK(lc_checkpoint_load(old, 0, &back, &got) == LC_OK && got.ranks <= 1, "without train.ranks: %d (%s)",
          got.ranks, lc_last_error());
    lc_model_free(back);
    lc_model_free(m);
}

/* ------------------------------------------------------------ docs/reference/checkpoint.md */

/* "blocks.3.attn.group1.params" -> "`blocks.{i}.attn.group{g}.params`" */
static void doc_name(const char *name, char *out, size_t cap) {
    size_t n = 0;
    out[n++] = '`';
    for (const char *s = name; *s && n + 8 < cap;) {
        if (!strncmp(s, "blocks.", 7) && s[7] >= '0' && s[7] <= '9') {
            n += (size_t)snprintf(out + n, cap - n, "blocks.{i}");
            for (s += 7; *s >= '0' && *s <= '9'; s++) continue;
        } else if (!strncmp(s, "group", 5) && s[5] >= '0' && s[5] <= '9') {
            n += (size_t)snprintf(out + n, cap - n, "group{g}");
            for (s += 5; *s >= '0' && *s <= '9'; s++) continue;
        } else {
            out[n++] = *s++;
        }
    }
    snprintf(out + n, cap - n, "`");
}

TEST(docs_list_every_tensor_and_key) {
    char *doc = read_text("docs/reference/checkpoint.md");
    if (!doc) { CHECK(0, "cannot read docs/reference/checkpoint.md"); return; }
    char want[LC_NAME_MAX + 32];
    for (int i = 0; i < N_LAYOUTS; i++) {
        lc_model *m = trained(&layouts[i], 2);
        if (!m) continue;
        for (int k = 0; k < m->tensors.n; k++) {
            doc_name(m->tensors.t[k].name, want, sizeof want);
            CHECK(strstr(doc, want), "docs/reference/checkpoint.md lacks %s (%s)", want, layouts[i].name);
        }
        lc_model_free(m);
    }
    const char *extra[] = {"`optim.m.<name>`", "`optim.v.<name>`", "`state.memory.{i}`"};
    for (size_t i = 0; i < sizeof extra / sizeof *extra; i++) CHECK(strstr(doc, extra[i]), "lacks %s", extra[i]);
    const char *key;
    for (int i = 0; (key = lc_ckpt_meta_key(i, NULL)); i++) {
        snprintf(want, sizeof want, "`%s`", key);
        CHECK(strstr(doc, want), "docs/reference/checkpoint.md lacks metadata key %s", want);
    }
    free(doc);
}

int main(void) {
    /* In memory when /dev/shm exists: the fuzz tests write thousands of files, and every lc_st_write fsyncs. */
    if (access("/dev/shm", W_OK) != 0 || tmpdir_create("/dev/shm/lc_test_checkpoint_XXXXXX"))
        if (tmpdir_create("/tmp/lc_test_checkpoint_XXXXXX")) return 1;
    lc_set_threads(1); /* thousands of tiny models: no thread pool spinning between them */
    RUN(huge_metadata_fails_before_allocating); /* first: it forks, best before any thread exists */
    RUN(every_layout_round_trips);
    RUN(every_layout_exports_its_weights);
    RUN(data_record_and_ranks_round_trip);
    RUN(every_metadata_edit_is_a_clean_error);
    RUN(truncations_and_byte_flips_are_clean_errors);
    RUN(metadata_and_tensors_must_agree);
    RUN(non_finite_tensors_are_refused);
    RUN(any_seed_round_trips);
    RUN(fifos_directories_and_devices_are_refused_at_once);
    RUN(fail_may_quote_the_last_error);
    RUN(docs_list_every_tensor_and_key);
    tmpdir_remove();
    return test_summary("test_checkpoint");
}
