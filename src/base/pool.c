// A fixed thread pool running parallel loops; the calling thread works too.
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdlib.h>
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
  pthread_mutex_t mu;   // guards everything below
  pthread_cond_t wake;  // a new job or shutdown
  pthread_cond_t idle;  // a worker finished its share
  pool_job_t *job;      // current job or NULL
  uint64_t generation;  // bumps per job so workers run each once
  int32_t busy;         // workers still inside the current job
  bool stop;            // shut down
};

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
  pthread_mutex_lock(&pool->mu);
  for (;;) {
    while (!pool->stop && pool->generation == seen) {
      pthread_cond_wait(&pool->wake, &pool->mu);
    }
    if (pool->stop) {
      break;
    }
    seen = pool->generation;
    pool_job_t *job = pool->job;
    pthread_mutex_unlock(&pool->mu);
    run_chunks(job);
    pthread_mutex_lock(&pool->mu);
    if (--pool->busy == 0) {
      pthread_cond_signal(&pool->idle);
    }
  }
  pthread_mutex_unlock(&pool->mu);
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
  pool->stop = true;
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
  pthread_mutex_lock(&pool->mu);
  pool->job = &job;
  pool->busy = threads - 1;
  pool->generation++;
  pthread_cond_broadcast(&pool->wake);
  pthread_mutex_unlock(&pool->mu);
  run_chunks(&job);
  pthread_mutex_lock(&pool->mu);
  while (pool->busy > 0) {
    pthread_cond_wait(&pool->idle, &pool->mu);
  }
  pool->job = NULL;
  pthread_mutex_unlock(&pool->mu);
}
