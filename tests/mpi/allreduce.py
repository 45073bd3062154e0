# The Allreduce of tests/mpi/mpi_check.c from Python (mpi4py, on Debian's
# Open MPI): every rank contributes (rank + 1) * (i + 1) for 65536 int64s and
# checks the sum. Rank 0 prints one TAP line; exit status 1 if any was wrong.
import array
import sys

from mpi4py import MPI

comm = MPI.COMM_WORLD
rank, size = comm.Get_rank(), comm.Get_size()
N = 1 << 16
mine = array.array("q", ((rank + 1) * (i + 1) for i in range(N)))
total = array.array("q", bytes(8 * N))
comm.Allreduce([mine, MPI.INT64_T], [total, MPI.INT64_T], op=MPI.SUM)
factor = size * (size + 1) // 2
bad = sum(1 for i in range(N) if total[i] != factor * (i + 1))
bad = comm.allreduce(bad, op=MPI.SUM)
if rank == 0:
    print(("not ok" if bad else "ok") + f" - mpi4py MPI_Allreduce over {size} ranks, {N} int64 each"
          + (f" ({bad} wrong)" if bad else ""))
sys.exit(1 if bad else 0)
