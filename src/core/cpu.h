/* Run-time choice of the hot kernels' code path in a portable build (Makefile: the objects under
 * $(BUILD)/pic/, what `make install` installs). The hot translation units (every file of src/kernels/ and the
 * attention kinds) are compiled twice, for the portable baseline and for AVX-512, their symbols renamed
 * lcisa_generic_* and lcisa_avx512_* (tools/gen_dispatch.sh), and each public function of them is a jump
 * through a pointer that lc_dispatch_apply points at one of the two. The choice is made once, by a
 * constructor, from CPUID and the environment variable LC_CPU=generic|avx512; lc_cpu_select changes it
 * for tests. Without -DLC_DISPATCH (the build tree, compiled for its own CPU) there is one path,
 * "native". */
#ifndef LC_CORE_CPU_H
#define LC_CORE_CPU_H

enum { LC_CPU_GENERIC = 0, LC_CPU_AVX512 = 1 };

/* The path in use (LC_CPU_GENERIC or LC_CPU_AVX512; LC_CPU_GENERIC without dispatch). */
extern int lc_cpu_level;

/* Whether this CPU and OS run the AVX-512 path (AVX-512 F, CD, BW, DQ, VL and FMA, zmm state enabled). */
int lc_cpu_has_avx512(void);

/* The startup choice: the best path of this CPU, or LC_CPU's; a one-line warning on stderr when LC_CPU
 * names a path that is unknown or that this CPU lacks (then the best path is taken). */
int lc_cpu_choose(void);

#ifdef LC_DISPATCH
/* Points every dispatched function at the path `level` (generated: $(BUILD)/pic/dispatch.c). */
void lc_dispatch_apply(int level);
#endif

#endif
