/* Run-time CPU dispatch (src/core/cpu.h, docs/guides/install.md): in a portable build (the release variant links
 * this test against $(BUILD)/pic/liblongctx.a) the same kernels and models run on the generic and the
 * AVX-512 path and must agree: the built-in gemm against the double reference on each path, and for every
 * attention kind a tiny model's loss and logits after two training steps (forward, backward, AdamW).
 * Also the LC_CPU choice and lc_cpu_select's refusals. In a build tree compiled for its own CPU (other
 * variants) there is one path, "native", and the test checks that it says so. */
#include <stdlib.h>
#include <string.h>

#include "core/cpu.h"
#include "harness.h"
#include "kernels/kernels.h"
#include "longctx.h"

static int dispatched(void) { return strcmp(lc_cpu_path(), "native") != 0; }

TEST(version_and_path) {
    CHECK(strcmp(lc_version(), LC_VERSION_STRING) == 0, "lc_version %s, header %s", lc_version(), LC_VERSION_STRING);
    CHECK(LC_VERSION_NUMBER == LC_VERSION_MAJOR * 10000 + LC_VERSION_MINOR * 100 + LC_VERSION_PATCH, "version number");
    const char *p = lc_cpu_path();
    CHECK(!strcmp(p, "native") || !strcmp(p, "generic") || !strcmp(p, "avx512"), "path %s", p);
    CHECK(lc_cpu_select("sse9") == -1 && strstr(lc_last_error(), "sse9"), "unknown path refused: %s", lc_last_error());
    if (!dispatched()) {
        CHECK(lc_cpu_select("generic") == -1 && strstr(lc_last_error(), "native"), "one path: %s", lc_last_error());
        CHECK(lc_cpu_select("native") == 0, "native is the path");
        return;
    }
    const char *env = getenv("LC_CPU");
    if (env && !strcmp(env, "generic")) CHECK(!strcmp(p, "generic"), "LC_CPU=generic, path %s", p);
    else CHECK(!strcmp(p, lc_cpu_has_avx512() ? "avx512" : "generic"), "startup path %s", p);
    if (!lc_cpu_has_avx512())
        CHECK(lc_cpu_select("avx512") == -1 && strstr(lc_last_error(), "lacks"), "refused: %s", lc_last_error());
}

TEST(lc_cpu_environment) {
    const char *saved = getenv("LC_CPU");
    char keep[32] = "";
    if (saved) snprintf(keep, sizeof keep, "%s", saved);
    const int best = lc_cpu_has_avx512() ? LC_CPU_AVX512 : LC_CPU_GENERIC;
    setenv("LC_CPU", "generic", 1);
    CHECK(lc_cpu_choose() == LC_CPU_GENERIC, "LC_CPU=generic");
    setenv("LC_CPU", "auto", 1);
    CHECK(lc_cpu_choose() == best, "LC_CPU=auto");
    setenv("LC_CPU", "avx512", 1);
    CHECK(lc_cpu_choose() == best, "LC_CPU=avx512 takes it only where the CPU has it");
    unsetenv("LC_CPU");
    CHECK(lc_cpu_choose() == best, "no LC_CPU");
    if (saved) setenv("LC_CPU", keep, 1);
}

/* the paths to compare: both where the CPU has AVX-512, else generic alone; "native" without dispatch */
static int paths(const char **out) {
    if (!dispatched()) return out[0] = "native", 1;
    out[0] = "generic";
    if (!lc_cpu_has_avx512()) return 1;
    out[1] = "avx512";
    return 2;
}

TEST(gemm_each_path) {
    const char *p[2];
    const int np = paths(p);
    const int M = 37, N = 45, K = 300;
    float *A = malloc(sizeof(float) * M * K), *B = malloc(sizeof(float) * K * N), *C[2];
    double *Ad = malloc(sizeof(double) * M * K), *Bd = malloc(sizeof(double) * K * N), *Cd = malloc(sizeof(double) * M * N);
    for (int i = 0; i < M * K; i++) Ad[i] = A[i] = (float)((i * 7919 % 1000) / 500.0 - 1.0);
    for (int i = 0; i < K * N; i++) Bd[i] = B[i] = (float)((i * 104729 % 997) / 498.5 - 1.0);
    lc_gemm_ref(LC_NO_TRANS, LC_TRANS, M, N, K, 1.0, Ad, K, Bd, K, 0.0, Cd, N);
    for (int k = 0; k < np; k++) {
        CHECK(lc_cpu_select(p[k]) == 0, "select %s: %s", p[k], lc_last_error());
        C[k] = calloc((size_t)M * N, sizeof(float));
        lc_gemm_builtin(LC_NO_TRANS, LC_TRANS, M, N, K, 1.0f, A, K, B, K, 0.0f, C[k], N);
        printf("  path %s:\n", p[k]);
        CHECK_CLOSE("gemm vs double reference", C[k], Cd, M * N, 1e-4, 1e-4);
    }
    if (np == 2) CHECK_CLOSE("gemm generic vs avx512", C[0], C[1], M * N, 1e-5, 1e-5);
#ifdef LC_TEST_PORTABLE
    /* white box (linked statically to the portable library): the jump of lc_gemm_builtin follows the path */
    typedef void fn(void);
    extern fn *lcisa_ptr_lc_gemm_builtin, lcisa_generic_lc_gemm_builtin, lcisa_avx512_lc_gemm_builtin;
    for (int k = 0; k < np; k++) {
        lc_cpu_select(p[k]);
        CHECK(lcisa_ptr_lc_gemm_builtin == (k ? lcisa_avx512_lc_gemm_builtin : lcisa_generic_lc_gemm_builtin),
              "path %s: lc_gemm_builtin jumps to the wrong copy", p[k]);
    }
#endif
    for (int k = 0; k < np; k++) free(C[k]);
    free(A), free(B), free(Ad), free(Bd), free(Cd);
}

/* A tiny model with attention `spec` (causal if the kind allows, else masked-LM), two training steps on
 * path `path`, then a forward: the loss of each step and the last logits. 0 when the model is refused. */
static int run_model(const char *path, const char *spec, int xl, double loss[3], float *logits, int B, int T) {
    if (lc_cpu_select(path) != 0) return 0;
    lc_config cfg;
    lc_config_preset(&cfg, "tiny");
    cfg.n_layer = 2;
    cfg.seq_len = T;
    snprintf(cfg.attn, sizeof cfg.attn, "%s", spec);
    cfg.model = xl ? LC_MODEL_XL : LC_MODEL_VANILLA;
    cfg.mem_len = xl ? T : 0;
    lc_model *m = NULL;
    if (lc_model_create(&cfg, B, 7, &m) != LC_OK) {
        cfg.objective = LC_OBJECTIVE_MLM;
        if (lc_model_create(&cfg, B, 7, &m) != LC_OK) return printf("  %s: refused: %s\n", spec, lc_last_error()), 0;
    }
    lc_model_set_threads(m, 1);
    lc_train_options o;
    lc_train_options_default(&o);
    o.steps = 10;
    int *tok = malloc(sizeof(int) * B * T), *tgt = malloc(sizeof(int) * B * T);
    for (int i = 0; i < B * T; i++) tok[i] = "the quick brown fox jumps over the lazy dog. "[i % 45], tgt[i] = tok[i];
    for (int i = 0; i + 1 < B * T; i++) tgt[i] = cfg.objective == LC_OBJECTIVE_MLM ? (i % 7 == 0 ? tok[i] : -1) : tok[i + 1];
    if (cfg.objective == LC_OBJECTIVE_MLM)
        for (int i = 0; i < B * T; i += 7) tok[i] = LC_MASK_TOKEN;
    tgt[B * T - 1] = -1;
    int ok = lc_train_step(m, &o, tok, tgt, B, T, &loss[0]) == LC_OK && lc_train_step(m, &o, tok, tgt, B, T, &loss[1]) == LC_OK;
    long n = 0;
    ok = ok && lc_model_forward(m, tok, tgt, B, T, 0, &loss[2], &n) == LC_OK;
    loss[2] /= n > 0 ? (double)n : 1.0;
    if (!ok) printf("  %s on %s: %s\n", spec, path, lc_last_error());
    if (ok) memcpy(logits, lc_model_logits(m), sizeof(float) * B * T * 256);
    free(tok), free(tgt);
    lc_model_free(m);
    return ok;
}

TEST(models_each_path) {
    static const char *const specs[] = {"full",           "window:w=8",        "block:b=8",      "strided:s=4",
                                        "bigbird:b=4,r=1", "compressed:w=16,s=4", "linformer:k=8", "lsh:buckets=4,chunk=16",
                                        "routing:clusters=2", "window:w=4,global=2"};
    const char *p[2];
    const int np = paths(p), B = 2, T = 64;
    float *logits[2] = {malloc(sizeof(float) * B * T * 256), malloc(sizeof(float) * B * T * 256)};
    for (int s = 0; s < (int)(sizeof specs / sizeof specs[0]) + 1; s++) {
        const int xl = s == (int)(sizeof specs / sizeof specs[0]);
        const char *spec = xl ? "full" : specs[s];
        double loss[2][3];
        int ran = 0;
        for (int k = 0; k < np; k++) ran += run_model(p[k], spec, xl, loss[k], logits[k], B, T);
        CHECK(ran == np, "%s%s ran on %d of %d paths", spec, xl ? " (XL)" : "", ran, np);
        if (ran != np) continue;
        printf("  %s%s: losses %.6f %.6f %.6f", spec, xl ? " (XL)" : "", loss[0][0], loss[0][1], loss[0][2]);
        if (np == 2) printf(" | avx512 %.6f %.6f %.6f", loss[1][0], loss[1][1], loss[1][2]);
        printf("\n");
        CHECK(loss[0][2] < loss[0][0], "%s: training lowered the loss %.4f -> %.4f", spec, loss[0][0], loss[0][2]);
        if (np < 2) continue;
        CHECK_CLOSE("losses generic vs avx512", loss[0], loss[1], 3, 1e-4, 0);
        CHECK_CLOSE("logits generic vs avx512", logits[0], logits[1], B * T * 256, 1e-3, 1e-4);
    }
    free(logits[0]), free(logits[1]);
}

int main(void) {
    printf("kernels: %s path (CPU %s AVX-512)\n", lc_cpu_path(), lc_cpu_has_avx512() ? "has" : "lacks");
    RUN(version_and_path);
    RUN(lc_cpu_environment);
    RUN(gemm_each_path);
    RUN(models_each_path);
    return test_summary("test_dispatch");
}
