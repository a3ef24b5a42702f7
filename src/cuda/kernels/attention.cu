/*
 * attention.cu -- fused scaled-dot-product attention (placeholder until the fused kernel lands:
 * nothing is supported, so the lowering keeps MatMul -> Softmax -> MatMul).
 */
#include "kernels.h"

extern "C" int ingot_cuda_attention_supported(const ig_attention_args *a)
{
    (void)a;
    return 0;
}

extern "C" cudaError_t ingot_cuda_attention(const ig_attention_args *a, cudaStream_t s)
{
    (void)a;
    (void)s;
    return cudaErrorNotSupported;
}
