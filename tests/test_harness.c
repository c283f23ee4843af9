/* Tests of the test harness itself (tests/harness.h): CHECK_CLOSE must fail on a NaN wherever it stands
 * (first, in the middle, last; in got or in want), on a value outside its tolerance, and pass on values
 * within it, on equal infinities and on exact zeros with atol = 0. A check that is meant to fail runs
 * through expect_close_fails, which reads harness_current_failed and then clears it, so this program
 * reports success only when every such check failed as it should. */
#include <math.h>

#include "harness.h"

/* Runs CHECK_CLOSE on got/want and returns whether it failed, leaving the current test's state as it was. */
static int close_fails(const char *label, const double *got, const double *want, int n, double rtol, double atol) {
    int before = harness_current_failed;
    harness_current_failed = 0;
    CHECK_CLOSE(label, got, want, n, rtol, atol);
    int failed = harness_current_failed;
    harness_current_failed = before;
    return failed;
}

#define N 5
static const double base[N] = {1.0, -2.0, 0.5, 3.0, 0.25};

/* base with entry i replaced by v */
static void with(double *out, int i, double v) {
    for (int k = 0; k < N; k++) out[k] = base[k];
    out[i] = v;
}

TEST(nan_in_got_fails_wherever_it_stands) {
    double got[N];
    const int where[] = {0, 2, N - 1};
    for (int k = 0; k < 3; k++) {
        with(got, where[k], NAN);
        CHECK(close_fails("NaN in got (meant to fail)", got, base, N, 1e-6, 1e-6), "NaN at %d passed", where[k]);
    }
}

TEST(nan_in_want_fails_wherever_it_stands) {
    double want[N];
    const int where[] = {0, 2, N - 1};
    for (int k = 0; k < 3; k++) {
        with(want, where[k], NAN);
        CHECK(close_fails("NaN in want (meant to fail)", base, want, N, 1e-6, 1e-6), "NaN at %d passed", where[k]);
        CHECK(close_fails("NaN in both (meant to fail)", want, want, N, 1e-6, 1e-6), "NaN at %d passed", where[k]);
    }
}

TEST(infinity_against_a_finite_value_fails) {
    double got[N];
    with(got, 0, INFINITY);
    CHECK(close_fails("inf in got (meant to fail)", got, base, N, 1e-6, 1e-6), "inf passed");
    double want[N];
    with(want, 1, -INFINITY);
    CHECK(close_fails("-inf in want (meant to fail)", base, want, N, 1e-6, 1e-6), "-inf passed");
}

TEST(outside_the_tolerance_fails_inside_passes) {
    double got[N];
    with(got, 2, 0.5 + 1e-3);
    CHECK(close_fails("1e-3 off (meant to fail)", got, base, N, 1e-6, 1e-6), "an error of 1e-3 passed");
    CHECK(!close_fails("1e-3 off, rtol 1e-2", got, base, N, 1e-2, 0), "an error within tolerance failed");
    float gotf[N];
    for (int k = 0; k < N; k++) gotf[k] = (float)base[k];
    CHECK_CLOSE("float against double", gotf, base, N, 1e-6, 0);
}

/* LC_TEST_ONLY picks tests by their whole names in a comma-separated list; unset or empty: every test. */
TEST(test_only_selects_whole_names) {
    const char *was = getenv("LC_TEST_ONLY");
    char *saved = was ? strdup(was) : NULL;
    unsetenv("LC_TEST_ONLY");
    CHECK(harness_selected("loss_goes_down"), "unset: a test was not selected");
    setenv("LC_TEST_ONLY", "", 1);
    CHECK(harness_selected("loss_goes_down"), "empty: a test was not selected");
    setenv("LC_TEST_ONLY", "a_test,loss_goes_down", 1);
    CHECK(harness_selected("loss_goes_down") && harness_selected("a_test"), "a listed test was not selected");
    CHECK(!harness_selected("loss_goes") && !harness_selected("goes_down") && !harness_selected("test"),
          "a part of a listed name was selected");
    setenv("LC_TEST_ONLY", "loss_goes_down_fast", 1);
    CHECK(!harness_selected("loss_goes_down"), "a test was selected by a longer name");
    if (saved) setenv("LC_TEST_ONLY", saved, 1);
    else unsetenv("LC_TEST_ONLY");
    free(saved);
}

TEST(equal_values_pass) {
    double a[N];
    with(a, 3, INFINITY);
    CHECK_CLOSE("the same infinity", a, a, N, 1e-6, 1e-6);
    const double zeros[3] = {0, 0, 0};
    CHECK_CLOSE("exact zeros with atol 0", zeros, zeros, 3, 1e-6, 0);
}

int main(void) {
    RUN(nan_in_got_fails_wherever_it_stands);
    RUN(nan_in_want_fails_wherever_it_stands);
    RUN(infinity_against_a_finite_value_fails);
    RUN(outside_the_tolerance_fails_inside_passes);
    RUN(test_only_selects_whole_names);
    RUN(equal_values_pass);
    return test_summary("test_harness");
}
