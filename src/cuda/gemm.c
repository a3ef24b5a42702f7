/*
 * gemm.c -- matrix products through cuBLASLt: D = epilogue(alpha * A B + beta * C + bias), row-major
 * views mapped onto cuBLASLt's column-major world by computing D^T = B^T A^T (so our B is cuBLASLt's
 * A). Batched products use one batch stride per operand (0 broadcasts). Bias, ReLU and GELU ride in
 * the epilogue; a residual rides in as C with beta = 1.
 *
 * The algorithm: cuBLASLt's heuristic proposes up to GEMM_CANDIDATES under the workspace limit, and
 * each is timed on the real buffers; the fastest wins. fp32 uses CUBLAS_COMPUTE_32F (no TF32); fp16
 * and bf16 accumulate in fp32.
 */
#include "cuda_internal.h"

#include <float.h>
#include <stdio.h>
#include <string.h>

#define GEMM_CANDIDATES 8
#define GEMM_TUNE_REPS  5

struct ig_cu_gemm_prep {
    cublasLtMatmulDesc_t op;
    cublasLtMatrixLayout_t la, lb, lc, ld; /* cuBLASLt's A (our B), B (our A), C, D */
    cublasLtMatmulPreference_t pref;
    int n_cand;
    cublasLtMatmulHeuristicResult_t cand[GEMM_CANDIDATES];
    cublasLtMatmulAlgo_t algo;
    size_t ws, ws_plan;
    char key[IG_CU_ALGO_KEY]; /* the problem, for the engine's algorithm table (algos.c) */
};

static cudaDataType_t cuda_type(ingot_dtype t)
{
    switch (t) {
    case INGOT_DTYPE_FLOAT16: return CUDA_R_16F;
    case INGOT_DTYPE_BFLOAT16: return CUDA_R_16BF;
    default: return CUDA_R_32F;
    }
}

/* cuBLASLt's own identity of the chosen algorithm: its id, tile and stages (what changes when the
 * workspace budget does), and the workspace it takes. */
void ig__cu_gemm_describe(const ig_cu_step *s, char *buf, size_t n)
{
    const struct ig_cu_gemm_prep *g = s->u.gemm.prep;
    if (!g) {
        snprintf(buf, n, "cuBLASLt (not prepared)");
        return;
    }
    int id = -1;
    uint32_t tile = 0, stages = 0;
    size_t got = 0;
    bool ok = cublasLtMatmulAlgoConfigGetAttribute(&g->algo, CUBLASLT_ALGO_CONFIG_ID, &id, sizeof id, &got) ==
                  CUBLAS_STATUS_SUCCESS &&
              cublasLtMatmulAlgoConfigGetAttribute(&g->algo, CUBLASLT_ALGO_CONFIG_TILE_ID, &tile, sizeof tile, &got) ==
                  CUBLAS_STATUS_SUCCESS &&
              cublasLtMatmulAlgoConfigGetAttribute(&g->algo, CUBLASLT_ALGO_CONFIG_STAGES_ID, &stages, sizeof stages,
                                                   &got) == CUBLAS_STATUS_SUCCESS;
    if (ok)
        snprintf(buf, n, "cuBLASLt algo %d tile %u stages %u, %.1f MB", id, (unsigned)tile, (unsigned)stages,
                 (double)g->ws / 1e6);
    else
        snprintf(buf, n, "cuBLASLt, %.1f MB", (double)g->ws / 1e6);
}

void ig__cu_gemm_release(ig_cu_step *s)
{
    struct ig_cu_gemm_prep *g = s->u.gemm.prep;
    if (!g) return;
    if (g->op) cublasLtMatmulDescDestroy(g->op);
    if (g->la) cublasLtMatrixLayoutDestroy(g->la);
    if (g->lb) cublasLtMatrixLayoutDestroy(g->lb);
    if (g->lc) cublasLtMatrixLayoutDestroy(g->lc);
    if (g->ld) cublasLtMatrixLayoutDestroy(g->ld);
    if (g->pref) cublasLtMatmulPreferenceDestroy(g->pref);
    ig__free(g);
    s->u.gemm.prep = NULL;
}

/* a choice: cuBLASLt's algorithm struct (serializable for the same library version, which the engine
 * file's fingerprint pins) and its workspace */
typedef struct gemm_choice {
    cublasLtMatmulAlgo_t algo;
    uint64_t ws;
} gemm_choice;

static uint32_t align_of(const ig_cu_prog *p, int32_t t)
{
    const ig_cu_tensor *x = &p->tensors[t];
    uint64_t off = (uint64_t)x->offset * ingot_dtype_size(x->dtype);
    uint32_t a = 256;
    while (a > 1 && off % a) a >>= 1;
    return a;
}

static cublasStatus_t layout(cublasLtMatrixLayout_t *l, cudaDataType_t t, int64_t rows, int64_t cols, int64_t ld,
                             int64_t batch, int64_t stride)
{
    cublasStatus_t s = cublasLtMatrixLayoutCreate(l, t, (uint64_t)rows, (uint64_t)cols, ld);
    if (s != CUBLAS_STATUS_SUCCESS) return s;
    if (batch > 1) {
        int32_t b = (int32_t)batch;
        s = cublasLtMatrixLayoutSetAttribute(*l, CUBLASLT_MATRIX_LAYOUT_BATCH_COUNT, &b, sizeof b);
        if (s != CUBLAS_STATUS_SUCCESS) return s;
        s = cublasLtMatrixLayoutSetAttribute(*l, CUBLASLT_MATRIX_LAYOUT_STRIDED_BATCH_OFFSET, &stride, sizeof stride);
    }
    return s;
}

ingot_status ig__cu_gemm_prepare(ig_cu_libs *L, const ig_cu_prog *p, ig_cu_step *s, size_t ws_limit, ig_cu_algos *algos,
                                 size_t *ws_bytes, const char *label, ig_err *err)
{
    ig_cu_gemm *gm = &s->u.gemm;
    ingot_status st;
    ig__cu_gemm_release(s);
    struct ig_cu_gemm_prep *g = ig__calloc(1, sizeof *g);
    if (!g) return ig__errf(err, INGOT_ERR_OUT_OF_MEMORY, "out of memory");
    gm->prep = g;
    ingot_dtype dt = p->tensors[gm->d].dtype;
    cudaDataType_t ct = cuda_type(dt);
    if ((st = IG_CUBLAS(err, label, cublasLtMatmulDescCreate(&g->op, CUBLAS_COMPUTE_32F, CUDA_R_32F))) != INGOT_OK)
        return st;
    cublasOperation_t ta = gm->b_trans ? CUBLAS_OP_T : CUBLAS_OP_N; /* cuBLASLt's A is our B */
    cublasOperation_t tb = gm->a_trans ? CUBLAS_OP_T : CUBLAS_OP_N;
    if ((st = IG_CUBLAS(err, label,
                        cublasLtMatmulDescSetAttribute(g->op, CUBLASLT_MATMUL_DESC_TRANSA, &ta, sizeof ta))) !=
        INGOT_OK)
        return st;
    if ((st = IG_CUBLAS(err, label,
                        cublasLtMatmulDescSetAttribute(g->op, CUBLASLT_MATMUL_DESC_TRANSB, &tb, sizeof tb))) !=
        INGOT_OK)
        return st;
    cublasLtEpilogue_t epi = CUBLASLT_EPILOGUE_DEFAULT;
    bool bias = gm->bias >= 0;
    if (gm->epi == IG_EPI_RELU)
        epi = bias ? CUBLASLT_EPILOGUE_RELU_BIAS : CUBLASLT_EPILOGUE_RELU;
    else if (gm->epi == IG_EPI_GELU)
        epi = bias ? CUBLASLT_EPILOGUE_GELU_BIAS : CUBLASLT_EPILOGUE_GELU;
    else if (bias)
        epi = CUBLASLT_EPILOGUE_BIAS;
    if ((st = IG_CUBLAS(err, label,
                        cublasLtMatmulDescSetAttribute(g->op, CUBLASLT_MATMUL_DESC_EPILOGUE, &epi, sizeof epi))) !=
        INGOT_OK)
        return st;
    /* col-major views: our B (k x n row-major) is n x k col-major; our A (m x k) is k x m; D is n x m */
    int64_t arows = gm->b_trans ? gm->k : gm->n, acols = gm->b_trans ? gm->n : gm->k;
    int64_t brows = gm->a_trans ? gm->m : gm->k, bcols = gm->a_trans ? gm->k : gm->m;
    if ((st = IG_CUBLAS(err, label, layout(&g->la, ct, arows, acols, gm->ldb, gm->batch, gm->sb))) != INGOT_OK)
        return st;
    if ((st = IG_CUBLAS(err, label, layout(&g->lb, ct, brows, bcols, gm->lda, gm->batch, gm->sa))) != INGOT_OK)
        return st;
    if ((st = IG_CUBLAS(err, label, layout(&g->lc, ct, gm->n, gm->m, gm->ldc, gm->batch, gm->sc))) != INGOT_OK)
        return st;
    if ((st = IG_CUBLAS(err, label, layout(&g->ld, ct, gm->n, gm->m, gm->ldd, gm->batch, gm->sd))) != INGOT_OK)
        return st;
    if ((st = IG_CUBLAS(err, label, cublasLtMatmulPreferenceCreate(&g->pref))) != INGOT_OK) return st;
    uint64_t lim = ws_limit;
    if ((st = IG_CUBLAS(err, label,
                        cublasLtMatmulPreferenceSetAttribute(g->pref, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, &lim,
                                                             sizeof lim))) != INGOT_OK)
        return st;
    uint32_t al[4] = {align_of(p, gm->b), align_of(p, gm->a), gm->c >= 0 ? align_of(p, gm->c) : align_of(p, gm->d),
                      align_of(p, gm->d)};
    static const cublasLtMatmulPreferenceAttributes_t align_attr[4] = {
        CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_A_BYTES, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_B_BYTES,
        CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_C_BYTES, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_D_BYTES};
    for (int i = 0; i < 4; i++)
        if ((st = IG_CUBLAS(err, label,
                            cublasLtMatmulPreferenceSetAttribute(g->pref, align_attr[i], &al[i], sizeof al[i]))) !=
            INGOT_OK)
            return st;
    int n = 0;
    cublasStatus_t hs =
        cublasLtMatmulAlgoGetHeuristic(L->lt, g->op, g->la, g->lb, g->lc, g->ld, g->pref, GEMM_CANDIDATES, g->cand, &n);
    if (hs != CUBLAS_STATUS_SUCCESS || n == 0)
        return ig__errf(err, INGOT_ERR_CUBLAS,
                        "node %s: cuBLASLt has no algorithm for %s %lld x %lld x %lld (batch "
                        "%lld, transA %d, transB %d, epilogue %d): %s",
                        label, ingot_dtype_name(dt), (long long)gm->m, (long long)gm->n, (long long)gm->k,
                        (long long)gm->batch, gm->a_trans, gm->b_trans, (int)epi,
                        hs == CUBLAS_STATUS_SUCCESS ? "no result" : "heuristic failed");
    g->n_cand = n;
    size_t ws = 0;
    for (int i = 0; i < n; i++)
        if (g->cand[i].state == CUBLAS_STATUS_SUCCESS && g->cand[i].workspaceSize > ws) ws = g->cand[i].workspaceSize;
    g->algo = g->cand[0].algo;
    g->ws = g->cand[0].workspaceSize;
    g->ws_plan = ws;
    *ws_bytes = ws;
    snprintf(
        g->key, sizeof g->key,
        "gemm %s m %lld n %lld k %lld batch %lld t %d,%d ld %lld,%lld,%lld,%lld s %lld,%lld,%lld,%lld epi %d bias %d "
        "c %d al %u,%u,%u,%u ws %zu",
        ingot_dtype_name(dt), (long long)gm->m, (long long)gm->n, (long long)gm->k, (long long)gm->batch, gm->a_trans,
        gm->b_trans, (long long)gm->lda, (long long)gm->ldb, (long long)gm->ldc, (long long)gm->ldd, (long long)gm->sa,
        (long long)gm->sb, (long long)gm->sc, (long long)gm->sd, (int)epi, bias, gm->c >= 0, al[0], al[1], al[2], al[3],
        ws);
    /* a choice the engine already holds: the step needs its workspace only (tuning checks it, and
     * times again within it if it does not hold), so a context with known choices is planned tight */
    gemm_choice k;
    if (algos && ig__cu_algos_get(algos, g->key, &k, sizeof k) == sizeof k && k.ws <= ws) {
        g->ws_plan = (size_t)k.ws;
        *ws_bytes = g->ws_plan;
    }
    return INGOT_OK;
}

const char *ig__cu_gemm_key(const ig_cu_step *s) { return s->u.gemm.prep ? s->u.gemm.prep->key : ""; }

size_t ig__cu_gemm_commit_ws(ig_cu_step *s)
{
    struct ig_cu_gemm_prep *g = s->u.gemm.prep;
    g->ws_plan = g->ws;
    return g->ws;
}

size_t ig__cu_gemm_choice(const ig_cu_step *s, void *out, size_t cap)
{
    const struct ig_cu_gemm_prep *g = s->u.gemm.prep;
    gemm_choice k;
    memset(&k, 0, sizeof k);
    k.algo = g->algo;
    k.ws = g->ws;
    if (cap < sizeof k) return 0;
    memcpy(out, &k, sizeof k);
    return sizeof k;
}

static cublasStatus_t gemm_call(ig_cu_libs *L, const ig_cu_step *s, const cublasLtMatmulAlgo_t *algo, void *const *ptrs,
                                void *ws, size_t ws_bytes, cudaStream_t stream)
{
    const ig_cu_gemm *gm = &s->u.gemm;
    struct ig_cu_gemm_prep *g = gm->prep;
    if (gm->bias >= 0) {
        const void *b = ptrs[gm->bias];
        cublasStatus_t r = cublasLtMatmulDescSetAttribute(g->op, CUBLASLT_MATMUL_DESC_BIAS_POINTER, &b, sizeof b);
        if (r != CUBLAS_STATUS_SUCCESS) return r;
    }
    const float alpha = gm->alpha, beta = gm->c >= 0 ? gm->beta : 0.f;
    const void *c = gm->c >= 0 ? ptrs[gm->c] : ptrs[gm->d];
    return cublasLtMatmul(L->lt, g->op, &alpha, ptrs[gm->b], g->la, ptrs[gm->a], g->lb, &beta, c, g->lc, ptrs[gm->d],
                          g->ld, algo, ws, ws_bytes, stream);
}

/* One call of a candidate, for ig__cu_time_calls. */
typedef struct gemm_timed {
    ig_cu_libs *L;
    const ig_cu_step *s;
    const cublasLtMatmulAlgo_t *algo;
    void *const *ptrs;
    void *ws;
    size_t ws_bytes;
} gemm_timed;

static bool gemm_timed_call(void *ctx, cudaStream_t stream)
{
    const gemm_timed *t = ctx;
    return gemm_call(t->L, t->s, t->algo, t->ptrs, t->ws, t->ws_bytes, stream) == CUBLAS_STATUS_SUCCESS;
}

ingot_status ig__cu_gemm_tune(ig_cu_libs *L, ig_cu_step *s, void *const *ptrs, void *ws, size_t ws_bytes,
                              cudaStream_t stream, const char *label, ig_err *err)
{
    struct ig_cu_gemm_prep *g = s->u.gemm.prep;
    ingot_status st = INGOT_OK;
    cudaEvent_t e0 = NULL, e1 = NULL;
    if ((st = IG_CU(err, label, cudaEventCreate(&e0))) != INGOT_OK) return st;
    if ((st = IG_CU(err, label, cudaEventCreate(&e1))) != INGOT_OK) goto out;
    float best = FLT_MAX;
    int best_i = -1;
    for (int i = 0; i < g->n_cand; i++) {
        if (g->cand[i].state != CUBLAS_STATUS_SUCCESS || g->cand[i].workspaceSize > ws_bytes) continue;
        if (gemm_call(L, s, &g->cand[i].algo, ptrs, ws, ws_bytes, stream) != CUBLAS_STATUS_SUCCESS) { /* warm-up */
            cudaGetLastError();
            continue;
        }
        gemm_timed t = {L, s, &g->cand[i].algo, ptrs, ws, ws_bytes};
        float ms = FLT_MAX;
        if ((st = ig__cu_time_calls(gemm_timed_call, &t, GEMM_TUNE_REPS, stream, e0, e1, &ms, label, err)) != INGOT_OK)
            goto out;
        if (ig__cu_tune_rank(i, ms) < best) { /* cand[0]: cuBLASLt's first */
            best = ig__cu_tune_rank(i, ms);
            best_i = i;
        }
    }
    if (best_i >= 0) {
        g->algo = g->cand[best_i].algo;
        g->ws = g->cand[best_i].workspaceSize;
    }
    st = IG_CUBLAS(err, label, gemm_call(L, s, &g->algo, ptrs, ws, ws_bytes, stream));
    if (st == INGOT_OK) st = IG_CU(err, label, cudaStreamSynchronize(stream));
out:
    if (e0) cudaEventDestroy(e0);
    if (e1) cudaEventDestroy(e1);
    return st;
}

ingot_status ig__cu_gemm_apply(ig_cu_libs *L, ig_cu_step *s, const void *choice, size_t n, void *const *ptrs, void *ws,
                               size_t ws_bytes, cudaStream_t stream, bool *used, const char *label, ig_err *err)
{
    struct ig_cu_gemm_prep *g = s->u.gemm.prep;
    *used = false;
    gemm_choice k;
    if (n != sizeof k) return INGOT_OK;
    memcpy(&k, choice, sizeof k);
    /* cuBLASLt checks the algorithm against this problem and says what workspace it needs */
    cublasLtMatmulHeuristicResult_t r;
    memset(&r, 0, sizeof r);
    if (cublasLtMatmulAlgoCheck(L->lt, g->op, g->la, g->lb, g->lc, g->ld, &k.algo, &r) != CUBLAS_STATUS_SUCCESS ||
        r.state != CUBLAS_STATUS_SUCCESS || r.workspaceSize > ws_bytes || r.workspaceSize > g->ws_plan)
        return INGOT_OK;
    if (gemm_call(L, s, &k.algo, ptrs, ws, ws_bytes, stream) != CUBLAS_STATUS_SUCCESS) {
        cudaGetLastError();
        return INGOT_OK;
    }
    g->algo = k.algo;
    g->ws = r.workspaceSize;
    *used = true;
    return IG_CU(err, label, cudaStreamSynchronize(stream));
}

ingot_status ig__cu_gemm_run(ig_cu_libs *L, const ig_cu_step *s, void *const *ptrs, void *ws, cudaStream_t stream,
                             const char *label, ig_err *err)
{
    const struct ig_cu_gemm_prep *g = s->u.gemm.prep;
    return IG_CUBLAS(err, label, gemm_call(L, s, &g->algo, ptrs, ws, g->ws_plan, stream));
}
