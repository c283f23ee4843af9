/* The attention kinds' vector helpers live in kernels/vec.h; this name stays for the files that include it. */
#ifndef LC_ATTN_VEC_H
#define LC_ATTN_VEC_H

#include "kernels/vec.h"

#endif
