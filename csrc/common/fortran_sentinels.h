/* Open MPI's Fortran MPI_IN_PLACE and MPI_BOTTOM: the addresses of common blocks, not the C
 * constants. Shared by the profiler's and the collective kernels' Fortran entry points. */
#ifndef RANKMAP_FORTRAN_SENTINELS_H
#define RANKMAP_FORTRAN_SENTINELS_H

#include <mpi.h>

#ifdef OPEN_MPI
extern int mpi_fortran_in_place_ __attribute__((weak));
extern int mpi_fortran_in_place __attribute__((weak));
extern int mpi_fortran_in_place__ __attribute__((weak));
extern int MPI_FORTRAN_IN_PLACE __attribute__((weak));
extern int mpi_fortran_bottom_ __attribute__((weak));
extern int mpi_fortran_bottom __attribute__((weak));
extern int mpi_fortran_bottom__ __attribute__((weak));
extern int MPI_FORTRAN_BOTTOM __attribute__((weak));

/* a Fortran buffer argument as the C API wants it */
static inline void *rm_fortran_buf(const void *p)
{
    if (p == NULL)
        return NULL;
    if (p == &mpi_fortran_in_place_ || p == &mpi_fortran_in_place || p == &mpi_fortran_in_place__ ||
        p == &MPI_FORTRAN_IN_PLACE)
        return MPI_IN_PLACE;
    if (p == &mpi_fortran_bottom_ || p == &mpi_fortran_bottom || p == &mpi_fortran_bottom__ || p == &MPI_FORTRAN_BOTTOM)
        return MPI_BOTTOM;
    return (void *)p;
}
#endif

#endif
