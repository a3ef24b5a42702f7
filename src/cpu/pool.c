/*
 * pool.c -- a small fixed thread pool for the CPU kernels: ig__parallel_for splits [0, n) into one
 * contiguous chunk per thread; the caller's thread takes a chunk too and waits for the rest.
 * No allocation per call, so kernels may use it freely inside an inference.
 *
 * One pool serves every context of an engine, and contexts run on threads of their own: a call that
 * finds the pool busy (another context's job, or a nested call from inside a chunk) runs its whole
 * range serially on its own thread instead of waiting. It never blocks on another caller, so neither
 * several callers nor nesting can deadlock, and the result is the same: kernels cut their work by
 * ig__pool_threads(), never by who happens to run a chunk.
 *
 * Hand-offs spin briefly before sleeping on a condition variable: a kernel calls the pool several
 * times per layer, and a wake-up through the kernel scheduler cost ~90 us per call on a 2-core VM,
 * more than many of the layers themselves.
 */
#include "../ops/op.h"

#include <pthread.h>
#include <stdatomic.h>

#define SPIN_ITERS 2000

static inline void cpu_relax(void)
{
#if defined(__x86_64__) || defined(__i386__)
    __builtin_ia32_pause();
#endif
}

typedef struct ig_pool {
    int n_threads; /* including the caller */
    pthread_t *threads;
    pthread_mutex_t mu;
    pthread_cond_t work_cv, done_cv;
    _Atomic uint64_t generation; /* bumped once per job */
    _Atomic int pending;         /* workers still running the current job */
    _Atomic bool quit;
    atomic_flag busy; /* held by the caller whose job the workers run; its job fields below are its own */
    int sleepers;     /* workers blocked on work_cv (under mu) */
    /* the current job */
    ig_range_fn fn;
    void *arg;
    int64_t n, chunk;
} ig_pool;

static void run_chunk(ig_pool *p, int idx)
{
    int64_t b = (int64_t)idx * p->chunk, e = b + p->chunk;
    if (e > p->n) e = p->n;
    if (b < e) p->fn(p->arg, b, e);
}

typedef struct worker_arg {
    ig_pool *pool;
    int idx;
} worker_arg;

static void *worker(void *varg)
{
    ig_pool *p = ((worker_arg *)varg)->pool;
    int idx = ((worker_arg *)varg)->idx;
    ig__free(varg);
    uint64_t seen = 0;
    for (;;) {
        uint64_t g;
        int spins = 0;
        while ((g = atomic_load_explicit(&p->generation, memory_order_acquire)) == seen &&
               !atomic_load_explicit(&p->quit, memory_order_acquire)) {
            if (++spins < SPIN_ITERS) {
                cpu_relax();
                continue;
            }
            pthread_mutex_lock(&p->mu);
            p->sleepers++;
            while (atomic_load(&p->generation) == seen && !atomic_load(&p->quit))
                pthread_cond_wait(&p->work_cv, &p->mu);
            p->sleepers--;
            pthread_mutex_unlock(&p->mu);
        }
        if (atomic_load_explicit(&p->quit, memory_order_acquire)) break;
        seen = g;
        run_chunk(p, idx);
        if (atomic_fetch_sub_explicit(&p->pending, 1, memory_order_acq_rel) == 1) {
            pthread_mutex_lock(&p->mu); /* the caller may be about to sleep: signal under the lock */
            pthread_cond_signal(&p->done_cv);
            pthread_mutex_unlock(&p->mu);
        }
    }
    return NULL;
}

ig_pool *ig__pool_create(int n_threads)
{
    if (n_threads <= 1) return NULL;
    ig_pool *p = ig__calloc(1, sizeof *p);
    if (!p) return NULL;
    p->threads = ig__calloc((size_t)n_threads, sizeof(pthread_t));
    if (!p->threads) {
        ig__free(p);
        return NULL;
    }
    pthread_mutex_init(&p->mu, NULL);
    pthread_cond_init(&p->work_cv, NULL);
    pthread_cond_init(&p->done_cv, NULL);
    atomic_flag_clear(&p->busy);
    p->n_threads = 1;
    for (int i = 1; i < n_threads; i++) {
        worker_arg *wa = ig__malloc(sizeof *wa);
        if (!wa) break;
        wa->pool = p;
        wa->idx = i;
        if (pthread_create(&p->threads[i], NULL, worker, wa) != 0) {
            ig__free(wa);
            break;
        }
        p->n_threads++;
    }
    return p;
}

void ig__pool_destroy(ig_pool *p)
{
    if (!p) return;
    pthread_mutex_lock(&p->mu);
    atomic_store(&p->quit, true);
    pthread_cond_broadcast(&p->work_cv);
    pthread_mutex_unlock(&p->mu);
    for (int i = 1; i < p->n_threads; i++) pthread_join(p->threads[i], NULL);
    pthread_mutex_destroy(&p->mu);
    pthread_cond_destroy(&p->work_cv);
    pthread_cond_destroy(&p->done_cv);
    ig__free(p->threads);
    ig__free(p);
}

int ig__pool_threads(const ig_pool *p) { return p ? p->n_threads : 1; }

void ig__parallel_for(ig_pool *p, int64_t n, int64_t grain, ig_range_fn fn, void *arg)
{
    if (n <= 0) return;
    if (grain < 1) grain = 1;
    int64_t parts = p ? p->n_threads : 1;
    if (parts > n / grain) parts = n / grain;
    /* acquire: the previous owner's reads of the job fields (and its workers') happen before our writes */
    if (parts <= 1 || atomic_flag_test_and_set_explicit(&p->busy, memory_order_acquire)) {
        fn(arg, 0, n);
        return;
    }
    p->fn = fn;
    p->arg = arg;
    p->n = n;
    p->chunk = (n + p->n_threads - 1) / p->n_threads;
    if (p->chunk < grain) p->chunk = grain;
    atomic_store_explicit(&p->pending, p->n_threads - 1, memory_order_relaxed);
    atomic_fetch_add_explicit(&p->generation, 1, memory_order_release); /* publishes the job */
    pthread_mutex_lock(&p->mu);
    if (p->sleepers) pthread_cond_broadcast(&p->work_cv);
    pthread_mutex_unlock(&p->mu);
    run_chunk(p, 0);
    for (int spins = 0; atomic_load_explicit(&p->pending, memory_order_acquire) > 0 && spins < SPIN_ITERS; spins++)
        cpu_relax();
    if (atomic_load_explicit(&p->pending, memory_order_acquire) > 0) {
        pthread_mutex_lock(&p->mu);
        while (atomic_load(&p->pending) > 0) pthread_cond_wait(&p->done_cv, &p->mu);
        pthread_mutex_unlock(&p->mu);
    }
    atomic_flag_clear_explicit(&p->busy, memory_order_release);
}
