/* Per-tensor learning-rate factors (lc_train_options.lr_scale, the CLI's --lr-scale): rules
 * "PREFIX=F[@STEPS]" joined by commas. A parameter tensor whose checkpoint name starts with PREFIX trains
 * at F times the schedule's rate, for its first STEPS optimizer steps only when @STEPS is given; the
 * longest matching prefix among the rules still in force decides (the first of equally long ones). This
 * is how a fine-tuning run gives a pre-trained encoder a lower rate than a new head, or freezes it (F = 0)
 * for its first steps. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "core/status.h"
#include "longctx/train.h"

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
