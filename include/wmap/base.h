// wmap base: status objects, checked size arithmetic, an arena, a string
// map, a growable string buffer and logging. Everything here is plain C11.
// Thread-safety: statuses, arenas, maps and buffers are not thread-safe;
// logging is.
#ifndef WMAP_BASE_H_
#define WMAP_BASE_H_

#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define WM_MUST_USE_RESULT __attribute__((warn_unused_result))
#define WM_PRINTF(f, a) __attribute__((format(printf, f, a)))
// The functions declared between WM_API_BEGIN and WM_API_END are libwmap's
// public interface: exported from libwmap.so (everything else is built
// hidden).
#define WM_API_BEGIN _Pragma("GCC visibility push(default)")
#define WM_API_END _Pragma("GCC visibility pop")

WM_API_BEGIN

// ---------------------------------------------------------------- status

// Canonical error codes; numbered because they reach files and plugins.
typedef enum wm_status_code {
  WM_STATUS_OK = 0,
  WM_STATUS_INVALID_ARGUMENT = 1,
  WM_STATUS_NOT_FOUND = 2,
  WM_STATUS_OUT_OF_RANGE = 3,
  WM_STATUS_UNIMPLEMENTED = 4,
  WM_STATUS_RESOURCE_EXHAUSTED = 5,
  WM_STATUS_FAILED_PRECONDITION = 6,
  WM_STATUS_INCOMPATIBLE = 7,
  WM_STATUS_UNAVAILABLE = 8,
  WM_STATUS_DATA_LOSS = 9,
  WM_STATUS_INTERNAL = 10,
  WM_STATUS_CANCELLED = 11,
} wm_status_code_t;

// A status: NULL means OK; otherwise a heap object the receiver must free
// (or pass on). It holds a code, the file:line where it was made and a
// message to which each layer prepends its context.
typedef struct wm_status *wm_status_t;

// Makes a status with a printf-style message (lowercase, no final period).
wm_status_t wm_status_make(wm_status_code_t code, const char *file, int line,
                           const char *fmt, ...) WM_PRINTF(4, 5);
// Like wm_status_make with a va_list.
wm_status_t wm_status_makev(wm_status_code_t code, const char *file, int line,
                            const char *fmt, va_list ap);
#define WM_ERROR(code, ...) \
  wm_status_make(WM_STATUS_##code, __FILE__, __LINE__, __VA_ARGS__)

// Prepends "context: " to the message of |status|; returns |status|
// (NULL stays NULL).
wm_status_t wm_status_annotate(wm_status_t status, const char *fmt, ...)
    WM_PRINTF(2, 3);
// Returns the code of |status| (WM_STATUS_OK for NULL).
wm_status_code_t wm_status_code(wm_status_t status);
// Returns the message of |status| ("ok" for NULL); borrowed.
const char *wm_status_message(wm_status_t status);
// Returns the file:line where |status| was made ("" for NULL); borrowed.
const char *wm_status_origin(wm_status_t status);
// Returns the canonical name of |code|, e.g. "INVALID_ARGUMENT".
const char *wm_status_code_name(wm_status_code_t code);
// Frees |status|; accepts NULL.
void wm_status_free(wm_status_t status);

#define WM_RETURN_IF_ERROR(expr)    \
  do {                              \
    wm_status_t wm_rie_s_ = (expr); \
    if (wm_rie_s_) {                \
      return wm_rie_s_;             \
    }                               \
  } while (0)

// Programmer errors only; untrusted input always gets a status.
#define WM_ASSERT(cond)                          \
  do {                                           \
    if (!(cond)) {                               \
      wm_assert_fail(#cond, __FILE__, __LINE__); \
    }                                            \
  } while (0)
_Noreturn void wm_assert_fail(const char *cond, const char *file, int line);

// -------------------------------------------------------- checked maths

// Sets *out = a + b; returns false on overflow.
static inline bool wm_checked_add(size_t a, size_t b, size_t *out) {
  return !__builtin_add_overflow(a, b, out);
}
// Sets *out = a * b; returns false on overflow.
static inline bool wm_checked_mul(size_t a, size_t b, size_t *out) {
  return !__builtin_mul_overflow(a, b, out);
}
// Sets *out = a * b for signed 64-bit values; returns false on overflow.
static inline bool wm_checked_mul_i64(int64_t a, int64_t b, int64_t *out) {
  return !__builtin_mul_overflow(a, b, out);
}

// Allocation wrappers that return NULL on failure (or size overflow).
void *wm_malloc(size_t size);
void *wm_calloc(size_t count, size_t size);
void *wm_realloc(void *ptr, size_t size);
// Grows *items (of *cap elements of |elem| bytes) to hold at least |need|.
wm_status_t wm_grow(void **items, size_t *cap, size_t need,
                    size_t elem) WM_MUST_USE_RESULT;
// Returns a heap copy of |s| (NULL on failure).
char *wm_strdup(const char *s);
// Returns a heap copy of the |n| bytes at |s| plus a NUL (NULL on failure).
char *wm_strndup(const char *s, size_t n);

// Fault injection for tests: the |n|-th allocation from now (1-based)
// fails; 0 turns it off.
void wm_alloc_fail_after(int64_t n);

// ---------------------------------------------------------------- arena

// A bump allocator: allocations live until wm_arena_deinit.
typedef struct wm_arena {
  struct wm_arena_block *head;  // newest block
} wm_arena_t;

// Initializes an empty arena in caller storage.
void wm_arena_init(wm_arena_t *arena);
// Frees every block of |arena|.
void wm_arena_deinit(wm_arena_t *arena);
// Returns |size| zeroed bytes aligned to 16, or NULL when out of memory.
void *wm_arena_alloc(wm_arena_t *arena, size_t size);
// Returns a copy of |s| in |arena| (NULL stays NULL).
char *wm_arena_strdup(wm_arena_t *arena, const char *s);
// Returns a copy of |n| bytes at |s| plus a NUL in |arena|.
char *wm_arena_strndup(wm_arena_t *arena, const char *s, size_t n);

// ------------------------------------------------------------ string map

// Open-addressing map from borrowed NUL-terminated keys to int64 values.
typedef struct wm_strmap {
  const char **keys;  // NULL = empty slot
  int64_t *values;    // value per slot
  size_t cap;         // power of two
  size_t count;       // keys present
} wm_strmap_t;

// Initializes an empty map.
void wm_strmap_init(wm_strmap_t *map);
// Frees the map's tables (not the keys).
void wm_strmap_deinit(wm_strmap_t *map);
// Sets |key| to |value|; the key must outlive the map.
wm_status_t wm_strmap_put(wm_strmap_t *map, const char *key,
                          int64_t value) WM_MUST_USE_RESULT;
// Returns true and sets *out_value if |key| is present.
bool wm_strmap_get(const wm_strmap_t *map, const char *key, int64_t *out_value);

// ------------------------------------------------------------- sha256

// SHA-256 of |len| bytes as 64 hex digits plus NUL in |hex|.
void wm_sha256_hex(const void *data, size_t len, char hex[65]);
// The same over data given in pieces: init, update per piece, final.
typedef struct wm_sha256 {
  uint32_t h[8];
  uint64_t len;  // bytes so far
  uint8_t buf[64];
  size_t fill;  // bytes of buf in use
} wm_sha256_t;
void wm_sha256_init(wm_sha256_t *c);
void wm_sha256_update(wm_sha256_t *c, const void *data, size_t len);
void wm_sha256_final(wm_sha256_t *c, char hex[65]);

// ------------------------------------------------------------- strbuf

// A growable NUL-terminated string.
typedef struct wm_strbuf {
  char *data;   // NUL-terminated; NULL until the first append
  size_t len;   // bytes before the NUL
  size_t cap;   // bytes allocated
  bool failed;  // an append ran out of memory
} wm_strbuf_t;

// Initializes an empty buffer.
void wm_strbuf_init(wm_strbuf_t *buf);
// Frees the buffer's storage.
void wm_strbuf_deinit(wm_strbuf_t *buf);
// Appends printf-style text.
void wm_strbuf_printf(wm_strbuf_t *buf, const char *fmt, ...) WM_PRINTF(2, 3);
// Appends |n| bytes.
void wm_strbuf_append(wm_strbuf_t *buf, const char *s, size_t n);
// Appends |s| as a JSON string literal (quoted and escaped).
void wm_strbuf_json_string(wm_strbuf_t *buf, const char *s);
// Returns the text ("" when empty); borrowed.
const char *wm_strbuf_str(const wm_strbuf_t *buf);

// ------------------------------------------------------------- logging

typedef enum wm_log_level {
  WM_LOG_ERROR = 0,
  WM_LOG_WARN = 1,
  WM_LOG_INFO = 2,
  WM_LOG_DEBUG = 3,
} wm_log_level_t;

// Sets the most verbose level printed to stderr (default WM_LOG_WARN).
void wm_log_set_level(wm_log_level_t level);
// Writes one line to stderr if |level| is enabled.
void wm_log(wm_log_level_t level, const char *fmt, ...) WM_PRINTF(2, 3);

// --------------------------------------------------------- thread pool

// A fixed pool of threads for parallel loops. One loop runs at a time per
// pool: wm_pool_for is not reentrant and not thread-safe on one pool.
typedef struct wm_pool wm_pool_t;

// Returns the number of cores this process may run on.
int32_t wm_cpu_count(void);
// Copies the value of the first /proc/cpuinfo line whose key is |key|
// ("model name", "flags", "cpu MHz"), without blanks around it, into |out|
// (truncated to |cap|); false when the file or the key is missing.
bool wm_cpuinfo_get(const char *key, char *out, size_t cap);
// Creates a pool of |threads| threads in all, the caller of wm_pool_for
// included (<= 0: wm_cpu_count()).
wm_status_t wm_pool_create(int32_t threads,
                           wm_pool_t **out_pool) WM_MUST_USE_RESULT;
// Stops and frees the pool; accepts NULL.
void wm_pool_destroy(wm_pool_t *pool);
// Returns the pool's thread count (1 for NULL).
int32_t wm_pool_threads(const wm_pool_t *pool);
// Runs fn(ctx, begin, end) over disjoint ranges covering [0, n), each at
// least |grain| long (but the last), on the pool's threads and the caller;
// returns when all are done. A NULL pool runs fn(ctx, 0, n) inline. Thread
// t of T (the caller is 0) takes the ranges of [t n / T, (t + 1) n / T)
// first, then helps with the others', so loops over the same data in the
// same order keep each part of it on the same core.
void wm_pool_for(wm_pool_t *pool, size_t n, size_t grain,
                 void (*fn)(void *ctx, size_t begin, size_t end), void *ctx);

// --------------------------------------------------------------- files

// The most a file read whole may hold by default: protobuf's 2 GiB limit
// on one message (models and test tensors), the largest any reader takes.
#define WM_FILE_MAX_BYTES ((size_t)2147483647)
// Reads the whole regular file |path| of at most |max_bytes| into a heap
// buffer; *out_data must be freed. Anything else (a directory, a FIFO, a
// device such as /dev/zero) is refused at once, naming the path and what
// it is, and so is a file over the cap (naming both sizes). Every reader
// of whole files goes through here.
wm_status_t wm_file_read_capped(const char *path, size_t max_bytes,
                                uint8_t **out_data,
                                size_t *out_size) WM_MUST_USE_RESULT;
// wm_file_read_capped() with the cap WM_FILE_MAX_BYTES.
wm_status_t wm_file_read(const char *path, uint8_t **out_data,
                         size_t *out_size) WM_MUST_USE_RESULT;
// Writes |size| bytes to |path|, replacing it.
wm_status_t wm_file_write(const char *path, const void *data,
                          size_t size) WM_MUST_USE_RESULT;
// Creates the folders leading to |path| (mkdir -p of its folder part).
wm_status_t wm_make_parents(const char *path) WM_MUST_USE_RESULT;
// wmap's cache folder: |dir| when given (non-empty), else
// $XDG_CACHE_HOME/wmap or ~/.cache/wmap; *out_path (heap) is it followed
// by "/|sub|" when |sub| is not NULL. Creates nothing.
wm_status_t wm_cache_folder(const char *dir, const char *sub,
                            char **out_path) WM_MUST_USE_RESULT;

// ---------------------------------------------------------- C compiler

// A shared object built from C source and loaded.
typedef struct wm_cc_lib wm_cc_lib_t;

// Builds C |source| with the system compiler ($WMAP_CC, else cc; -O2
// -march=native -fPIC -shared) into `<cache>/<key>.so`, where |cache_dir|
// is the cache folder (NULL: wm_cache_folder's, under "gen") and key the
// SHA-256 of the source, the compiler's command and its --version, and the
// machine's CPU flags; loads it with dlopen. An object already there is
// loaded without compiling (*out_compiled false; may be NULL). A failing
// compile is an error quoting the compiler's first lines. Thread-safe:
// objects are written under a temporary name and renamed into place.
wm_status_t wm_cc_build(const char *source, const char *cache_dir,
                        wm_cc_lib_t **out_lib,
                        bool *out_compiled) WM_MUST_USE_RESULT;
// The address of symbol |name| in |lib|, or NULL.
void *wm_cc_symbol(const wm_cc_lib_t *lib, const char *name);
// Whether the system compiler wm_cc_build uses runs.
bool wm_cc_available(void);
// Unloads |lib|; accepts NULL.
void wm_cc_close(wm_cc_lib_t *lib);

// Returns a monotonic time in nanoseconds.
uint64_t wm_now_ns(void);

// Returns libwmap's version, "MAJOR.MINOR.PATCH".
const char *wm_version(void);

WM_API_END

#ifdef __cplusplus
}
#endif

#endif  // WMAP_BASE_H_
