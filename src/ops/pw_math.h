/*
 * pw_math.h -- the math of the pointwise codes from IG_PW_SIN on (pw.h), in one place for the CUDA
 * elementwise kernel (src/cuda/kernels/elementwise.cu) and the host emulator of that kernel
 * (tests/gpu/emulate.c), so the two cannot drift apart. The CPU interpreter (pw.c) writes the same
 * formulas as array loops, next to the CPU kernels of the ONNX ops (unary.c).
 *
 * Plain C that nvcc reads too: on the device the functions are __device__ (the CUDA math library's
 * sinf, expm1f, ...), on the host static inline (libm's).
 */
#ifndef INGOT_OPS_PW_MATH_H
#define INGOT_OPS_PW_MATH_H

#include "pw.h"

#include <math.h>

#ifdef __CUDACC__
#define IG_PW_MATH_FN __device__ __forceinline__
#else
#define IG_PW_MATH_FN static inline
#endif

/* Is code one of the codes below (SIN and after)? */
IG_PW_MATH_FN bool ig__pw_math_ext(int code) { return code >= IG_PW_SIN && code < IG_PW_CODE_COUNT; }

/* fp32 value of code(a) with constants k, k2 (codes SIN and after; 0 for any other). */
IG_PW_MATH_FN float ig__pw_math_f32(int code, float a, float k, float k2)
{
    switch (code) {
    case IG_PW_SIN: return sinf(a);
    case IG_PW_COS: return cosf(a);
    case IG_PW_TAN: return tanf(a);
    case IG_PW_ASIN: return asinf(a);
    case IG_PW_ACOS: return acosf(a);
    case IG_PW_ATAN: return atanf(a);
    case IG_PW_SINH: return sinhf(a);
    case IG_PW_COSH: return coshf(a);
    case IG_PW_ASINH: return asinhf(a);
    case IG_PW_ACOSH: return acoshf(a);
    case IG_PW_ATANH: return atanhf(a);
    case IG_PW_SIGN: return a > 0.f ? 1.f : a < 0.f ? -1.f : a; /* 0 and NaN stay */
    case IG_PW_ELU: return a < 0.f ? k * expm1f(a) : a;
    case IG_PW_SELU: return a <= 0.f ? k2 * (k * expm1f(a)) : k2 * a;
    case IG_PW_CELU: return a < 0.f ? k * expm1f(a / k) : a;
    case IG_PW_SOFTSIGN: return a / (1.f + fabsf(a));
    case IG_PW_THRELU: return a > k ? a : 0.f;
    case IG_PW_SHRINK: return a < -k2 ? a + k : a > k2 ? a - k : 0.f;
    case IG_PW_ISINF: return ((k != 0.f && a == INFINITY) || (k2 != 0.f && a == -INFINITY)) ? 1.f : 0.f;
    default: return 0.f;
    }
}

/* int64 value of code(a) (int programs: SIGN is the only code after SIN they may hold). */
IG_PW_MATH_FN long long ig__pw_math_i64(int code, long long a)
{
    return code == IG_PW_SIGN ? (long long)(a > 0) - (long long)(a < 0) : 0;
}

#endif /* INGOT_OPS_PW_MATH_H */
