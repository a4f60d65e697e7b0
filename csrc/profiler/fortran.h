/* Open MPI's Fortran bindings: sentinels and forwarding to the pmpi_* Fortran symbols. */
#ifndef RMP_FORTRAN_H
#define RMP_FORTRAN_H

#include <stdio.h>
#include <stdlib.h>

#include "fortran_sentinels.h"

#ifdef OPEN_MPI
static inline const void *rmp_f_buf(const void *p) { return rm_fortran_buf(p); }

static inline void rmp_fortran_missing(const char *sym)
{
    fprintf(stderr, "rankmap profiler: %s is not loaded; cannot forward this Fortran MPI call\n", sym);
    abort();
}

/* Forward to the library's Fortran entry point `sym_` (a weak reference). */
#define RMP_FCALL(sym, args)                  \
    do {                                      \
        if (sym##_ == NULL)                   \
            rmp_fortran_missing(#sym "_");    \
        sym##_ args;                          \
    } while (0)
#endif

#if defined(MPICH) && !defined(OPEN_MPI)
#include <dlfcn.h>
static inline const void *rmp_f_buf(const void *p) { return p; } /* not needed: only handle arguments */

/* call the next definition of `sym` (the library's own f08 entry point) */
#define RMP_FNEXT(sym, proto, args)                                                   \
    do {                                                                             \
        static void (*next) proto;                                                   \
        if (next == NULL)                                                            \
            *(void **)(&next) = dlsym(RTLD_NEXT, #sym);                              \
        if (next == NULL) {                                                          \
            fprintf(stderr, "rankmap profiler: %s not found in the MPI library\n", #sym); \
            abort();                                                                 \
        }                                                                            \
        next args;                                                                   \
    } while (0)
#endif

#endif
