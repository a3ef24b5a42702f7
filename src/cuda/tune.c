/*
 * tune.c -- timing a library call's candidates (conv.c's cuDNN algorithms, gemm.c's cuBLASLt ones) the
 * way a context runs them: as a CUDA Graph replay.
 *
 * Timed on the stream, back-to-back calls measure the library's host work per call wherever it exceeds
 * the kernel, and that is most small problems: cuDNN's legacy calls at batch 1 spent 50-100 us each on
 * the host, so the stream timings ranked the algorithms by host cost, and the winners ran HRNet-W18-small
 * at batch 1 in 1.5-2.4 ms under graph replay where cuDNN's first heuristic choice took 0.51 ms
 * (GoogLeNet: 0.71 against 0.35; H200, 2026-12-02). In a graph the host work happens once, at capture.
 */
#include "cuda_internal.h"

#include <float.h>

ingot_status ig__cu_time_calls(ig_cu_call call, void *ctx, int reps, cudaStream_t s, cudaEvent_t e0, cudaEvent_t e1,
                               float *ms, const char *label, ig_err *err)
{
    *ms = FLT_MAX;
    cudaGraph_t g = NULL;
    cudaGraphExec_t x = NULL;
    bool ok = true;
    if (cudaStreamBeginCapture(s, cudaStreamCaptureModeThreadLocal) == cudaSuccess) {
        for (int r = 0; r < reps && ok; r++) ok = call(ctx, s);
        bool captured = cudaStreamEndCapture(s, &g) == cudaSuccess && g;
        if (!(ok && captured && cudaGraphInstantiate(&x, g, 0) == cudaSuccess)) x = NULL;
    }
    cudaGetLastError(); /* a refused capture or call is not a device fault: the candidate loses */
    ingot_status st = INGOT_OK;
    if (x) { /* one replay to load, one timed */
        if ((st = IG_CU(err, label, cudaGraphLaunch(x, s))) == INGOT_OK &&
            (st = IG_CU(err, label, cudaEventRecord(e0, s))) == INGOT_OK &&
            (st = IG_CU(err, label, cudaGraphLaunch(x, s))) == INGOT_OK)
            st = IG_CU(err, label, cudaEventRecord(e1, s));
    } else if (ok) { /* no graph for this call: timed as a graph-less run pays it, host work included */
        if ((st = IG_CU(err, label, cudaEventRecord(e0, s))) == INGOT_OK) {
            for (int r = 0; r < reps && ok; r++) ok = call(ctx, s);
            cudaGetLastError();
            st = IG_CU(err, label, cudaEventRecord(e1, s));
        }
    }
    if (st == INGOT_OK && ok) {
        float t = 0;
        if ((st = IG_CU(err, label, cudaEventSynchronize(e1))) == INGOT_OK &&
            (st = IG_CU(err, label, cudaEventElapsedTime(&t, e0, e1))) == INGOT_OK)
            *ms = t;
    }
    if (x) cudaGraphExecDestroy(x);
    if (g) cudaGraphDestroy(g);
    return st;
}

float ig__cu_tune_rank(int cand, float ms) { return cand == 0 && ms < FLT_MAX ? ms * IG_CU_TUNE_MARGIN : ms; }
