/* The independent ListOps evaluator: reads a printed sequence token by token (as a model reads it),
 * checks that it is exactly LRA's folded-parentheses form and computes its value. It shares no code with
 * the generator (listops.c): frames on an explicit stack instead of recursion over a tree, and the median
 * from a histogram of the ten values instead of a sort, so the two agreeing is evidence for both. */
#include <string.h>

#include "core/status.h"
#include "lra/lra.h"

/* Where a frame (an operator whose closing bracket has not been read yet) stands. */
enum {
    WANT_ARG_OR_END, /* next: an argument ('(' or an operator or a value) or ']' */
    WANT_CLOSE_ARG,  /* an argument was read: its ')' must follow */
    WANT_CLOSE_END   /* ']' was read: the frame's last ')' must follow */
};

typedef struct {
    int op, parens, closes, args, state;
    int count[10]; /* how many arguments had each value */
} frame;

static int is_space(char c) { return c == ' ' || (c >= '\t' && c <= '\r'); }

static int frame_value(const frame *f) {
    int lo = -1, hi = 0, sum = 0;
    for (int v = 0; v < 10; v++) {
        if (f->count[v] && lo < 0) lo = v;
        if (f->count[v]) hi = v;
        sum += v * f->count[v];
    }
    switch (f->op) {
    case LC_LISTOPS_MIN: return lo;
    case LC_LISTOPS_MAX: return hi;
    case LC_LISTOPS_SM: return sum % 10;
    default: break;
    }
    /* Median: the values at sorted positions (n-1)/2 and n/2 (the same one when n is odd), then the
     * integer part of their mean, as LRA's int(np.median(...)). */
    int n = f->args, a = -1, b = -1, seen = 0;
    for (int v = 0; v < 10; v++) {
        if (a < 0 && seen + f->count[v] > (n - 1) / 2) a = v;
        if (b < 0 && seen + f->count[v] > n / 2) b = v;
        seen += f->count[v];
    }
    return (a + b) / 2;
}

lc_status lc_listops_eval(const char *text, size_t len, lc_listops_info *info) {
    lc_clear_error();
    static const char *const names[LC_LISTOPS_OPS] = {"[MIN", "[MAX", "[MED", "[SM"};
    frame stack[LC_LISTOPS_DEPTH_LIMIT];
    int depth = 0, run = 0, result = -1;
    long ntok = 0;
    lc_listops_info in;
    memset(&in, 0, sizeof in);
    size_t i = 0;
    for (;;) {
        while (i < len && is_space(text[i])) i++;
        if (i == len) break;
        size_t t0 = i;
        while (i < len && !is_space(text[i])) i++;
        const char *t = text + t0;
        size_t tl = i - t0;
        ntok++;
        frame *top = depth ? &stack[depth - 1] : NULL;
        if (result >= 0)
            return lc_fail(LC_ERR_FORMAT, "listops: token %ld ('%.*s') follows the end of the expression", ntok,
                           (int)(tl > 20 ? 20 : tl), t);
        if (tl == 1 && t[0] == '(') {
            if (top && top->state != WANT_ARG_OR_END)
                return lc_fail(LC_ERR_FORMAT, "listops: token %ld: '(' where ')' was expected", ntok);
            run++;
            in.parens++;
            continue;
        }
        int op = -1;
        for (int k = 0; k < LC_LISTOPS_OPS; k++)
            if (tl == strlen(names[k]) && memcmp(t, names[k], tl) == 0) op = k;
        if (op >= 0) {
            if (top && top->state != WANT_ARG_OR_END)
                return lc_fail(LC_ERR_FORMAT, "listops: token %ld: operator %s where ')' was expected", ntok, names[op]);
            if (run < 2)
                return lc_fail(LC_ERR_FORMAT, "listops: token %ld: operator %s after %d '(' (LRA's form puts one "
                               "'(' per argument plus one before it)", ntok, names[op], run);
            if (depth == LC_LISTOPS_DEPTH_LIMIT)
                return lc_fail(LC_ERR_FORMAT, "listops: token %ld: operators nested deeper than %d", ntok,
                               LC_LISTOPS_DEPTH_LIMIT);
            frame *f = &stack[depth++];
            memset(f, 0, sizeof *f);
            f->op = op;
            f->parens = run;
            run = 0;
            in.ops[op]++;
            in.length++;
            if (depth > in.depth) in.depth = depth;
            continue;
        }
        if (run)
            return lc_fail(LC_ERR_FORMAT, "listops: token %ld ('%.*s'): '(' must be followed by '(' or an operator",
                           ntok, (int)(tl > 20 ? 20 : tl), t);
        if (tl == 1 && t[0] >= '0' && t[0] <= '9') {
            int v = t[0] - '0';
            in.values++;
            in.length++;
            if (depth + 1 > in.depth) in.depth = depth + 1;
            if (!top) {
                result = v; /* a lone value is a whole (one-node) expression */
                continue;
            }
            if (top->state != WANT_ARG_OR_END)
                return lc_fail(LC_ERR_FORMAT, "listops: token %ld: value %d where ')' was expected", ntok, v);
            top->count[v]++;
            top->args++;
            top->state = WANT_CLOSE_ARG;
            continue;
        }
        if (tl == 1 && t[0] == ']') {
            if (!top || top->state != WANT_ARG_OR_END)
                return lc_fail(LC_ERR_FORMAT, "listops: token %ld: unexpected ']'", ntok);
            if (top->args == 0)
                return lc_fail(LC_ERR_FORMAT, "listops: token %ld: ']' closes an operator without arguments", ntok);
            top->state = WANT_CLOSE_END;
            in.length++;
            continue;
        }
        if (tl == 1 && t[0] == ')') {
            if (!top || top->state == WANT_ARG_OR_END)
                return lc_fail(LC_ERR_FORMAT, "listops: token %ld: unexpected ')'", ntok);
            if (++top->closes > top->parens)
                return lc_fail(LC_ERR_FORMAT, "listops: token %ld: more ')' than '(' for the operator %s", ntok,
                               names[top->op]);
            if (top->state == WANT_CLOSE_ARG) {
                top->state = WANT_ARG_OR_END;
                continue;
            }
            if (top->closes != top->parens)
                return lc_fail(LC_ERR_FORMAT, "listops: token %ld: operator %s has %d arguments but %d '(' before it "
                               "(LRA's form has one more '(' than arguments)", ntok, names[top->op], top->args,
                               top->parens);
            int v = frame_value(top);
            if (in.min_args == 0 || top->args < in.min_args) in.min_args = top->args;
            if (top->args > in.max_args) in.max_args = top->args;
            depth--;
            if (depth == 0) {
                result = v;
            } else {
                frame *parent = &stack[depth - 1];
                parent->count[v]++;
                parent->args++;
                parent->state = WANT_CLOSE_ARG;
            }
            continue;
        }
        return lc_fail(LC_ERR_FORMAT, "listops: token %ld ('%.*s') is not '(', ')', ']', a value 0-9 or an operator "
                       "([MIN [MAX [MED [SM)", ntok, (int)(tl > 20 ? 20 : tl), t);
    }
    if (ntok == 0) return lc_fail(LC_ERR_FORMAT, "listops: empty expression");
    if (result < 0) return lc_fail(LC_ERR_FORMAT, "listops: the expression ends before its last ')'");
    in.value = result;
    if (info) *info = in;
    return LC_OK;
}
