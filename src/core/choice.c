/* Choices named in one string, "name0|name1|..." (core/choice.h). */
#include "core/choice.h"

#include <stdio.h>
#include <string.h>

/* The start of name number v (NULL past the end) and its length through *len. */
static const char *nth(const char *names, int v, size_t *len) {
    if (!names || v < 0) return NULL;
    for (; v > 0 && names; v--) names = strchr(names, '|'), names = names ? names + 1 : NULL;
    if (!names) return NULL;
    const char *bar = strchr(names, '|');
    *len = bar ? (size_t)(bar - names) : strlen(names);
    return names;
}

void lc_choice_name(const char *names, int v, char *out, size_t cap) {
    size_t len = 0;
    const char *s = nth(names, v, &len);
    snprintf(out, cap, "%.*s", s ? (int)len : 0, s ? s : "");
}

int lc_choice_count(const char *names) {
    int n = names ? 1 : 0;
    for (const char *p = names; p && (p = strchr(p, '|')); p++) n++;
    return n;
}

int lc_choice_index(const char *names, const char *name) {
    size_t len = 0;
    for (int i = 0; name && nth(names, i, &len); i++)
        if (strlen(name) == len && strncmp(nth(names, i, &len), name, len) == 0) return i;
    return -1;
}

void lc_choice_list(const char *names, const char *quote, char *out, size_t cap) {
    const int n = lc_choice_count(names);
    size_t used = 0;
    out[0] = 0;
    for (int i = 0; i < n && used < cap; i++) {
        size_t len = 0;
        const char *s = nth(names, i, &len);
        used += (size_t)snprintf(out + used, cap - used, "%s%s%.*s%s", i == 0 ? "" : i < n - 1 ? ", " : " or ", quote,
                                 (int)len, s, quote);
    }
}
