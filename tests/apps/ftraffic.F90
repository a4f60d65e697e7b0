! Fortran test program with known traffic; built three ways:
!   default: include 'mpif.h'   -DUSEMPI: use mpi   -DF08: use mpi_f08
! r -> right: 3 x 100 doubles (sendrecv) + 2 x 20 doubles (persistent send)
! r -> left:  2 x 10 integers (isend)
! r -> next rank of the same parity: 8 integers (split communicator)
! r -> j (alltoallv in place): (r + j + 1) integers
program ftraffic
#if defined(F08)
  use mpi_f08
#elif defined(USEMPI)
  use mpi
#endif
  implicit none
#if !defined(F08) && !defined(USEMPI)
  include 'mpif.h'
#endif
#if defined(F08)
#define COMM_T type(MPI_Comm)
#define REQ_T type(MPI_Request)
#else
#define COMM_T integer
#define REQ_T integer
#endif
  integer :: ierr, rank, nproc, i, j, right, left, srank, ssize, n
  double precision :: a(100), b(100), p(20), q(20), s(5)
  integer :: x(10), y(10), u(8), v(8)
  integer, allocatable :: cnt(:), dsp(:), buf(:), zero(:)
  REQ_T :: req(2), ps, pr
  COMM_T :: sub

  call MPI_Init(ierr)
  call MPI_Comm_rank(MPI_COMM_WORLD, rank, ierr)
  call MPI_Comm_size(MPI_COMM_WORLD, nproc, ierr)
  right = mod(rank + 1, nproc)
  left = mod(rank + nproc - 1, nproc)
  a = 0; x = 0; p = 0; u = 0; s = 1

  do i = 1, 3
    call MPI_Sendrecv(a, 100, MPI_DOUBLE_PRECISION, right, 1, b, 100, MPI_DOUBLE_PRECISION, left, 1, &
                      MPI_COMM_WORLD, MPI_STATUS_IGNORE, ierr)
  end do
  do i = 1, 2
    call MPI_Irecv(y, 10, MPI_INTEGER, right, 2, MPI_COMM_WORLD, req(1), ierr)
    call MPI_Isend(x, 10, MPI_INTEGER, left, 2, MPI_COMM_WORLD, req(2), ierr)
    call MPI_Waitall(2, req, MPI_STATUSES_IGNORE, ierr)
  end do
  call MPI_Send_init(p, 20, MPI_DOUBLE_PRECISION, right, 3, MPI_COMM_WORLD, ps, ierr)
  call MPI_Recv_init(q, 20, MPI_DOUBLE_PRECISION, left, 3, MPI_COMM_WORLD, pr, ierr)
  do i = 1, 2
    call MPI_Start(pr, ierr)
    call MPI_Start(ps, ierr)
    call MPI_Wait(ps, MPI_STATUS_IGNORE, ierr)
    call MPI_Wait(pr, MPI_STATUS_IGNORE, ierr)
  end do
  call MPI_Request_free(ps, ierr)
  call MPI_Request_free(pr, ierr)

  call MPI_Allreduce(MPI_IN_PLACE, s, 5, MPI_DOUBLE_PRECISION, MPI_SUM, MPI_COMM_WORLD, ierr)

  call MPI_Comm_split(MPI_COMM_WORLD, mod(rank, 2), rank, sub, ierr)
  call MPI_Comm_rank(sub, srank, ierr)
  call MPI_Comm_size(sub, ssize, ierr)
  call MPI_Sendrecv(u, 8, MPI_INTEGER, mod(srank + 1, ssize), 4, v, 8, MPI_INTEGER, &
                    mod(srank + ssize - 1, ssize), 4, sub, MPI_STATUS_IGNORE, ierr)
  call MPI_Comm_free(sub, ierr)

  allocate(cnt(0:nproc-1), dsp(0:nproc-1))
  n = 0
  do j = 0, nproc - 1
    cnt(j) = rank + j + 1
    dsp(j) = n
    n = n + cnt(j)
  end do
  allocate(buf(n))
  buf = 0
  ! send counts are ignored in place: zeros here would show if MPI_IN_PLACE went unrecognised
  allocate(zero(0:nproc-1))
  zero = 0
  call MPI_Alltoallv(MPI_IN_PLACE, zero, dsp, MPI_INTEGER, buf, cnt, dsp, MPI_INTEGER, MPI_COMM_WORLD, ierr)

  call MPI_Finalize(ierr)
end program ftraffic
