/* Tests for core/json: valid documents parse to the right tree; invalid ones fail with a byte offset;
 * the parser never reads past its input (inputs are copied into exact-size buffers, so ASan would
 * catch it); the string builder's output parses back to what was written. */
#include <string.h>

#include "core/json.h"
#include "harness.h"

/* Parse s (without its terminator) from an exact-size heap copy. */
static lc_status parse_exact(const char *s, size_t n, lc_json **out) {
    char *copy = malloc(n ? n : 1);
    memcpy(copy, s, n);
    lc_status st = lc_json_parse(copy, n, "doc", out);
    free(copy);
    return st;
}

static lc_json *parse_ok(const char *s) {
    lc_json *root = NULL;
    lc_status st = parse_exact(s, strlen(s), &root);
    CHECK(st == LC_OK && root, "parse of %s failed: %s", s, lc_last_error());
    return root;
}

TEST(test_json_scalars) {
    const char *texts[] = {"null", "true", "false", " \t\r\n42 \n", "\"hi\""};
    lc_json_type types[] = {LC_JSON_NULL, LC_JSON_BOOL, LC_JSON_BOOL, LC_JSON_NUMBER, LC_JSON_STRING};
    for (int i = 0; i < 5; i++) {
        lc_json *v = parse_ok(texts[i]);
        if (!v) continue;
        CHECK(v->type == types[i], "%s: type %s", texts[i], lc_json_type_name(v->type));
        lc_json_free(v);
    }
    lc_json *t = parse_ok("true"), *f = parse_ok("false");
    if (t && f) CHECK(t->boolean == 1 && f->boolean == 0, "booleans %d %d", t->boolean, f->boolean);
    lc_json_free(t);
    lc_json_free(f);
}

TEST(test_json_nested) {
    lc_json *root = parse_ok("{\"a\": [1, [2, {\"b\": null}], {}], \"c\": {\"d\": {\"e\": \"deep\"}}, \"f\": []}");
    if (!root) return;
    CHECK(root->type == LC_JSON_OBJECT && root->count == 3, "root object of 3");
    const lc_json *a = lc_json_member(root, "a");
    CHECK(a && a->type == LC_JSON_ARRAY && a->count == 3, "a is an array of 3");
    if (a && a->count == 3) {
        CHECK(a->items[1].type == LC_JSON_ARRAY && a->items[1].count == 2, "a[1]");
        CHECK(a->items[1].items[1].type == LC_JSON_OBJECT, "a[1][1] object");
        CHECK(lc_json_member(&a->items[1].items[1], "b")->type == LC_JSON_NULL, "b null");
        CHECK(a->items[2].type == LC_JSON_OBJECT && a->items[2].count == 0, "empty object");
    }
    const char *e = NULL;
    CHECK(lc_json_get_string(lc_json_member(lc_json_member(lc_json_member(root, "c"), "d"), "e"), "e", &e) == LC_OK &&
              strcmp(e, "deep") == 0,
          "c.d.e");
    CHECK(lc_json_member(root, "f")->count == 0, "f empty");
    CHECK(lc_json_member(root, "missing") == NULL, "absent member");
    CHECK(lc_json_member(a, "x") == NULL, "member of a non-object");
    CHECK(strcmp(root->keys[0], "a") == 0 && strcmp(root->keys[2], "f") == 0, "keys in document order");
    CHECK(a && a->offset == 6, "offset of a is %zu", a ? a->offset : 0);
    lc_json_free(root);
}

TEST(test_json_escapes_and_unicode) {
    lc_json *v = parse_ok("\"q\\\" b\\\\ s\\/ \\b\\f\\n\\r\\t \\u00e9 \\u20AC \\ud83d\\ude00 "
                          "raw\xc3\xa9\xe2\x9c\x93\"");
    const char *want = "q\" b\\ s/ \b\f\n\r\t \xc3\xa9 \xe2\x82\xac \xf0\x9f\x98\x80 raw\xc3\xa9\xe2\x9c\x93";
    if (v) {
        CHECK(strcmp(v->string, want) == 0, "decoded \"%s\"", v->string);
        CHECK(v->count == strlen(want), "length %zu", v->count);
    }
    lc_json_free(v);
    lc_json *k = parse_ok("{\"k\\u0041\": 1}");
    if (k) CHECK(lc_json_member(k, "kA") != NULL, "escaped key");
    lc_json_free(k);
}

TEST(test_json_numbers) {
    struct { const char *text; double value; int is_integer; long long integer; } cases[] = {
        {"0", 0, 1, 0},
        {"-0", 0, 1, 0},
        {"12", 12, 1, 12},
        {"-3.5", -3.5, 0, 0},
        {"1e3", 1000, 0, 0},
        {"1.5E-2", 0.015, 0, 0},
        {"6.02e+23", 6.02e23, 0, 0},
        {"-1E-400", -0.0, 0, 0},
        {"9223372036854775807", 9223372036854775807.0, 1, 9223372036854775807LL},
        {"-9223372036854775808", -9223372036854775808.0, 1, -9223372036854775807LL - 1},
        {"9223372036854775808", 9223372036854775808.0, 0, 0},
        {"123456789012345678901234567890", 123456789012345678901234567890.0, 0, 0},
        {"1" "0000000000000000000000000000000000000000000000000000000000000000000000", 1e70, 0, 0},
        {"-0.00000000000000000000000000000000000000000000000000000000000000000000025", -2.5e-70, 0, 0},
    };
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
        lc_json *v = parse_ok(cases[i].text);
        if (!v) continue;
        CHECK(v->type == LC_JSON_NUMBER, "%s type", cases[i].text);
        CHECK(v->number == cases[i].value, "%s: got %.17g", cases[i].text, v->number);
        CHECK(v->is_integer == cases[i].is_integer, "%s: is_integer %d", cases[i].text, v->is_integer);
        if (cases[i].is_integer) CHECK(v->integer == cases[i].integer, "%s: integer %lld", cases[i].text, v->integer);
        lc_json_free(v);
    }
}

TEST(test_json_getters) {
    lc_json *root = parse_ok("{\"n\": 7, \"neg\": -2, \"f\": 1.5, \"s\": \"x\", \"big\": 1e2}");
    if (!root) return;
    long long n = 0;
    const char *s = NULL;
    CHECK(lc_json_get_int(lc_json_member(root, "n"), "n", 0, 10, &n) == LC_OK && n == 7, "n = %lld", n);
    CHECK(lc_json_get_int(lc_json_member(root, "n"), "n", 0, 6, &n) == LC_ERR_FORMAT, "range max");
    CHECK(strstr(lc_last_error(), "outside [0, 6]") && strstr(lc_last_error(), "byte 6"), "msg: %s", lc_last_error());
    CHECK(lc_json_get_int(lc_json_member(root, "f"), "f", 0, 10, &n) == LC_ERR_FORMAT, "fraction");
    CHECK(strstr(lc_last_error(), "found 1.5 (JSON byte"), "msg: %s", lc_last_error());
    CHECK(lc_json_get_int(lc_json_member(root, "neg"), "neg", 0, 10, &n) == LC_ERR_FORMAT, "range min");
    CHECK(lc_json_get_int(lc_json_member(root, "f"), "f", 0, 10, &n) == LC_ERR_FORMAT, "fraction rejected");
    CHECK(lc_json_get_int(lc_json_member(root, "big"), "big", 0, 1000, &n) == LC_ERR_FORMAT, "exponent rejected");
    CHECK(lc_json_get_int(lc_json_member(root, "s"), "s", 0, 10, &n) == LC_ERR_FORMAT, "string rejected");
    CHECK(strstr(lc_last_error(), "s: expected an integer, found string"), "msg: %s", lc_last_error());
    CHECK(lc_json_get_int(lc_json_member(root, "zz"), "ctx zz", 0, 10, &n) == LC_ERR_FORMAT, "missing");
    CHECK(strcmp(lc_last_error(), "ctx zz: missing") == 0, "msg: %s", lc_last_error());
    CHECK(lc_json_get_string(lc_json_member(root, "s"), "s", &s) == LC_OK && strcmp(s, "x") == 0, "string");
    CHECK(lc_json_get_string(lc_json_member(root, "n"), "n", &s) == LC_ERR_FORMAT, "number is not a string");
    lc_json_free(root);
}

/* Each invalid document and the byte offset its error must name (-1: any). */
TEST(test_json_invalid) {
    struct { const char *text; long offset; } cases[] = {
        {"", 0}, {"   ", 3}, {"[1,2,]", 5}, {"{\"a\":1,}", 7}, {"[1 2]", 3}, {"{\"a\" 1}", 5},
        {"{1:2}", 1}, {"{\"a\":1", 6}, {"[1,2", 4}, {"\"abc", 0}, {"\"a\\x\"", 2}, {"\"\\u12G4\"", 1},
        {"\"\\u123\"", 1}, {"\"\\ud800\"", 1}, {"\"\\udc00\"", 1}, {"\"\\ud800\\u0041\"", 7}, {"\"\\u0000\"", 1},
        {"\"a\x01\"", 2}, {"\"\xc0\xaf\"", 1}, {"\"\xed\xa0\x80\"", 1}, {"\"\xf4\x90\x80\x80\"", 1},
        {"\"\xe2\x9c\"", 1}, {"\"\x80\"", 1}, {"1 2", 2}, {"{} x", 3}, {"01", 1}, {"1.", 0}, {".5", 0},
        {"-", 0}, {"+1", 0}, {"1e", 0}, {"1e+", 0}, {"tru", 0}, {"nul", 0}, {"True", 0}, {"NaN", 0},
        {"Infinity", 0}, {"1e999", 0}, {"-1e999", 0}, {"{\"a\":1,\"b\":2,\"a\":3}", 17}, {"[\"a\" : 1]", 5},
        {"\xef\xbb\xbf{}", 0}, {"{\"a\":}", 5}, {"[,]", 1}, {"//c\n1", 0}, {"'a'", 0},
    };
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
        lc_json *root = (lc_json *)1;
        lc_status st = parse_exact(cases[i].text, strlen(cases[i].text), &root);
        CHECK(st == LC_ERR_FORMAT && root == NULL, "case %zu (%s) parsed: status %d", i, cases[i].text, (int)st);
        char want[64];
        snprintf(want, sizeof want, "doc: JSON error at byte %ld:", cases[i].offset);
        CHECK(strstr(lc_last_error(), want) == lc_last_error(), "case %zu (%s): message \"%s\", want \"%s...\"", i,
              cases[i].text, lc_last_error(), want);
    }
    lc_json *root = NULL;
    CHECK(parse_exact("[1]\0", 4, &root) == LC_ERR_FORMAT, "NUL after the value");
    CHECK(parse_exact("\"a\0b\"", 5, &root) == LC_ERR_FORMAT, "raw NUL in a string");
}

TEST(test_json_depth_limit) {
    char doc[2 * 200 + 1];
    for (int depth = LC_JSON_MAX_DEPTH; depth <= LC_JSON_MAX_DEPTH + 1; depth++) {
        memset(doc, '[', (size_t)depth);
        memset(doc + depth, ']', (size_t)depth);
        lc_json *root = NULL;
        lc_status st = parse_exact(doc, 2 * (size_t)depth, &root);
        CHECK((st == LC_OK) == (depth <= LC_JSON_MAX_DEPTH), "depth %d: status %d", depth, (int)st);
        lc_json_free(root);
    }
    size_t bomb = 1000000;
    char *deep = malloc(bomb);
    memset(deep, '[', bomb);
    lc_json *root = NULL;
    CHECK(parse_exact(deep, bomb, &root) == LC_ERR_FORMAT && strstr(lc_last_error(), "nesting deeper"), "bomb: %s",
          lc_last_error());
    memset(deep, '{', bomb);
    CHECK(lc_json_parse(deep, bomb, NULL, &root) == LC_ERR_FORMAT, "object bomb");
    free(deep);
}

TEST(test_json_strbuf_round_trip) {
    char every_byte[300];
    size_t n = 0;
    for (int c = 1; c < 0x80; c++) every_byte[n++] = (char)c;
    strcpy(every_byte + n, "\xc3\xa9\xe2\x82\xac\xf0\x9f\x98\x80");
    lc_strbuf b;
    lc_strbuf_init(&b);
    lc_strbuf_puts(&b, "{");
    lc_strbuf_json_string(&b, "key \"with\" quotes");
    lc_strbuf_printf(&b, ":[%d, %.3f, ", 42, 2.5);
    lc_strbuf_json_string(&b, every_byte);
    lc_strbuf_puts(&b, "]}");
    CHECK(!b.failed && b.length == strlen(b.data), "builder state");
    lc_json *root = parse_ok(b.data);
    const lc_json *arr = lc_json_member(root, "key \"with\" quotes");
    CHECK(arr && arr->count == 3, "array of 3");
    if (arr && arr->count == 3) {
        CHECK(arr->items[0].integer == 42 && arr->items[1].number == 2.5, "numbers");
        CHECK(strcmp(arr->items[2].string, every_byte) == 0, "every byte round-trips");
    }
    CHECK(strstr(b.data, "\\u0001") && strstr(b.data, "\\n") && strstr(b.data, "\\\\"), "escapes: %s", b.data);
    lc_json_free(root);
    lc_strbuf_free(&b);
}

TEST(test_json_utf8_valid) {
    CHECK(lc_utf8_valid("plain \xc3\xa9 \xf0\x9f\x98\x80", 13), "valid");
    CHECK(lc_utf8_valid("", 0), "empty");
    CHECK(!lc_utf8_valid("\xc3", 1), "truncated");
    CHECK(!lc_utf8_valid("\xc1\x81", 2), "overlong");
    CHECK(!lc_utf8_valid("\xed\xbf\xbf", 3), "surrogate");
    CHECK(!lc_utf8_valid("\xff", 1), "0xff");
}

static unsigned long long fuzz_state = 0x9e3779b97f4a7c15ull;
static unsigned fuzz_next(void) {
    fuzz_state ^= fuzz_state << 13;
    fuzz_state ^= fuzz_state >> 7;
    fuzz_state ^= fuzz_state << 17;
    return (unsigned)(fuzz_state >> 32);
}

TEST(test_json_fuzz) {
    const char *seed = "{\"a\": [1, -2.5e3, \"x\\u00e9\\n\", {\"b\": [true, false, null]}], \"c\": \"\xe2\x9c\x93\"}";
    size_t n = strlen(seed);
    char buf[128];
    int ok = 0;
    for (size_t len = 0; len <= n; len++) { /* every truncation */
        lc_json *root = NULL;
        if (parse_exact(seed, len, &root) == LC_OK) ok++;
        lc_json_free(root);
    }
    CHECK(ok == 1, "only the whole document parses (%d did)", ok);
    const char alphabet[] = "{}[]\",:\\u0e-+.1 tfn\x80\xc3\xff";
    for (int iter = 0; iter < 3000; iter++) {
        memcpy(buf, seed, n);
        int edits = 1 + (int)(fuzz_next() % 4);
        for (int e = 0; e < edits; e++) {
            unsigned r = fuzz_next();
            buf[r % n] = (r >> 16) & 1 ? (char)(r >> 8) : alphabet[(r >> 8) % (sizeof alphabet - 1)];
        }
        lc_json *root = NULL;
        lc_status st = parse_exact(buf, n, &root);
        CHECK(st == LC_OK || st == LC_ERR_FORMAT, "iteration %d: status %d", iter, (int)st);
        CHECK((st == LC_OK) == (root != NULL), "iteration %d: tree iff ok", iter);
        lc_json_free(root);
    }
}

int main(void) {
    RUN(test_json_scalars);
    RUN(test_json_nested);
    RUN(test_json_escapes_and_unicode);
    RUN(test_json_numbers);
    RUN(test_json_getters);
    RUN(test_json_invalid);
    RUN(test_json_depth_limit);
    RUN(test_json_strbuf_round_trip);
    RUN(test_json_utf8_valid);
    RUN(test_json_fuzz);
    return test_summary("test_json");
}
