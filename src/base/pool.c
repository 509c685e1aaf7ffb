// A fixed thread pool running parallel loops; the calling thread works too.
//
// A loop is published in the pool itself under a generation number (odd
// while the caller rewrites it, even once published); a worker joins it
// by counting itself active and checking the generation again, then takes
// chunks until none are left. The caller takes chunks as well and waits
// only for the iterations still running: a worker that never gets a core
// (another process holds it) costs the loop nothing, and one that joins
// late finds no chunk and leaves. Threads spin briefly for the next loop
// or for the last chunks before they sleep on a condition variable.
//
// Each thread has a home share of every loop: thread t (the caller is 0)
// takes the chunks of [t n / T, (t + 1) n / T) first, in order, then helps
// with the others' shares. So when loops over the same data follow each
// other, each thread works mostly on what it wrote itself: memory written
// by one core reads three times slower on another (42 against 120-130
// GB/s here), which matters to loops that stream their data.
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

#include "wmap/base.h"

// A thread's home share of the current loop, on a cache line of its own.
struct share {
  _Alignas(64) _Atomic size_t next;  // next unclaimed iteration
  size_t end;                        // end of the share
};

// What a worker thread is started with.
struct worker_arg {
  struct wm_pool *pool;
  int32_t index;  // 1 .. threads - 1 (the caller is 0)
};

struct wm_pool {
  int32_t threads;          // workers + the caller
  pthread_t *workers;       // threads - 1 workers
  struct worker_arg *args;  // theirs
  bool spin;            // wait by spinning first (no more threads than cores)
  pthread_mutex_t mu;   // guards the sleeping and the waking
  pthread_cond_t wake;  // a new loop or shutdown
  pthread_cond_t idle;  // the loop's last iteration finished
  // The current loop; rewritten only while |generation| is odd and no
  // worker is active.
  void (*fn)(void *ctx, size_t begin, size_t end);
  void *ctx;
  size_t n, chunk;
  struct share *shares;         // per thread: its home share of the loop
  _Atomic size_t done;          // iterations finished
  _Atomic uint64_t generation;  // even: published; odd: being rewritten
  _Atomic int32_t active;       // workers inside the current loop
  _Atomic int32_t sleepers;     // workers waiting on |wake|
  _Atomic bool caller_waits;    // the caller waits on |idle|
  _Atomic bool stop;            // shut down
};

// How long a thread spins for the next loop or for the last iterations
// before it sleeps: loops of a run follow each other within microseconds,
// and a futex wake-up costs tens of them.
enum { SPIN_NS = 200000 };

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

// Spins while |done|(pool, arg) is false, for up to SPIN_NS; true once it
// holds.
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

// A loop newer than generation |seen| is published, or the pool stops.
static bool loop_posted(wm_pool_t *pool, uint64_t seen) {
  uint64_t g = atomic_load(&pool->generation);
  return atomic_load(&pool->stop) || (g != seen && !(g & 1));
}

static bool loop_done(wm_pool_t *pool, uint64_t unused) {
  (void)unused;
  return atomic_load(&pool->done) == pool->n;
}

static bool none_active(wm_pool_t *pool, uint64_t unused) {
  (void)unused;
  return atomic_load(&pool->active) == 0;
}

// Takes chunks of the current loop until none are left: those of thread
// |self|'s share, then of the next threads' shares.
static void run_chunks(wm_pool_t *pool, int32_t self) {
  for (int32_t q = 0; q < pool->threads; q++) {
    struct share *sh = &pool->shares[(self + q) % pool->threads];
    for (;;) {
      size_t begin = atomic_fetch_add(&sh->next, pool->chunk);
      if (begin >= sh->end) {
        break;
      }
      size_t end =
          begin + pool->chunk < sh->end ? begin + pool->chunk : sh->end;
      pool->fn(pool->ctx, begin, end);
      if (atomic_fetch_add(&pool->done, end - begin) + (end - begin) ==
              pool->n &&
          atomic_load(&pool->caller_waits)) {
        pthread_mutex_lock(&pool->mu);
        pthread_cond_signal(&pool->idle);
        pthread_mutex_unlock(&pool->mu);
      }
    }
  }
}

static void *worker_main(void *arg) {
  wm_pool_t *pool = ((struct worker_arg *)arg)->pool;
  const int32_t self = ((struct worker_arg *)arg)->index;
  uint64_t seen = 0;
  for (;;) {
    if (!spin_until(pool, loop_posted, seen)) {
      pthread_mutex_lock(&pool->mu);
      while (!loop_posted(pool, seen)) {
        atomic_fetch_add(&pool->sleepers, 1);
        pthread_cond_wait(&pool->wake, &pool->mu);
        atomic_fetch_sub(&pool->sleepers, 1);
      }
      pthread_mutex_unlock(&pool->mu);
    }
    if (atomic_load(&pool->stop)) {
      break;
    }
    uint64_t g = atomic_load(&pool->generation);
    if (g & 1) {
      continue;  // being rewritten: wait for it
    }
    seen = g;
    // Join: the caller does not rewrite the loop while a worker is
    // active, and once the generation moved on this one is not ours.
    atomic_fetch_add(&pool->active, 1);
    if (atomic_load(&pool->generation) == g) {
      run_chunks(pool, self);
    }
    atomic_fetch_sub(&pool->active, 1);
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
  pool->args = wm_calloc((size_t)threads, sizeof(struct worker_arg));
  pool->shares = aligned_alloc(64, (size_t)threads * sizeof(struct share));
  if (!pool->workers || !pool->args || !pool->shares) {
    pool->threads = 1;  // none started
    wm_pool_destroy(pool);
    return WM_ERROR(RESOURCE_EXHAUSTED, "out of memory creating a pool");
  }
  for (int32_t i = 0; i < threads; i++) {
    atomic_init(&pool->shares[i].next, 0);
    pool->shares[i].end = 0;
  }
  for (int32_t i = 0; i < threads - 1; i++) {
    pool->args[i] = (struct worker_arg){pool, i + 1};
    if (pthread_create(&pool->workers[i], NULL, worker_main, &pool->args[i]) !=
        0) {
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
  free(pool->args);
  free(pool->shares);
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
  // Odd: workers stay out while the loop is rewritten; the ones still
  // inside the last loop (late, finding no chunk) leave first.
  atomic_fetch_add(&pool->generation, 1);
  if (!spin_until(pool, none_active, 0)) {
    while (!none_active(pool, 0)) {
      sched_yield();
    }
  }
  pool->fn = fn;
  pool->ctx = ctx;
  pool->n = n;
  pool->chunk = chunk;
  for (int32_t t = 0; t < threads; t++) {
    atomic_store(&pool->shares[t].next, n * (size_t)t / (size_t)threads);
    pool->shares[t].end = n * (size_t)(t + 1) / (size_t)threads;
  }
  atomic_store(&pool->done, 0);
  // Published under the lock so that a worker going to sleep sees it.
  pthread_mutex_lock(&pool->mu);
  atomic_fetch_add(&pool->generation, 1);
  if (atomic_load(&pool->sleepers) > 0) {
    pthread_cond_broadcast(&pool->wake);
  }
  pthread_mutex_unlock(&pool->mu);
  run_chunks(pool, 0);
  if (!spin_until(pool, loop_done, 0)) {
    pthread_mutex_lock(&pool->mu);
    atomic_store(&pool->caller_waits, true);
    while (!loop_done(pool, 0)) {
      pthread_cond_wait(&pool->idle, &pool->mu);
    }
    atomic_store(&pool->caller_waits, false);
    pthread_mutex_unlock(&pool->mu);
  }
}
