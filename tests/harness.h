/* A minimal test harness shared by every tests/test_*.c program.
 *   TEST(name) { CHECK(cond, "fmt", ...); CHECK_CLOSE(label, got, want, n, rtol, atol); }
 *   int main(void) { RUN(name); ...; return test_summary(); }
 * Each CHECK failure prints file:line and the message; each test's line ("ok" or "FAIL") ends with its wall
 * time; test_summary() prints "<prog>: N passed, N failed" and returns non-zero when anything failed.
 * LC_TEST_ONLY=name[,name...] in the environment runs only the tests named. */
#ifndef LC_TESTS_HARNESS_H
#define LC_TESTS_HARNESS_H

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/timer.h"

static int harness_passed, harness_failed, harness_current_failed;
static const char *harness_current = "";

#define TEST(name) static void name(void)

/* LC_TEST_ONLY=name[,name...] runs only the tests named (for timing or debugging one test); unset: all. */
static inline int harness_selected(const char *name) {
    const char *only = getenv("LC_TEST_ONLY");
    if (!only || !*only) return 1;
    const size_t n = strlen(name);
    for (const char *p = only; (p = strstr(p, name)); p += n)
        if ((p == only || p[-1] == ',') && (p[n] == ',' || p[n] == 0)) return 1;
    return 0;
}

#define RUN(name)                                                                                        \
    do {                                                                                                 \
        if (!harness_selected(#name)) break;                                                             \
        harness_current = #name;                                                                         \
        harness_current_failed = 0;                                                                      \
        const double harness_start_ = lc_now_seconds();                                                  \
        name();                                                                                          \
        const double harness_ms_ = 1e3 * (lc_now_seconds() - harness_start_);                            \
        if (harness_current_failed) {                                                                    \
            harness_failed++;                                                                            \
            printf("FAIL %s (%.0f ms)\n", #name, harness_ms_);                                           \
        } else {                                                                                         \
            harness_passed++;                                                                            \
            printf("ok   %s (%.0f ms)\n", #name, harness_ms_);                                           \
        }                                                                                                \
        fflush(stdout);                                                                                  \
    } while (0)

#define CHECK(cond, ...)                                                                                 \
    do {                                                                                                 \
        if (!(cond)) {                                                                                   \
            printf("  %s:%d: %s: check failed: %s: ", __FILE__, __LINE__, harness_current, #cond);       \
            printf(__VA_ARGS__);                                                                         \
            printf("\n");                                                                                \
            harness_current_failed = 1;                                                                  \
        }                                                                                                \
    } while (0)

/* Largest relative error max|got-want| / (atol + rtol*|want|) style comparison over n values.
 * Prints the worst relative error (over elements with |want| > atol), the worst absolute error and the
 * worst error as a share of its tolerance, so logs show the margin, and fails when any element is outside
 * |got - want| <= atol + rtol * |want|. `got` and `want` may be float or double arrays.
 * Equal values pass (the same infinity, or 0 against 0 with atol = 0). A NaN in got or want fails: its
 * ratio is NaN, and the first NaN ratio stays the worst (no later finite ratio replaces it). */
#define CHECK_CLOSE(label, got, want, n, rtol, atol)                                                     \
    do {                                                                                                 \
        double worst_ratio_ = 0, worst_rel_ = 0, worst_abs_ = 0;                                         \
        long worst_i_ = -1;                                                                              \
        for (long i_ = 0; i_ < (long)(n); i_++) {                                                        \
            double g_ = (double)(got)[i_], w_ = (double)(want)[i_];                                      \
            double err_ = fabs(g_ - w_), lim_ = (atol) + (rtol)*fabs(w_);                                \
            double ratio_ = g_ == w_ ? 0.0 : err_ / lim_;                                                \
            if (!isnan(worst_ratio_) && !(ratio_ <= worst_ratio_)) { worst_ratio_ = ratio_; worst_i_ = i_; } \
            if (err_ > worst_abs_) worst_abs_ = err_;                                                    \
            if (fabs(w_) > (atol) && err_ / fabs(w_) > worst_rel_) worst_rel_ = err_ / fabs(w_);         \
        }                                                                                                \
        int ok_ = worst_ratio_ <= 1.0;                                                                   \
        printf("  %-40s n=%-7ld rel_err %.2g abs_err %.2g (rtol %.0g atol %.0g: %.0f%% of tolerance)%s\n",   \
               label, (long)(n), worst_rel_, worst_abs_, (double)(rtol), (double)(atol), 100 * worst_ratio_,      \
               ok_ ? "" : "  <-- FAIL");                                                                  \
        if (!ok_) {                                                                                      \
            printf("  %s:%d: worst at %ld: got %.9g want %.9g\n", __FILE__, __LINE__, worst_i_,          \
                   (double)(got)[worst_i_], (double)(want)[worst_i_]);                                   \
            harness_current_failed = 1;                                                                  \
        }                                                                                                \
    } while (0)

static inline int test_summary(const char *prog) {
    printf("%s: %d passed, %d failed\n", prog, harness_passed, harness_failed);
    return harness_failed ? 1 : 0;
}

#endif
