/* Choices named in one string: "name0|name1|..." lists an enum's values 0, 1, ... by name (the field tables of
 * nn/lm_fields.h and train/meta_table.h), so a choice's names are spelled once. */
#ifndef LC_CORE_CHOICE_H
#define LC_CORE_CHOICE_H

#include <stddef.h>

/* Name number v of `names` into out[cap] ("" past the end or for v < 0). */
void lc_choice_name(const char *names, int v, char *out, size_t cap);
/* The number of `name` among `names`, or -1. */
int lc_choice_index(const char *names, const char *name);
/* How many names there are (0 for NULL). */
int lc_choice_count(const char *names);
/* The names for a message, each between `quote`s: "pre or post", "'a', 'b' or 'c'", into out[cap]. */
void lc_choice_list(const char *names, const char *quote, char *out, size_t cap);

#endif
