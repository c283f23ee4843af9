/* longctx version: the release this header belongs to (LC_VERSION_*, also in longctx.pc and the shared
 * library's name liblongctx.so.MAJOR.MINOR.PATCH) and lc_version(), the release of the library actually
 * linked, and the CPU code path chosen at startup for a portable build (docs/guides/install.md). */
#ifndef LONGCTX_VERSION_H
#define LONGCTX_VERSION_H

#define LC_VERSION_MAJOR 0
#define LC_VERSION_MINOR 1
#define LC_VERSION_PATCH 0
#define LC_VERSION_STRING "0.1.0"
/* One number to compare in #if: LC_VERSION_NUMBER >= LC_MAKE_VERSION(0, 1, 0). */
#define LC_MAKE_VERSION(major, minor, patch) ((major) * 10000 + (minor) * 100 + (patch))
#define LC_VERSION_NUMBER LC_MAKE_VERSION(LC_VERSION_MAJOR, LC_VERSION_MINOR, LC_VERSION_PATCH)

#ifdef __cplusplus
extern "C" {
#endif

/* "MAJOR.MINOR.PATCH" of the linked library (may differ from LC_VERSION_STRING when a program runs
 * against a newer shared library). */
const char *lc_version(void);

/* The code path of the hot kernels (matrix products, attention, layer norm, ...): "avx512" or
 * "generic" in a portable build (the installed library: chosen at startup by CPUID, or forced with the
 * environment variable LC_CPU=generic|avx512), "native" in a build tree compiled for its own CPU. */
const char *lc_cpu_path(void);

/* Switches a portable build to the "generic" or "avx512" path (for tests and comparisons; call it before
 * other calls into the library, from one thread). Returns 0, or -1 when the path is unknown, the CPU
 * lacks it, or the library was not built with run-time dispatch (then lc_last_error() says which). */
int lc_cpu_select(const char *path);

#ifdef __cplusplus
}
#endif

#endif
