/*
 * check.c -- one converter per library (CUDA runtime, cuDNN, cuBLASLt): a library code becomes an
 * ingot_status and a message naming the node, the call and where it was made, e.g.
 *   node 'conv_12' (Conv): cudnnConvolutionForward(...): CUDNN_STATUS_BAD_PARAM: ... (src/cuda/conv.c:214)
 * Sticky faults (an illegal address, a kernel trap) leave the CUDA context unusable: they map to
 * INGOT_ERR_DEVICE_FATAL so callers mark their context failed.
 */
#include "cuda_internal.h"

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

ingot_status ig__cu_status(ig_err *err, cudaError_t e, const char *call, const char *node, const char *file, int line)
{
    if (e == cudaSuccess) return INGOT_OK;
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
    return ig__errf(err, st, "%s%s%s%s: %s: %s (%s:%d)", node ? "node " : "", node ? node : "", node ? ": " : "", name,
                    cudaGetErrorName(e), cudaGetErrorString(e), short_file(file), line);
}

ingot_status ig__cudnn_status(ig_err *err, cudnnStatus_t s, const char *call, const char *node, const char *file,
                              int line)
{
    if (s == CUDNN_STATUS_SUCCESS) return INGOT_OK;
    ingot_status st = INGOT_ERR_CUDNN;
    if (s == CUDNN_STATUS_ALLOC_FAILED)
        st = INGOT_ERR_DEVICE_OOM;
    else if (s == CUDNN_STATUS_EXECUTION_FAILED)
        st = INGOT_ERR_DEVICE_FATAL;
    char name[96], last[256] = "";
    call_name(call, name, sizeof name);
    cudnnGetLastErrorString(last, sizeof last);
    return ig__errf(err, st, "%s%s%s%s: %s%s%s (%s:%d)", node ? "node " : "", node ? node : "", node ? ": " : "", name,
                    cudnnGetErrorString(s), last[0] ? ": " : "", last, short_file(file), line);
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
    if (s == CUBLAS_STATUS_SUCCESS) return INGOT_OK;
    ingot_status st = INGOT_ERR_CUBLAS;
    if (s == CUBLAS_STATUS_ALLOC_FAILED)
        st = INGOT_ERR_DEVICE_OOM;
    else if (s == CUBLAS_STATUS_EXECUTION_FAILED)
        st = INGOT_ERR_DEVICE_FATAL;
    char name[96];
    call_name(call, name, sizeof name);
    return ig__errf(err, st, "%s%s%s%s: %s (%s:%d)", node ? "node " : "", node ? node : "", node ? ": " : "", name,
                    cublas_name(s), short_file(file), line);
}
