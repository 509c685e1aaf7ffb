// Tests of the collectives over threads: every operation, dtype, reduction,
// size and algorithm on 1 to 5 ranks against known results, Send/Recv and
// Barrier, the counters, bad arguments, and the faults: disagreeing calls,
// a rank that leaves, a rank that never comes (timeout) and an abort, each
// ending every survivor's call with an error naming the peer, in time.
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "comm/comm.h"
#include "wm_test.h"

#define MAX_RANKS 5

typedef struct rank_job {
  char id[WM_COMM_ID_MAX];
  int32_t rank, size;
  int mode;            // what the rank does (per test)
  wm_status_t status;  // the rank's result
  char message[1024];  // its error text, if any
  double seconds;      // how long its call took
  size_t calls;        // calls made (conform)
  uint64_t aux;        // what a test wants back
} rank_job_t;

typedef void (*rank_fn)(rank_job_t *job, wm_comm_t *comm);

typedef struct thread_arg {
  rank_job_t *job;
  rank_fn fn;
} thread_arg_t;

static void *thread_main(void *p) {
  thread_arg_t *a = p;
  wm_comm_t *comm = NULL;
  a->job->status = wm_comm_open(a->job->id, a->job->rank, a->job->size, &comm);
  if (!a->job->status) {
    uint64_t t0 = wm_now_ns();
    a->fn(a->job, comm);
    a->job->seconds = (double)(wm_now_ns() - t0) * 1e-9;
    wm_comm_destroy(comm);
  }
  snprintf(a->job->message, sizeof(a->job->message), "%s",
           wm_status_message(a->job->status));
  return NULL;
}

// Runs |fn| on |size| threads, one rank each; |modes| may be NULL.
static void run_ranks(int32_t size, rank_fn fn, const int *modes,
                      rank_job_t *jobs) {
  char id[WM_COMM_ID_MAX];
  wm_comm_new_id(id);
  pthread_t th[MAX_RANKS];
  thread_arg_t args[MAX_RANKS];
  for (int32_t r = 0; r < size; r++) {
    memset(&jobs[r], 0, sizeof(jobs[r]));
    snprintf(jobs[r].id, sizeof(jobs[r].id), "%s", id);
    jobs[r].rank = r;
    jobs[r].size = size;
    jobs[r].mode = modes ? modes[r] : 0;
    args[r] = (thread_arg_t){&jobs[r], fn};
    pthread_create(&th[r], NULL, thread_main, &args[r]);
  }
  for (int32_t r = 0; r < size; r++) {
    pthread_join(th[r], NULL);
  }
}

static void free_jobs(rank_job_t *jobs, int32_t size) {
  for (int32_t r = 0; r < size; r++) {
    wm_status_free(jobs[r].status);
    jobs[r].status = NULL;
  }
}

static void conform_rank(rank_job_t *job, wm_comm_t *comm) {
  job->status = wm_comm_conform(comm, 100003, &job->calls);
}

WM_TEST(every_operation_dtype_reduction_size_and_algorithm_is_exact) {
  rank_job_t jobs[MAX_RANKS];
  for (int32_t n = 1; n <= MAX_RANKS; n++) {
    run_ranks(n, conform_rank, NULL, jobs);
    for (int32_t r = 0; r < n; r++) {
      if (jobs[r].status) {
        wm_test_fail(__FILE__, __LINE__, "%d ranks: %s", n, jobs[r].message);
        free_jobs(jobs, n);
        return;
      }
      WM_CHECK(jobs[r].calls > 1000);
    }
    free_jobs(jobs, n);
  }
}

static void p2p_rank(rank_job_t *job, wm_comm_t *comm) {
  int32_t r = job->rank, n = job->size;
  float out[300], in[300];
  // Each rank sends to its right, receives from its left, twice, with
  // sizes that differ per round.
  for (int round = 0; round < 2 && !job->status; round++) {
    size_t count = round == 0 ? 300 : 1;
    wm_comm_fill(out, count, 1, WM_COMM_SUM, r, 0);
    if (r % 2 == 0) {
      job->status = wm_comm_send(comm, out, count, 1, (r + 1) % n);
      if (!job->status) {
        job->status = wm_comm_recv(comm, in, count, 1, (r + n - 1) % n);
      }
    } else {
      job->status = wm_comm_recv(comm, in, count, 1, (r + n - 1) % n);
      if (!job->status) {
        job->status = wm_comm_send(comm, out, count, 1, (r + 1) % n);
      }
    }
    if (!job->status) {
      job->status = wm_comm_verify(WM_COMM_RECV, in, count, 1,
                                   (uint32_t)((r + n - 1) % n), r, n);
    }
  }
  if (!job->status) {
    job->status = wm_comm_barrier(comm);
  }
  uint64_t calls, bytes;
  wm_comm_counts(comm, WM_COMM_SEND, &calls, &bytes);
  if (!job->status && (calls != 2 || bytes != 301 * 4)) {
    job->status =
        WM_ERROR(INTERNAL, "send counts %llu calls %llu bytes",
                 (unsigned long long)calls, (unsigned long long)bytes);
  }
  wm_comm_counts(comm, WM_COMM_BARRIER, &calls, &bytes);
  if (!job->status && calls != 1) {
    job->status = WM_ERROR(INTERNAL, "barrier counted %llu times",
                           (unsigned long long)calls);
  }
}

WM_TEST(send_recv_pass_messages_around_a_ring_and_are_counted) {
  rank_job_t jobs[MAX_RANKS];
  for (int32_t n = 2; n <= 4; n += 2) {
    run_ranks(n, p2p_rank, NULL, jobs);
    for (int32_t r = 0; r < n; r++) {
      WM_CHECK_STR_EQ(jobs[r].message, "ok");
    }
    free_jobs(jobs, n);
  }
}

static void counts_rank(rank_job_t *job, wm_comm_t *comm) {
  float buf[2048] = {0};
  for (int i = 0; i < 3 && !job->status; i++) {
    job->status = wm_comm_all_reduce(comm, buf, buf, 1000, 1, WM_COMM_SUM);
  }
  if (!job->status) {
    job->status = wm_comm_all_gather(comm, buf, buf + 1024, 10, 1);
  }
  uint64_t calls, bytes;
  wm_comm_counts(comm, WM_COMM_ALL_REDUCE, &calls, &bytes);
  job->calls = (size_t)calls * 1000000 + (size_t)bytes;
  wm_comm_counts(comm, WM_COMM_ALL_GATHER, &calls, &bytes);
  job->aux = bytes;
}

WM_TEST(counters_give_calls_and_bytes_per_rank_as_nccl_tests_define_them) {
  rank_job_t jobs[2];
  run_ranks(2, counts_rank, NULL, jobs);
  WM_CHECK_STR_EQ(jobs[0].message, "ok");
  WM_CHECK_INT_EQ(jobs[0].calls, 3 * 1000000 + 3 * 4000);
  WM_CHECK_INT_EQ(jobs[0].aux, 2 * 10 * 4);  // whole output
  free_jobs(jobs, 2);
}

// ------------------------------------------------------------- faults

static void mismatch_rank(rank_job_t *job, wm_comm_t *comm) {
  float buf[64] = {0};
  if (job->rank == 0) {
    job->status = wm_comm_all_reduce(comm, buf, buf, 64, 1, WM_COMM_SUM);
  } else {
    job->status = wm_comm_broadcast(comm, buf, buf, 64, 1, 0);
  }
  // The communicator is unusable afterwards.
  wm_status_t again = wm_comm_barrier(comm);
  if (!again) {
    wm_status_free(job->status);
    job->status = WM_ERROR(INTERNAL, "a failed communicator ran a barrier");
  }
  wm_status_free(again);
}

WM_TEST(
    ranks_calling_different_collectives_both_get_an_error_naming_the_other) {
  rank_job_t jobs[2];
  run_ranks(2, mismatch_rank, NULL, jobs);
  WM_CHECK(jobs[0].status && jobs[1].status);
  WM_CHECK(strstr(jobs[0].message, "rank 1 called Broadcast of 64 float32") ||
           strstr(jobs[0].message, "the communicator failed"));
  WM_CHECK(strstr(jobs[0].message, "ranks disagree") != NULL);
  WM_CHECK(strstr(jobs[1].message, "ranks disagree") != NULL);
  WM_CHECK(strstr(jobs[1].message, "communicator threads:") != NULL);
  free_jobs(jobs, 2);
}

static void leave_rank(rank_job_t *job, wm_comm_t *comm) {
  float buf[100000];
  if (job->mode == 1) {
    return;  // leaves at once: destroyed by the caller
  }
  if (job->mode == 2) {
    struct timespec ts = {2, 0};  // never calls within the timeout
    nanosleep(&ts, NULL);
    return;
  }
  wm_comm_fill(buf, 100000, 1, WM_COMM_SUM, job->rank, 0);
  job->status = wm_comm_all_reduce(comm, buf, buf, 100000, 1, WM_COMM_SUM);
}

WM_TEST(a_rank_that_leaves_fails_the_others_at_once_naming_it) {
  rank_job_t jobs[3];
  const int modes[3] = {0, 0, 1};
  run_ranks(3, leave_rank, modes, jobs);
  for (int r = 0; r < 2; r++) {
    WM_CHECK(jobs[r].status != NULL);
    WM_CHECK(strstr(jobs[r].message, "rank 2 left the communicator") ||
             strstr(jobs[r].message, "the communicator failed"));
    WM_CHECK(strstr(jobs[r].message, "AllReduce of 100000 float32 (sum)"));
    WM_CHECK(jobs[r].seconds < 5);
  }
  free_jobs(jobs, 3);
}

WM_TEST(a_rank_that_never_comes_times_out_on_every_survivor_naming_it) {
  setenv("WMAP_COMM_TIMEOUT", "0.3", 1);
  rank_job_t jobs[3];
  const int modes[3] = {0, 2, 0};
  run_ranks(3, leave_rank, modes, jobs);
  unsetenv("WMAP_COMM_TIMEOUT");
  for (int r = 0; r < 3; r += 2) {
    WM_CHECK(jobs[r].status != NULL);
    WM_CHECK(strstr(jobs[r].message, "for rank 1") ||
             strstr(jobs[r].message, "the communicator failed"));
    WM_CHECK(strstr(jobs[r].message, "WMAP_COMM_TIMEOUT") != NULL);
    WM_CHECK(jobs[r].seconds >= 0.25 && jobs[r].seconds < 1.9);
  }
  free_jobs(jobs, 3);
}

static wm_comm_t *abort_target;
static void *aborter(void *p) {
  (void)p;
  struct timespec ts = {0, 100000000};
  nanosleep(&ts, NULL);
  wm_comm_abort(abort_target);
  return NULL;
}

WM_TEST(abort_from_another_thread_ends_a_blocked_call) {
  char id[WM_COMM_ID_MAX];
  wm_comm_new_id(id);
  wm_comm_t *c = NULL;
  wm_status_t s = wm_comm_open(id, 0, 2, &c);  // rank 1 never joins
  WM_CHECK(s == NULL);
  abort_target = c;
  pthread_t th;
  pthread_create(&th, NULL, aborter, NULL);
  float x = 1;
  uint64_t t0 = wm_now_ns();
  s = wm_comm_all_reduce(c, &x, &x, 1, 1, WM_COMM_SUM);
  pthread_join(th, NULL);
  WM_CHECK(s != NULL);
  WM_CHECK(strstr(wm_status_message(s), "rank 0 aborted the communicator"));
  WM_CHECK((double)(wm_now_ns() - t0) * 1e-9 < 5);
  wm_status_free(s);
  wm_comm_destroy(c);
}

WM_TEST(bad_arguments_are_refused_with_the_values) {
  wm_comm_t *c = NULL;
  wm_status_t s = wm_comm_open("tcp:x", 0, 1, &c);
  WM_CHECK(s && strstr(wm_status_message(s), "\"tcp:x\""));
  wm_status_free(s);
  s = wm_comm_open("threads:k", 3, 2, &c);
  WM_CHECK(s && strstr(wm_status_message(s), "rank 3 of 2"));
  wm_status_free(s);
  char id[WM_COMM_ID_MAX];
  wm_comm_new_id(id);
  WM_CHECK(wm_comm_open(id, 0, 2, &c) == NULL);
  wm_comm_t *twice = NULL, *other = NULL;
  s = wm_comm_open(id, 0, 2, &twice);
  WM_CHECK(s && strstr(wm_status_message(s), "rank 0 joined twice"));
  wm_status_free(s);
  s = wm_comm_open(id, 1, 3, &other);
  WM_CHECK(s &&
           strstr(wm_status_message(s), "has 2 ranks; rank 1 asked for 3"));
  wm_status_free(s);
  int32_t v = 1;
  s = wm_comm_all_reduce(c, &v, &v, 1, 6, WM_COMM_AVG);
  WM_CHECK(s && strstr(wm_status_message(s), "does not apply to int32"));
  wm_status_free(s);
  s = wm_comm_all_reduce(c, &v, &v, 1, 8, WM_COMM_SUM);  // string
  WM_CHECK(s && strstr(wm_status_message(s), "dtype 8 is not carried"));
  wm_status_free(s);
  s = wm_comm_broadcast(c, &v, &v, 1, 6, 2);
  WM_CHECK(s && strstr(wm_status_message(s), "rank 2 is not a rank"));
  wm_status_free(s);
  s = wm_comm_send(c, &v, 1, 6, 0);
  WM_CHECK(s && strstr(wm_status_message(s), "rank 0 is not a peer"));
  wm_status_free(s);
  s = wm_comm_set_algo(c, WM_COMM_ALGO_RD);
  WM_CHECK(s && strstr(wm_status_message(s), "no \"rd\" algorithm"));
  wm_status_free(s);
  wm_comm_destroy(c);
}

WM_TEST(timeout_comes_from_the_environment_and_bad_values_fall_back) {
  setenv("WMAP_COMM_TIMEOUT", "2.5", 1);
  WM_CHECK_DBL_NEAR(wm_comm_timeout(), 2.5, 1e-12);
  setenv("WMAP_COMM_TIMEOUT", "soon", 1);
  WM_CHECK_DBL_NEAR(wm_comm_timeout(), 30, 1e-12);
  setenv("WMAP_COMM_TIMEOUT", "-1", 1);
  WM_CHECK_DBL_NEAR(wm_comm_timeout(), 30, 1e-12);
  unsetenv("WMAP_COMM_TIMEOUT");
  WM_CHECK_DBL_NEAR(wm_comm_timeout(), 30, 1e-12);
}

int main(void) {
  wm_log_set_level(WM_LOG_ERROR);
  static const wm_test_case_t cases[] = {
      WM_CASE(every_operation_dtype_reduction_size_and_algorithm_is_exact),
      WM_CASE(send_recv_pass_messages_around_a_ring_and_are_counted),
      WM_CASE(counters_give_calls_and_bytes_per_rank_as_nccl_tests_define_them),
      WM_CASE(
          ranks_calling_different_collectives_both_get_an_error_naming_the_other),
      WM_CASE(a_rank_that_leaves_fails_the_others_at_once_naming_it),
      WM_CASE(a_rank_that_never_comes_times_out_on_every_survivor_naming_it),
      WM_CASE(abort_from_another_thread_ends_a_blocked_call),
      WM_CASE(bad_arguments_are_refused_with_the_values),
      WM_CASE(timeout_comes_from_the_environment_and_bad_values_fall_back),
      {NULL, NULL}};
  return wm_test_main(cases);
}
