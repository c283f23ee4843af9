/* CPU feature detection and the choice of code path for a portable build (see core/cpu.h):
 * lc_cpu_path, lc_cpu_select and the startup choice made from CPUID and LC_CPU. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/cpu.h"
#include "core/status.h"

int lc_cpu_level = LC_CPU_GENERIC;

#if defined(__x86_64__) || defined(__i386__)
/* compiled for the plain x86-64 target, so the check itself runs on any x86-64 CPU */
__attribute__((target("arch=x86-64"))) int lc_cpu_has_avx512(void) {
    __builtin_cpu_init();
    return __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512cd") &&
           __builtin_cpu_supports("avx512bw") && __builtin_cpu_supports("avx512dq") &&
           __builtin_cpu_supports("avx512vl") && __builtin_cpu_supports("fma") && __builtin_cpu_supports("avx2");
}
#else
int lc_cpu_has_avx512(void) { return 0; }
#endif

static int path_level(const char *path) {
    if (strcmp(path, "generic") == 0) return LC_CPU_GENERIC;
    if (strcmp(path, "avx512") == 0) return LC_CPU_AVX512;
    return -1;
}

int lc_cpu_choose(void) {
    const int best = lc_cpu_has_avx512() ? LC_CPU_AVX512 : LC_CPU_GENERIC;
    const char *env = getenv("LC_CPU");
    if (!env || !*env || strcmp(env, "auto") == 0) return best;
    const int want = path_level(env);
    if (want < 0) {
        fprintf(stderr, "longctx: warning: LC_CPU=%s is not generic, avx512 or auto; using %s\n", env,
                best ? "avx512" : "generic");
        return best;
    }
    if (want > best) {
        fprintf(stderr, "longctx: warning: LC_CPU=%s: this CPU lacks AVX-512; using generic\n", env);
        return best;
    }
    return want;
}

#ifdef LC_DISPATCH
/* The portable build needs its baseline (PORTABLE_ARCH in the Makefile); say so in one line instead of
 * dying of an illegal instruction somewhere later. */
#if defined(__x86_64__) && defined(__AVX2__)
__attribute__((target("arch=x86-64"))) static int lc_cpu_has_baseline(void) {
    __builtin_cpu_init();
    return __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma");
}
#define LC_BASELINE_NAME "AVX2 and FMA (x86-64-v3)"
#else
static int lc_cpu_has_baseline(void) { return 1; }
#define LC_BASELINE_NAME ""
#endif

__attribute__((constructor, target("arch=x86-64"))) static void lc_cpu_startup(void) {
    if (!lc_cpu_has_baseline()) {
        fputs("longctx: this library was built for CPUs with " LC_BASELINE_NAME
              "; rebuild it with PORTABLE_ARCH=x86-64-v2 (docs/guides/install.md)\n", stderr);
        abort();
    }
    lc_cpu_level = lc_cpu_choose();
    lc_dispatch_apply(lc_cpu_level);
}

const char *lc_cpu_path(void) { return lc_cpu_level == LC_CPU_AVX512 ? "avx512" : "generic"; }

int lc_cpu_select(const char *path) {
    lc_clear_error();
    const int level = path ? path_level(path) : -1;
    if (level < 0) return lc_fail(LC_ERR_ARG, "CPU path '%s' is not generic or avx512", path ? path : "(null)"), -1;
    if (level == LC_CPU_AVX512 && !lc_cpu_has_avx512())
        return lc_fail(LC_ERR_ARG, "CPU path avx512: this CPU lacks AVX-512"), -1;
    lc_cpu_level = level;
    lc_dispatch_apply(level);
    return 0;
}
#else
const char *lc_cpu_path(void) { return "native"; }

int lc_cpu_select(const char *path) {
    lc_clear_error();
    if (path && strcmp(path, "native") == 0) return 0;
    return lc_fail(LC_ERR_ARG, "CPU path '%s': this build has one path, native (compiled for its own CPU; "
                               "the portable build of make install chooses at run time)", path ? path : "(null)"), -1;
}
#endif
