/* Text files and sentences: reading a file as UTF-8 text (Latin-1 files are converted, binary files are
 * refused), the sentence rule of the summarization task, and joining chosen sentences into a summary. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "core/status.h"
#include "summ/summ.h"

/* Length of the valid UTF-8 sequence at s[0..n) (1..4), or 0 when it is not one: overlong forms,
 * surrogates and code points above U+10FFFF are invalid, as in RFC 3629. */
static int utf8_seq(const unsigned char *s, size_t n) {
    unsigned c = s[0];
    if (c < 0x80) return 1;
    int len;
    unsigned lo = 0x80, hi = 0xbf; /* range of the second byte */
    if (c >= 0xc2 && c <= 0xdf) len = 2;
    else if (c >= 0xe0 && c <= 0xef) {
        len = 3;
        if (c == 0xe0) lo = 0xa0;
        if (c == 0xed) hi = 0x9f;
    } else if (c >= 0xf0 && c <= 0xf4) {
        len = 4;
        if (c == 0xf0) lo = 0x90;
        if (c == 0xf4) hi = 0x8f;
    } else return 0;
    if ((size_t)len > n || s[1] < lo || s[1] > hi) return 0;
    for (int i = 2; i < len; i++)
        if (s[i] < 0x80 || s[i] > 0xbf) return 0;
    return len;
}

static int is_space(unsigned char c) { return c == ' ' || (c >= '\t' && c <= '\r'); }

lc_status lc_text_read(const char *path, char **text, size_t *len, int *latin1) {
    lc_clear_error();
    *text = NULL;
    if (len) *len = 0;
    if (latin1) *latin1 = 0;
    struct stat sb;
    /* stat before open: opening a FIFO would wait for a writer. */
    if (stat(path, &sb) != 0) return lc_fail(LC_ERR_IO, "%s: cannot open: %s", path, strerror(errno));
    if (S_ISDIR(sb.st_mode)) return lc_fail(LC_ERR_IO, "%s: is a directory, not a text file", path);
    if (!S_ISREG(sb.st_mode)) return lc_fail(LC_ERR_IO, "%s: not a regular file", path);
    if ((uint64_t)sb.st_size > LC_TEXT_MAX_BYTES)
        return lc_fail(LC_ERR_FORMAT, "%s: %lld bytes; a text file may have at most %u", path,
                       (long long)sb.st_size, (unsigned)LC_TEXT_MAX_BYTES);
    FILE *f = fopen(path, "rb");
    if (!f) return lc_fail(LC_ERR_IO, "%s: cannot open: %s", path, strerror(errno));
    size_t size = (size_t)sb.st_size;
    unsigned char *raw = malloc(size + 1);
    if (!raw) { fclose(f); return lc_fail(LC_ERR_NOMEM, "%s: out of memory for %zu bytes", path, size); }
    size_t got = fread(raw, 1, size + 1, f); /* one byte more detects a file that grew */
    int err = ferror(f);
    fclose(f);
    if (err || got != size) {
        free(raw);
        return lc_fail(LC_ERR_IO, "%s: read error (%s)", path, err ? "i/o error" : "the file changed while read");
    }
    int valid = 1;
    for (size_t i = 0; i < size;) {
        unsigned char c = raw[i];
        if (c < 0x20 && !is_space(c)) {
            free(raw);
            return lc_fail(LC_ERR_FORMAT, "%s: control byte 0x%02x at offset %zu: not a text file", path, c, i);
        }
        int k = valid ? utf8_seq(raw + i, size - i) : 1;
        if (k == 0) { valid = 0; k = 1; }
        i += (size_t)k;
    }
    char *out;
    size_t n = 0;
    if (valid) {
        size_t skip = size >= 3 && raw[0] == 0xef && raw[1] == 0xbb && raw[2] == 0xbf ? 3 : 0; /* byte-order mark */
        memmove(raw, raw + skip, size - skip);
        n = size - skip;
        out = (char *)raw;
    } else {
        /* Latin-1: byte b is code point b, which takes two UTF-8 bytes from 0x80 on. */
        size_t extra = 0;
        for (size_t i = 0; i < size; i++) extra += raw[i] >= 0x80;
        out = malloc(size + extra + 1);
        if (!out) { free(raw); return lc_fail(LC_ERR_NOMEM, "%s: out of memory for %zu bytes", path, size + extra); }
        for (size_t i = 0; i < size; i++) {
            unsigned char c = raw[i];
            if (c < 0x80) out[n++] = (char)c;
            else {
                out[n++] = (char)(0xc0 | c >> 6);
                out[n++] = (char)(0x80 | (c & 0x3f));
            }
        }
        free(raw);
        if (latin1) *latin1 = 1;
    }
    out[n] = '\0';
    *text = out;
    if (len) *len = n;
    return LC_OK;
}

size_t lc_utf8_invalid_at(const char *s, size_t n) {
    for (size_t i = 0; i < n;) {
        const int k = utf8_seq((const unsigned char *)s + i, n - i);
        if (!k) return i;
        i += (size_t)k;
    }
    return n;
}

lc_status lc_text_read_user(const char *path, int allow_latin1, char **text, size_t *len) {
    int latin1 = 0;
    lc_status st = lc_text_read(path, text, len, &latin1);
    if (st || !latin1 || allow_latin1) return st;
    free(*text);
    *text = NULL;
    /* the raw bytes again, for the offset (the file was just read whole: regular, at most 64 MiB) */
    FILE *f = fopen(path, "rb");
    size_t at = 0;
    char *raw = f ? malloc(LC_TEXT_MAX_BYTES) : NULL;
    if (raw) at = lc_utf8_invalid_at(raw, fread(raw, 1, LC_TEXT_MAX_BYTES, f));
    free(raw);
    if (f) fclose(f);
    return lc_fail(LC_ERR_FORMAT, "%s: not UTF-8 (byte offset %zu); give --encoding latin1 to read it as Latin-1",
                   path, at);
}

char *lc_collapse_whitespace(const char *text) {
    char *buf = malloc(strlen(text) + 1);
    if (!buf) return NULL;
    size_t n = 0;
    for (const unsigned char *p = (const unsigned char *)text; *p; p++) {
        if (!is_space(*p)) { buf[n++] = (char)*p; continue; }
        if (n && buf[n - 1] != ' ') buf[n++] = ' ';
    }
    if (n && buf[n - 1] == ' ') n--;
    buf[n] = '\0';
    return buf;
}

static int starts_sentence(unsigned char c) { return (c >= 'A' && c <= 'Z') || c == '"' || c == '\''; }

lc_status lc_sentences_split(const char *text, lc_sentences *out) {
    lc_clear_error();
    memset(out, 0, sizeof *out);
    if (!text) return lc_fail(LC_ERR_ARG, "sentences: text must not be NULL");
    char *buf = lc_collapse_whitespace(text);
    if (!buf) return lc_fail(LC_ERR_NOMEM, "sentences: out of memory for %zu bytes", strlen(text));
    size_t n = strlen(buf);
    if (n == 0) { free(buf); return LC_OK; }
    /* End a sentence after . ! ? followed by a space and an upper-case letter or a quote. */
    int count = 1;
    for (size_t i = 0; i + 2 < n; i++)
        if ((buf[i] == '.' || buf[i] == '!' || buf[i] == '?') && buf[i + 1] == ' ' &&
            starts_sentence((unsigned char)buf[i + 2]))
            count++;
    char **sent = malloc((size_t)count * sizeof *sent);
    if (!sent) { free(buf); return lc_fail(LC_ERR_NOMEM, "sentences: out of memory for %d sentences", count); }
    int k = 0;
    sent[k++] = buf;
    for (size_t i = 0; i + 2 < n; i++)
        if ((buf[i] == '.' || buf[i] == '!' || buf[i] == '?') && buf[i + 1] == ' ' &&
            starts_sentence((unsigned char)buf[i + 2])) {
            buf[i + 1] = '\0';
            sent[k++] = buf + i + 2;
        }
    out->n = count;
    out->sent = sent;
    out->buf = buf;
    return LC_OK;
}

void lc_sentences_free(lc_sentences *s) {
    free(s->sent);
    free(s->buf);
    memset(s, 0, sizeof *s);
}

lc_status lc_sentences_join(const char *const *sent, int n, const uint8_t *pick, char **out) {
    lc_clear_error();
    *out = NULL;
    size_t len = 0;
    for (int i = 0; i < n; i++)
        if (!pick || pick[i]) len += strlen(sent[i]) + 1;
    char *s = malloc(len + 1), *p = s;
    if (!s) return lc_fail(LC_ERR_NOMEM, "summary: out of memory for %zu bytes", len);
    for (int i = 0; i < n; i++) {
        if (pick && !pick[i]) continue;
        if (p != s) *p++ = ' ';
        size_t l = strlen(sent[i]);
        memcpy(p, sent[i], l);
        p += l;
    }
    *p = '\0';
    *out = s;
    return LC_OK;
}
