/* Small facts about files shared by every reader and writer of the library (see files.h), the one atomic
 * writer every file the library and the CLI write goes through (checkpoints, ListOps splits, figures), and
 * the one bounded reader of a whole input file or standard input. */
#include "core/files.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "core/status.h"

const char *lc_file_kind(mode_t mode) {
    if (S_ISDIR(mode)) return "a directory";
    if (S_ISCHR(mode)) return "a character device";
    if (S_ISBLK(mode)) return "a block device";
    if (S_ISFIFO(mode)) return "a FIFO";
    if (S_ISSOCK(mode)) return "a socket";
    return "not a regular file";
}

/* The directory of path ("." when it has none; caller frees) and its last component. */
static char *dir_of(const char *path, const char **name) {
    const char *slash = strrchr(path, '/');
    *name = slash ? slash + 1 : path;
    if (!slash) return strdup(".");
    if (slash == path) return strdup("/");
    char *dir = malloc((size_t)(slash - path) + 1);
    if (dir) memcpy(dir, path, (size_t)(slash - path)), dir[slash - path] = '\0';
    return dir;
}

/* fsync a directory so a rename in it is durable; failures are ignored. */
static void sync_directory(const char *dir) {
    int fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (fd >= 0) {
        (void)fsync(fd);
        close(fd);
    }
}

/* Temporary files are NAME.tmp.PID.RANDOM: the writer's PID, then the six random characters mkstemp puts
 * in place of its template (TMP_TEMPLATE). */
#define TMP_TEMPLATE "XXXXXX" /* mkstemp's required template, not a marker */
#define TMP_SUFFIX_MAX (int)sizeof(".tmp.4294967295." TMP_TEMPLATE)

/* Whether entry is a temporary file of the file `name` whose writer no longer runs. A writer that still
 * runs (another run writing the same file) keeps its file; other files' temporaries never match (the
 * whole name is compared and the suffix must be exactly .tmp.DIGITS. and six letters or digits). */
static int is_stale_temp(const char *entry, const char *name) {
    const size_t n = strlen(name);
    if (strncmp(entry, name, n) != 0 || strncmp(entry + n, ".tmp.", 5) != 0) return 0;
    const char *p = entry + n + 5;
    long long pid = 0;
    int digits = 0;
    for (; *p >= '0' && *p <= '9' && digits < 10; p++, digits++) pid = pid * 10 + (*p - '0');
    if (!digits || *p != '.' || pid <= 0 || pid > 0x7fffffff) return 0;
    p++;
    for (int i = 0; i < 6; i++, p++)
        if (!((*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z') || (*p >= '0' && *p <= '9'))) return 0;
    if (*p) return 0;
    if ((pid_t)pid == getpid()) return 1; /* ours: a write of this process never leaves one behind */
    return kill((pid_t)pid, 0) != 0 && errno == ESRCH;
}

/* Remove the stale temporary files of `name` in dir (regular files only, never followed). */
static void remove_stale(const char *dir, const char *name) {
    DIR *d = opendir(dir);
    if (!d) return;
    struct dirent *e;
    struct stat st;
    while ((e = readdir(d)))
        if (is_stale_temp(e->d_name, name) && fstatat(dirfd(d), e->d_name, &st, AT_SYMLINK_NOFOLLOW) == 0 &&
            S_ISREG(st.st_mode))
            (void)unlinkat(dirfd(d), e->d_name, 0);
    closedir(d);
}

/* path absent (*exists = 0) or a regular file (its mode in *mode); anything else is refused. */
static lc_status check_target(const char *path, const char *what, int *exists, mode_t *mode) {
    struct stat st;
    *exists = stat(path, &st) == 0;
    if (!*exists) {
        if (errno == ENOENT) return LC_OK;
        return lc_fail(LC_ERR_IO, "%s: cannot stat: %s", path, strerror(errno));
    }
    if (!S_ISREG(st.st_mode))
        return lc_fail(LC_ERR_ARG, "%s: is %s, not a regular file: refusing to replace it with %s", path,
                       lc_file_kind(st.st_mode), what);
    *mode = st.st_mode & 07777;
    return LC_OK;
}

lc_status lc_file_check_output(const char *path, const char *what) {
    if (!path || !*path) return lc_fail(LC_ERR_ARG, "empty output path");
    const char *name;
    char *dir = dir_of(path, &name);
    if (!dir) return lc_fail(LC_ERR_NOMEM, "%s: out of memory", path);
    lc_status s = LC_OK;
    struct stat st;
    long name_max = -1;
    int exists;
    mode_t mode;
    if (!*name || strcmp(name, ".") == 0 || strcmp(name, "..") == 0)
        s = lc_fail(LC_ERR_ARG, "%s: names a directory, not a file", path);
    else if (stat(dir, &st) != 0)
        s = lc_fail(LC_ERR_IO, "%s: directory %s: %s", path, dir, strerror(errno));
    else if (!S_ISDIR(st.st_mode))
        s = lc_fail(LC_ERR_IO, "%s: %s is not a directory", path, dir);
    else if (access(dir, W_OK | X_OK) != 0)
        s = lc_fail(LC_ERR_IO, "%s: directory %s is not writable: %s", path, dir, strerror(errno));
    if (!s) {
        errno = 0;
        name_max = pathconf(dir, _PC_NAME_MAX);
        if (name_max <= 0) name_max = 255;
        if ((long)strlen(name) + TMP_SUFFIX_MAX - 1 > name_max)
            s = lc_fail(LC_ERR_ARG, "%s: the name is too long: with the temporary suffix (%d characters) it must "
                                    "fit in %ld", path, TMP_SUFFIX_MAX - 1, name_max);
        else if (strlen(path) + TMP_SUFFIX_MAX > PATH_MAX)
            s = lc_fail(LC_ERR_ARG, "%s: the path is too long: with the temporary suffix it must fit in %d", path,
                        PATH_MAX - 1);
    }
    if (!s) s = check_target(path, what, &exists, &mode);
    free(dir);
    return s;
}

/* The temporary file of the write in progress, for the signal handler (one write at a time: the CLI's). */
static char temp_now[PATH_MAX + TMP_SUFFIX_MAX];
static volatile sig_atomic_t temp_live;

static void on_signal(int sig) {
    if (temp_live) (void)unlink(temp_now); /* async-signal-safe */
    signal(sig, SIG_DFL);
    raise(sig);
}

void lc_file_clean_up_on_signals(void) {
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_signal;
    sigemptyset(&sa.sa_mask);
    sigaction(SIGINT, &sa, NULL);
    sigaction(SIGTERM, &sa, NULL);
    sigaction(SIGHUP, &sa, NULL);
}

/* Blocks the signals of lc_file_clean_up_on_signals while the temporary file's name is being recorded or
 * forgotten, so the handler never sees half a name. */
static void hold_signals(int hold, sigset_t *old) {
    sigset_t s;
    sigemptyset(&s);
    sigaddset(&s, SIGINT), sigaddset(&s, SIGTERM), sigaddset(&s, SIGHUP);
    if (hold) sigprocmask(SIG_BLOCK, &s, old);
    else sigprocmask(SIG_SETMASK, old, NULL);
}

lc_status lc_file_write_atomic(const char *path, const char *what, int (*fill)(FILE *f, void *user), void *user) {
    lc_status s = lc_file_check_output(path, what);
    if (s) return s;
    int exists;
    mode_t mode = 0;
    if ((s = check_target(path, what, &exists, &mode))) return s;
    if (!exists) {
        const mode_t mask = umask(022); /* read the umask (there is no other portable way) */
        umask(mask);
        mode = 0666 & ~mask;
    }
    const char *name;
    char *dir = dir_of(path, &name);
    size_t tmp_cap = strlen(path) + TMP_SUFFIX_MAX + 1;
    char *tmp = malloc(tmp_cap);
    if (!tmp || !dir) {
        free(tmp), free(dir);
        return lc_fail(LC_ERR_NOMEM, "%s: out of memory", path);
    }
    remove_stale(dir, name);
    snprintf(tmp, tmp_cap, "%s.tmp.%ld." TMP_TEMPLATE, path, (long)getpid());
    sigset_t old;
    hold_signals(1, &old);
    const int fd = mkstemp(tmp); /* O_CREAT | O_EXCL, mode 0600: a symlink at the name is never followed */
    const int made_errno = errno;
    if (fd >= 0 && strlen(tmp) < sizeof temp_now) strcpy(temp_now, tmp), temp_live = 1;
    hold_signals(0, &old);
    if (fd < 0) {
        free(tmp), free(dir);
        return lc_fail(LC_ERR_IO, "%s: cannot create a temporary file beside it: %s", path, strerror(made_errno));
    }
    (void)fcntl(fd, F_SETFD, FD_CLOEXEC);
    const char *step = "cannot write";
    int e = fchmod(fd, mode) != 0 ? errno : 0;
    if (e) step = "cannot set the temporary file's mode";
    FILE *fp = e ? NULL : fdopen(fd, "wb");
    if (!e && !fp) e = errno ? errno : ENOMEM;
    if (!fp) close(fd);
    if (!e) {
        errno = 0;
        e = fill(fp, user);
        if (!e && (fflush(fp) != 0 || fsync(fileno(fp)) != 0)) e = errno ? errno : EIO;
    }
    if (fp && fclose(fp) != 0 && !e) e = errno ? errno : EIO;
    if (e < 0) s = (lc_status)-e; /* the filler's own failure, already recorded */
    if (!e && (s = check_target(path, what, &exists, &mode))) e = -(int)s; /* replaced by a device meanwhile */
    if (!e && rename(tmp, path) != 0) e = errno, step = "cannot rename the temporary file over it";
    if (e) unlink(tmp);
    hold_signals(1, &old);
    temp_live = 0;
    hold_signals(0, &old);
    free(tmp);
    if (e) {
        free(dir);
        return e < 0 ? s : lc_fail(LC_ERR_IO, "%s: %s: %s", path, step, strerror(e));
    }
    sync_directory(dir);
    free(dir);
    return LC_OK;
}

lc_status lc_file_read_all(const char *path, size_t max, char **buf, size_t *len) {
    *buf = NULL;
    *len = 0;
    const int std_in = strcmp(path, "-") == 0;
    const char *name = std_in ? "standard input" : path;
    struct stat sb;
    /* stat before open (opening a FIFO would wait for a writer, opening a device may have effects), then the
     * descriptor itself, opened without blocking, so that a path swapped in between cannot slip by */
    if (!std_in && stat(path, &sb) != 0) return lc_fail(LC_ERR_IO, "%s: cannot open: %s", path, strerror(errno));
    if (!std_in && !S_ISREG(sb.st_mode))
        return lc_fail(LC_ERR_IO, "%s: is %s, not a regular file", path, lc_file_kind(sb.st_mode));
    const int fd = std_in ? 0 : open(path, O_RDONLY | O_NONBLOCK | O_NOCTTY | O_CLOEXEC);
    if (fd < 0) return lc_fail(LC_ERR_IO, "%s: cannot open: %s", path, strerror(errno));
    if (!std_in) {
        lc_status bad = LC_OK;
        if (fstat(fd, &sb) != 0) bad = lc_fail(LC_ERR_IO, "%s: cannot stat: %s", path, strerror(errno));
        else if (!S_ISREG(sb.st_mode))
            bad = lc_fail(LC_ERR_IO, "%s: is %s, not a regular file", path, lc_file_kind(sb.st_mode));
        else if ((unsigned long long)sb.st_size > max)
            bad = lc_fail(LC_ERR_FORMAT, "%s: %lld bytes, more than %zu, the most it may have", path,
                          (long long)sb.st_size, max);
        if (bad) {
            close(fd);
            return bad;
        }
    }
    size_t cap = std_in ? 1 << 16 : (size_t)sb.st_size + 1, n = 0;
    char *b = malloc(cap + 1);
    lc_status st = b ? LC_OK : lc_fail(LC_ERR_NOMEM, "%s: out of memory", name);
    while (!st) {
        if (n == cap) { /* grow, but never past max + 1 bytes (one more than allowed shows the input is too long) */
            const size_t want = cap > max / 2 ? max + 1 : 2 * cap;
            char *g = want > cap ? realloc(b, want + 1) : NULL;
            if (!g) {
                st = want > cap ? lc_fail(LC_ERR_NOMEM, "%s: out of memory", name)
                                : lc_fail(LC_ERR_FORMAT, "%s: more than %zu bytes, the most it may have", name, max);
                break;
            }
            b = g, cap = want;
        }
        const ssize_t k = read(fd, b + n, cap - n);
        if (k < 0 && errno == EINTR) continue;
        if (k < 0) st = lc_fail(LC_ERR_IO, "%s: read error: %s", name, strerror(errno));
        if (k <= 0) break;
        n += (size_t)k;
        if (n > max) st = lc_fail(LC_ERR_FORMAT, "%s: more than %zu bytes, the most it may have", name, max);
    }
    if (!std_in) close(fd);
    if (st) {
        free(b);
        return st;
    }
    b[n] = '\0';
    *buf = b, *len = n;
    return LC_OK;
}
