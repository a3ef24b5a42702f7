/*
 * pool.c -- a small fixed thread pool for the CPU kernels: ig__parallel_for splits [0, n) into one
 * contiguous chunk per thread; the caller's thread takes a chunk too and waits for the rest.
 * No allocation per call, so kernels may use it freely inside an inference.
 */
#include "../ops/op.h"

#include <pthread.h>

typedef struct ig_pool {
    int n_threads; /* including the caller */
    pthread_t *threads;
    pthread_mutex_t mu;
    pthread_cond_t work_cv, done_cv;
    uint64_t generation;
    int pending;
    bool quit;
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
    pthread_mutex_lock(&p->mu);
    for (;;) {
        while (!p->quit && p->generation == seen) pthread_cond_wait(&p->work_cv, &p->mu);
        if (p->quit) break;
        seen = p->generation;
        pthread_mutex_unlock(&p->mu);
        run_chunk(p, idx);
        pthread_mutex_lock(&p->mu);
        if (--p->pending == 0) pthread_cond_signal(&p->done_cv);
    }
    pthread_mutex_unlock(&p->mu);
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
    p->quit = true;
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
    if (parts <= 1) {
        fn(arg, 0, n);
        return;
    }
    pthread_mutex_lock(&p->mu);
    p->fn = fn;
    p->arg = arg;
    p->n = n;
    p->chunk = (n + p->n_threads - 1) / p->n_threads;
    if (p->chunk < grain) p->chunk = grain;
    p->pending = p->n_threads - 1;
    p->generation++;
    pthread_cond_broadcast(&p->work_cv);
    pthread_mutex_unlock(&p->mu);
    run_chunk(p, 0);
    pthread_mutex_lock(&p->mu);
    while (p->pending > 0) pthread_cond_wait(&p->done_cv, &p->mu);
    pthread_mutex_unlock(&p->mu);
}
