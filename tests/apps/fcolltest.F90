! Fortran calls of the interposed collectives; built three ways:
!   default: include 'mpif.h'   -DUSEMPI: use mpi   -DF08: use mpi_f08
! Checks its own results (integer-valued doubles: every summation order is exact) and
! prints "fcolltest ok" or "fcolltest WRONG".
program fcolltest
#if defined(F08)
  use mpi_f08
#elif defined(USEMPI)
  use mpi
#endif
  implicit none
#if !defined(F08) && !defined(USEMPI)
  include 'mpif.h'
#endif
  integer, parameter :: n = 100003
  integer :: ierr, rank, nproc, i, bad, allbad
  double precision, allocatable :: a(:), b(:)
  integer :: m(7), mm(7)
  allocate(a(n), b(n))
  call MPI_Init(ierr)
  call MPI_Comm_rank(MPI_COMM_WORLD, rank, ierr)
  call MPI_Comm_size(MPI_COMM_WORLD, nproc, ierr)
  bad = 0
  do i = 1, n
    a(i) = dble(rank + 1) + dble(mod(i, 7))
  end do
  call MPI_Allreduce(a, b, n, MPI_DOUBLE_PRECISION, MPI_SUM, MPI_COMM_WORLD, ierr)
  do i = 1, n
    if (b(i) /= dble(nproc * (nproc + 1) / 2) + dble(nproc * mod(i, 7))) bad = 1
  end do
  ! in place
  b = a
  call MPI_Allreduce(MPI_IN_PLACE, b, n, MPI_DOUBLE_PRECISION, MPI_SUM, MPI_COMM_WORLD, ierr)
  do i = 1, n
    if (b(i) /= dble(nproc * (nproc + 1) / 2) + dble(nproc * mod(i, 7))) bad = 1
  end do
  ! reduce to the last rank
  do i = 1, 7
    m(i) = rank * 10 + i
  end do
  call MPI_Reduce(m, mm, 7, MPI_INTEGER, MPI_MAX, nproc - 1, MPI_COMM_WORLD, ierr)
  if (rank == nproc - 1) then
    do i = 1, 7
      if (mm(i) /= (nproc - 1) * 10 + i) bad = 1
    end do
  end if
  b = 0
  call MPI_Reduce(a, b, n, MPI_DOUBLE_PRECISION, MPI_SUM, 0, MPI_COMM_WORLD, ierr)
  if (rank == 0) then
    do i = 1, n
      if (b(i) /= dble(nproc * (nproc + 1) / 2) + dble(nproc * mod(i, 7))) bad = 1
    end do
  end if
  ! broadcast from rank 1 (or 0)
  b = a
  call MPI_Bcast(b, n, MPI_DOUBLE_PRECISION, min(1, nproc - 1), MPI_COMM_WORLD, ierr)
  do i = 1, n
    if (b(i) /= dble(min(1, nproc - 1) + 1) + dble(mod(i, 7))) bad = 1
  end do
  call MPI_Allreduce(bad, allbad, 1, MPI_INTEGER, MPI_MAX, MPI_COMM_WORLD, ierr)
  if (rank == 0) then
    if (allbad == 0) then
      print '(a)', 'fcolltest ok'
    else
      print '(a)', 'fcolltest WRONG'
    end if
  end if
  call MPI_Finalize(ierr)
end program fcolltest
