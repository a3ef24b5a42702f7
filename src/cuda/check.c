/*
 * check.c -- one converter per library (CUDA runtime, cuDNN, cuBLASLt): a library code becomes an
 * ingot_status and a message naming the node, the call and where it was made, e.g.
 *   node 'conv_12' (Conv): cudnnConvolutionForward(...): CUDNN_STATUS_BAD_PARAM: ... (src/cuda/conv.c:214)
 * Sticky faults (an illegal address, a kernel trap) leave the CUDA context unusable: they map to
 * INGOT_ERR_DEVICE_FATAL so callers mark their context failed.
 *
 * The converters see every checked status, so they are also where fault injection (fault.h) turns the
 * Nth successful call into a failure, after the call: only calls whose success leaves nothing a failure
 * would not (fault_site below) count as sites.
 */
#include "cuda_internal.h"
#include "fault.h"

#include <stdio.h>

bool ig__cu_is_sticky(cudaError_t e)
{
    switch (e) {
    case cudaErrorIllegalAddress:
    case cudaErrorLaunchFailure:
    case cudaErrorAssert:
    case cudaErrorHardwareStackError:
    case cudaErrorIllegalInstruction:
    case cudaErrorMisalignedAddress:
    case cudaErrorInvalidAddressSpace:
    case cudaErrorInvalidPc:
    case cudaErrorLaunchTimeout:
    case cudaErrorECCUncorrectable:
    case cudaErrorUnknown: return true;
    default: return false;
    }
}

/* The call text without its arguments, to keep messages readable: "cudaMalloc(&p, n)" -> "cudaMalloc". */
static void call_name(const char *call, char *buf, size_t n)
{
    size_t i = 0;
    for (; call[i] && call[i] != '(' && i + 1 < n; i++) buf[i] = call[i];
    buf[i] = '\0';
}

static const char *short_file(const char *file)
{
    const char *s = strstr(file, "src/");
    return s ? s : file;
}

/* Whether a call that succeeded may be failed after the fact: not one that creates an object through an
 * out-parameter or starts a stream capture (a faked failure would leave the object, or the capture, that a
 * real failure never makes), not ig__cu_malloc (an allocation site of its own, failed before the call),
 * and not a status held in a variable (the call text is then a name, "e", saying nothing of the call). */
static bool fault_site(const char *call, const char *name)
{
    if (!strchr(call, '(') || !strncmp(name, "ig__cu_", 7)) return false;
    static const char *const creates[] = {"Create", "Malloc", "Alloc", "Instantiate", "BeginCapture"};
    for (size_t i = 0; i < sizeof creates / sizeof creates[0]; i++)
        if (strstr(name, creates[i])) return false;
    return true;
}

/* An injected failure for a call that succeeded (IG_FAULT_NONE: none); its label in tag. */
static int fault_after(int kind, const char *call, const char *name, const char *file, int line, char *tag, size_t n)
{
    if (!ig__cu_fault_armed() || !fault_site(call, name)) return IG_FAULT_NONE;
    int64_t index = 0;
    int f = ig__cu_fault_site(kind, name, file, line, &index);
    if (f != IG_FAULT_NONE)
        snprintf(tag, n, " [injected fault: %s #%lld]", ig__fault_kind_name(kind), (long long)index);
    return f;
}

ingot_status ig__cu_status(ig_err *err, cudaError_t e, const char *call, const char *node, const char *file, int line)
{
    char tag[64] = "";
    if (e == cudaSuccess) {
        if (!ig__cu_fault_armed()) return INGOT_OK;
        char nm[96];
        call_name(call, nm, sizeof nm);
        int f = fault_after(IG_FAULT_CALL, call, nm, file, line, tag, sizeof tag);
        if (f == IG_FAULT_NONE) return INGOT_OK;
        e = ig__cu_fault_cuda_error(f, IG_FAULT_CALL);
    }
    ingot_status st = INGOT_ERR_CUDA;
    if (ig__cu_is_sticky(e))
        st = INGOT_ERR_DEVICE_FATAL;
    else if (e == cudaErrorMemoryAllocation)
        st = INGOT_ERR_DEVICE_OOM;
    else if (e == cudaErrorNoDevice || e == cudaErrorInsufficientDriver || e == cudaErrorInitializationError ||
             e == cudaErrorDevicesUnavailable || e == cudaErrorSystemDriverMismatch ||
             e == cudaErrorCompatNotSupportedOnDevice)
        st = INGOT_ERR_NO_DEVICE;
    char name[96];
    call_name(call, name, sizeof name);
    return ig__errf(err, st, "%s%s%s%s: %s: %s (%s:%d)%s", node ? "node " : "", node ? node : "", node ? ": " : "",
                    name, cudaGetErrorName(e), cudaGetErrorString(e), short_file(file), line, tag);
}

ingot_status ig__cudnn_status(ig_err *err, cudnnStatus_t s, const char *call, const char *node, const char *file,
                              int line)
{
    char name[96], last[256] = "", tag[64] = "";
    if (s == CUDNN_STATUS_SUCCESS) {
        if (!ig__cu_fault_armed()) return INGOT_OK;
        call_name(call, name, sizeof name);
        int f = fault_after(IG_FAULT_LIB, call, name, file, line, tag, sizeof tag);
        if (f == IG_FAULT_NONE) return INGOT_OK;
        s = f == IG_FAULT_OOM     ? CUDNN_STATUS_INTERNAL_ERROR_DEVICE_ALLOCATION_FAILED
            : f == IG_FAULT_FATAL ? CUDNN_STATUS_EXECUTION_FAILED
                                  : CUDNN_STATUS_INTERNAL_ERROR;
    } else {
        cudnnGetLastErrorString(last, sizeof last); /* not for an injected failure: it would be stale */
    }
    ingot_status st = INGOT_ERR_CUDNN;
    /* cuDNN 9 codes are category (thousands) + detail: every execution failure is a device fault */
    if (s == CUDNN_STATUS_ALLOC_FAILED || s == CUDNN_STATUS_INTERNAL_ERROR_DEVICE_ALLOCATION_FAILED)
        st = INGOT_ERR_DEVICE_OOM;
    else if (CUDNN_STATUS_CATEGORY(s) == CUDNN_STATUS_EXECUTION_FAILED)
        st = INGOT_ERR_DEVICE_FATAL;
    call_name(call, name, sizeof name);
    return ig__errf(err, st, "%s%s%s%s: %s%s%s (%s:%d)%s", node ? "node " : "", node ? node : "", node ? ": " : "",
                    name, cudnnGetErrorString(s), last[0] ? ": " : "", last, short_file(file), line, tag);
}

static const char *cublas_name(cublasStatus_t s)
{
    switch (s) {
    case CUBLAS_STATUS_SUCCESS: return "CUBLAS_STATUS_SUCCESS";
    case CUBLAS_STATUS_NOT_INITIALIZED: return "CUBLAS_STATUS_NOT_INITIALIZED";
    case CUBLAS_STATUS_ALLOC_FAILED: return "CUBLAS_STATUS_ALLOC_FAILED";
    case CUBLAS_STATUS_INVALID_VALUE: return "CUBLAS_STATUS_INVALID_VALUE";
    case CUBLAS_STATUS_ARCH_MISMATCH: return "CUBLAS_STATUS_ARCH_MISMATCH";
    case CUBLAS_STATUS_MAPPING_ERROR: return "CUBLAS_STATUS_MAPPING_ERROR";
    case CUBLAS_STATUS_EXECUTION_FAILED: return "CUBLAS_STATUS_EXECUTION_FAILED";
    case CUBLAS_STATUS_INTERNAL_ERROR: return "CUBLAS_STATUS_INTERNAL_ERROR";
    case CUBLAS_STATUS_NOT_SUPPORTED: return "CUBLAS_STATUS_NOT_SUPPORTED";
    case CUBLAS_STATUS_LICENSE_ERROR: return "CUBLAS_STATUS_LICENSE_ERROR";
    default: return "CUBLAS_STATUS_UNKNOWN";
    }
}

ingot_status ig__cublas_status(ig_err *err, cublasStatus_t s, const char *call, const char *node, const char *file,
                               int line)
{
    char name[96], tag[64] = "";
    if (s == CUBLAS_STATUS_SUCCESS) {
        if (!ig__cu_fault_armed()) return INGOT_OK;
        call_name(call, name, sizeof name);
        int f = fault_after(IG_FAULT_LIB, call, name, file, line, tag, sizeof tag);
        if (f == IG_FAULT_NONE) return INGOT_OK;
        s = f == IG_FAULT_OOM     ? CUBLAS_STATUS_ALLOC_FAILED
            : f == IG_FAULT_FATAL ? CUBLAS_STATUS_EXECUTION_FAILED
                                  : CUBLAS_STATUS_INTERNAL_ERROR;
    }
    ingot_status st = INGOT_ERR_CUBLAS;
    if (s == CUBLAS_STATUS_ALLOC_FAILED)
        st = INGOT_ERR_DEVICE_OOM;
    else if (s == CUBLAS_STATUS_EXECUTION_FAILED)
        st = INGOT_ERR_DEVICE_FATAL;
    call_name(call, name, sizeof name);
    return ig__errf(err, st, "%s%s%s%s: %s (%s:%d)%s", node ? "node " : "", node ? node : "", node ? ": " : "", name,
                    cublas_name(s), short_file(file), line, tag);
}
