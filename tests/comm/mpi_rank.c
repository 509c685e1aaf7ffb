// One rank of an MPI job that exercises wmap's collectives on "mpi:world"
// (run by mpi_test.sh under mpirun). Modes:
//   conform   every operation, dtype, reduction, size and algorithm, then
//             Send/Recv around the ring and a Barrier; prints "ok N calls"
//   dead      the last rank dies (SIGKILL) before an AllReduce the others
//             make; each survivor prints its error and the job is aborted
//   mismatch  rank 0 calls AllReduce, the others Broadcast
// A rank that fails prints "rank R: MESSAGE" on stderr and aborts the job.
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "comm/comm.h"

static void die(int32_t rank, wm_status_t s) {
  fprintf(stderr, "rank %d: %s\n", rank, wm_status_message(s));
  wm_status_free(s);
  wm_comm_mpi_abort(1);
}

static wm_status_t ring_p2p(wm_comm_t *c, int32_t r, int32_t n) {
  float out[257], in[257];
  wm_comm_fill(out, 257, 1, WM_COMM_SUM, r, 0);
  int32_t right = (r + 1) % n, left = (r + n - 1) % n;
  wm_status_t s = r % 2 == 0 ? wm_comm_send(c, out, 257, 1, right)
                             : wm_comm_recv(c, in, 257, 1, left);
  if (!s) {
    s = r % 2 == 0 ? wm_comm_recv(c, in, 257, 1, left)
                   : wm_comm_send(c, out, 257, 1, right);
  }
  if (!s) {
    s = wm_comm_verify(WM_COMM_RECV, in, 257, 1, (uint32_t)left, r, n);
  }
  return s ? s : wm_comm_barrier(c);
}

int main(int argc, char **argv) {
  const char *mode = argc > 1 ? argv[1] : "conform";
  int32_t r = 0, n = 1;
  wm_status_t s = wm_comm_mpi_init(&r, &n);
  if (s) {
    die(r, s);
  }
  wm_comm_t *c = NULL;
  s = wm_comm_open("mpi:world", r, n, &c);
  if (s) {
    die(r, s);
  }
  if (strcmp(mode, "conform") == 0) {
    size_t calls = 0;
    s = wm_comm_conform(c, 100003, &calls);
    if (!s && n % 2 == 0) {
      s = ring_p2p(c, r, n);
    }
    if (s) {
      die(r, s);
    }
    printf("rank %d of %d: ok %zu calls\n", r, n, calls);
  } else if (strcmp(mode, "dead") == 0 || strcmp(mode, "mismatch") == 0) {
    float buf[1000] = {0};
    if (mode[0] == 'd' && r == n - 1) {
      raise(SIGKILL);
    }
    s = mode[0] == 'm' && r != 0
            ? wm_comm_broadcast(c, buf, buf, 1000, 1, 0)
            : wm_comm_all_reduce(c, buf, buf, 1000, 1, WM_COMM_SUM);
    if (s) {
      die(r, s);
    }
    printf("rank %d: the call succeeded\n", r);
  } else {
    fprintf(stderr, "unknown mode \"%s\"\n", mode);
    wm_comm_mpi_abort(2);
  }
  wm_comm_destroy(c);
  wm_comm_mpi_finalize();
  return 0;
}
