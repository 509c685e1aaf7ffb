// A fixed thread pool running parallel loops; the calling thread works too.
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

#include "wmap/base.h"

typedef struct pool_job {
  void (*fn)(void *ctx, size_t begin, size_t end);  // the loop body
  void *ctx;                                        // its argument
  size_t n;                                         // iterations
  size_t chunk;                                     // iterations per grab
  _Atomic size_t next;                              // next unclaimed index
} pool_job_t;

struct wm_pool {
  int32_t threads;      // workers + the caller
  pthread_t *workers;   // threads - 1 workers
  bool spin;            // wait by spinning first (no more threads than cores)
  pthread_mutex_t mu;   // guards the sleeping and the waking
  pthread_cond_t wake;  // a new job or shutdown
  pthread_cond_t idle;  // the last worker finished its share
  pool_job_t *_Atomic job;      // current job or NULL
  _Atomic uint64_t generation;  // bumps per job so workers run each once
  _Atomic int32_t busy;         // workers still inside the current job
  _Atomic int32_t sleepers;     // workers waiting on |wake|
  _Atomic bool caller_waits;    // the caller waits on |idle|
  _Atomic bool stop;            // shut down
};

// How long a thread spins for the next job or for the workers to finish
// before it sleeps: loops of a run follow each other within microseconds,
// and a futex wake-up costs tens of them.
enum { SPIN_NS = 200000 };

static uint64_t now_ns(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static inline void cpu_relax(void) {
#if defined(__x86_64__) || defined(__i386__)
  __builtin_ia32_pause();
#elif defined(__aarch64__)
  __asm__ __volatile__("yield");
#endif
}

// Spins while |done|(pool) is false, for up to SPIN_NS; true once it holds.
static bool spin_until(wm_pool_t *pool, bool (*done)(wm_pool_t *, uint64_t),
                       uint64_t arg) {
  if (!pool->spin) {
    return done(pool, arg);
  }
  uint64_t t0 = 0;
  for (uint32_t i = 0;; i++) {
    if (done(pool, arg)) {
      return true;
    }
    if ((i & 255) == 255) {
      uint64_t t = now_ns();
      if (t0 == 0) {
        t0 = t;
      } else if (t - t0 > SPIN_NS) {
        return false;
      }
    }
    cpu_relax();
  }
}

static bool job_posted(wm_pool_t *pool, uint64_t seen) {
  return atomic_load(&pool->stop) || atomic_load(&pool->generation) != seen;
}

static bool workers_done(wm_pool_t *pool, uint64_t unused) {
  (void)unused;
  return atomic_load(&pool->busy) == 0;
}

int32_t wm_cpu_count(void) {
  cpu_set_t set;
  if (sched_getaffinity(0, sizeof(set), &set) == 0) {
    int n = CPU_COUNT(&set);
    if (n > 0) {
      return n;
    }
  }
  long n = sysconf(_SC_NPROCESSORS_ONLN);
  return n > 0 ? (int32_t)n : 1;
}

static void run_chunks(pool_job_t *job) {
  for (;;) {
    size_t begin = atomic_fetch_add(&job->next, job->chunk);
    if (begin >= job->n) {
      return;
    }
    size_t end = begin + job->chunk < job->n ? begin + job->chunk : job->n;
    job->fn(job->ctx, begin, end);
  }
}

static void *worker_main(void *arg) {
  wm_pool_t *pool = arg;
  uint64_t seen = 0;
  for (;;) {
    if (!spin_until(pool, job_posted, seen)) {
      pthread_mutex_lock(&pool->mu);
      while (!job_posted(pool, seen)) {
        atomic_fetch_add(&pool->sleepers, 1);
        pthread_cond_wait(&pool->wake, &pool->mu);
        atomic_fetch_sub(&pool->sleepers, 1);
      }
      pthread_mutex_unlock(&pool->mu);
    }
    if (atomic_load(&pool->stop)) {
      break;
    }
    seen = atomic_load(&pool->generation);
    run_chunks(atomic_load(&pool->job));
    if (atomic_fetch_sub(&pool->busy, 1) == 1 &&
        atomic_load(&pool->caller_waits)) {
      pthread_mutex_lock(&pool->mu);
      pthread_cond_signal(&pool->idle);
      pthread_mutex_unlock(&pool->mu);
    }
  }
  return NULL;
}

wm_status_t wm_pool_create(int32_t threads, wm_pool_t **out) {
  *out = NULL;
  if (threads <= 0) {
    threads = wm_cpu_count();
  }
  if (threads > 1024) {
    return WM_ERROR(INVALID_ARGUMENT, "%d threads is more than 1024", threads);
  }
  wm_pool_t *pool = wm_calloc(1, sizeof(*pool));
  if (!pool) {
    return WM_ERROR(RESOURCE_EXHAUSTED, "out of memory creating a pool");
  }
  pool->threads = threads;
  pool->spin = threads <= wm_cpu_count();
  pthread_mutex_init(&pool->mu, NULL);
  pthread_cond_init(&pool->wake, NULL);
  pthread_cond_init(&pool->idle, NULL);
  pool->workers = wm_calloc((size_t)threads, sizeof(pthread_t));
  if (!pool->workers) {
    wm_pool_destroy(pool);
    return WM_ERROR(RESOURCE_EXHAUSTED, "out of memory creating a pool");
  }
  for (int32_t i = 0; i < threads - 1; i++) {
    if (pthread_create(&pool->workers[i], NULL, worker_main, pool) != 0) {
      pool->threads = i + 1;  // only the started ones are joined
      wm_pool_destroy(pool);
      return WM_ERROR(RESOURCE_EXHAUSTED, "cannot start thread %d of %d", i + 1,
                      threads);
    }
  }
  *out = pool;
  return NULL;
}

void wm_pool_destroy(wm_pool_t *pool) {
  if (!pool) {
    return;
  }
  pthread_mutex_lock(&pool->mu);
  atomic_store(&pool->stop, true);
  pthread_cond_broadcast(&pool->wake);
  pthread_mutex_unlock(&pool->mu);
  for (int32_t i = 0; pool->workers && i < pool->threads - 1; i++) {
    pthread_join(pool->workers[i], NULL);
  }
  pthread_cond_destroy(&pool->wake);
  pthread_cond_destroy(&pool->idle);
  pthread_mutex_destroy(&pool->mu);
  free(pool->workers);
  free(pool);
}

int32_t wm_pool_threads(const wm_pool_t *pool) {
  return pool ? pool->threads : 1;
}

void wm_pool_for(wm_pool_t *pool, size_t n, size_t grain,
                 void (*fn)(void *ctx, size_t begin, size_t end), void *ctx) {
  if (n == 0) {
    return;
  }
  if (grain == 0) {
    grain = 1;
  }
  int32_t threads = wm_pool_threads(pool);
  if (threads <= 1 || n <= grain) {
    fn(ctx, 0, n);
    return;
  }
  // About four chunks per thread balances load without much contention.
  size_t chunk = n / ((size_t)threads * 4);
  if (chunk < grain) {
    chunk = grain;
  }
  pool_job_t job = {.fn = fn, .ctx = ctx, .n = n, .chunk = chunk};
  atomic_init(&job.next, 0);
  // Published under the lock so that a worker going to sleep sees it.
  pthread_mutex_lock(&pool->mu);
  atomic_store(&pool->job, &job);
  atomic_store(&pool->busy, threads - 1);
  atomic_fetch_add(&pool->generation, 1);
  if (atomic_load(&pool->sleepers) > 0) {
    pthread_cond_broadcast(&pool->wake);
  }
  pthread_mutex_unlock(&pool->mu);
  run_chunks(&job);
  if (!spin_until(pool, workers_done, 0)) {
    pthread_mutex_lock(&pool->mu);
    atomic_store(&pool->caller_waits, true);
    while (atomic_load(&pool->busy) > 0) {
      pthread_cond_wait(&pool->idle, &pool->mu);
    }
    atomic_store(&pool->caller_waits, false);
    pthread_mutex_unlock(&pool->mu);
  }
  atomic_store(&pool->job, NULL);
}
