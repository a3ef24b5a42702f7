/*
 * elementwise.cu -- one kernel for every elementwise computation ingot runs: single ops, fused chains
 * (GELU's Div-Erf-Add-Mul-Mul, bias+ReLU, masks), dtype conversions, strided copies (transposes that
 * keep the innermost dim, concatenation into slices, materialising views) and fills.
 *
 * The host lowers a group of ONNX nodes into a small register program (ig_ew_args.ops): LOAD input k
 * into a register, then ops over registers and constants. Each thread runs the program on V consecutive
 * output elements: the opcode switch is uniform across the warp, so its cost is paid once per V elements,
 * and every register array is indexed by compile-time constants only (the switches are unrolled), so
 * nothing lands in local memory. Values are fp32 inside the program whatever the storage type (int64
 * for programs over integers only), so a fused chain rounds once, at the store.
 *
 * Memory access: when the innermost iteration dim is a multiple of V, the V elements of a thread share
 * their outer coordinates: one index computation, then 16-byte vector loads/stores where an operand is
 * contiguous and aligned (fp16/bf16: one uint4 per 8 values; fp32: two), a single load where it is
 * broadcast, strided scalar loads otherwise. A copy whose input runs along one dim and whose output runs
 * along another (an NCHW image written channels-last) goes through a shared-memory tile instead
 * (ew_transpose.cuh).
 */
#include "kernels.h"
#include "ingot.h"
#include "ops/pw_math.h"
#include "ew_transpose.cuh"

#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <stdint.h>

#define EW_BLOCK    256
#define EW_MAX_GRID 65536

/* The register programs carry pointwise codes (src/ops/pw.h): the kernel's own list must be its prefix,
 * and the codes after it (IG_PW_SIN on) are computed by the shared pw_math.h. */
static_assert((int)IG_EW_CODE_COUNT == (int)IG_PW_SIN && (int)IG_EW_MULADD == (int)IG_PW_MULADD &&
                  (int)IG_EW_FLOOR == (int)IG_PW_FLOOR && (int)IG_EW_WHERE == (int)IG_PW_WHERE,
              "the elementwise kernel's codes (kernels.h) must be the first codes of src/ops/pw.h");

/* ---- scalar conversions ---------------------------------------------------------------------- */

template <typename T> __device__ __forceinline__ T load_one(const void *p, int64_t i, int dt)
{
    switch (dt) {
    case INGOT_DTYPE_FLOAT: return (T)((const float *)p)[i];
    case INGOT_DTYPE_FLOAT16: return (T)__half2float(((const __half *)p)[i]);
    case INGOT_DTYPE_BFLOAT16: return (T)__bfloat162float(((const __nv_bfloat16 *)p)[i]);
    case INGOT_DTYPE_DOUBLE: return (T)((const double *)p)[i];
    case INGOT_DTYPE_INT64: return (T)((const long long *)p)[i];
    case INGOT_DTYPE_INT32: return (T)((const int *)p)[i];
    case INGOT_DTYPE_INT16: return (T)((const short *)p)[i];
    case INGOT_DTYPE_INT8: return (T)((const signed char *)p)[i];
    case INGOT_DTYPE_UINT8: return (T)((const unsigned char *)p)[i];
    case INGOT_DTYPE_UINT16: return (T)((const unsigned short *)p)[i];
    case INGOT_DTYPE_UINT32: return (T)((const unsigned int *)p)[i];
    case INGOT_DTYPE_UINT64: return (T)((const unsigned long long *)p)[i];
    case INGOT_DTYPE_BOOL: return (T)(((const unsigned char *)p)[i] != 0);
    default: return (T)0;
    }
}

template <typename T> __device__ __forceinline__ long long to_i64(T v) { return (long long)v; }
template <> __device__ __forceinline__ long long to_i64<float>(float v)
{
    /* C casts of out-of-range or NaN floats are undefined; the hardware conversion saturates and
     * gives 0 for NaN, which is what ONNX Runtime does on GPUs too. */
    return v != v ? 0 : __float2ll_rz(v); /* NaN -> 0, as the CPU's Cast */
}

template <typename T> __device__ __forceinline__ void store_one(void *p, int64_t i, int dt, T v)
{
    switch (dt) {
    case INGOT_DTYPE_FLOAT: ((float *)p)[i] = (float)v; break;
    case INGOT_DTYPE_FLOAT16: ((__half *)p)[i] = __float2half_rn((float)v); break;
    case INGOT_DTYPE_BFLOAT16: ((__nv_bfloat16 *)p)[i] = __float2bfloat16_rn((float)v); break;
    case INGOT_DTYPE_DOUBLE: ((double *)p)[i] = (double)v; break;
    case INGOT_DTYPE_INT64: ((long long *)p)[i] = to_i64(v); break;
    case INGOT_DTYPE_INT32: ((int *)p)[i] = (int)to_i64(v); break;
    case INGOT_DTYPE_INT16: ((short *)p)[i] = (short)to_i64(v); break;
    case INGOT_DTYPE_INT8: ((signed char *)p)[i] = (signed char)to_i64(v); break;
    case INGOT_DTYPE_UINT8: ((unsigned char *)p)[i] = (unsigned char)to_i64(v); break;
    case INGOT_DTYPE_UINT16: ((unsigned short *)p)[i] = (unsigned short)to_i64(v); break;
    case INGOT_DTYPE_UINT32: ((unsigned int *)p)[i] = (unsigned int)to_i64(v); break;
    case INGOT_DTYPE_UINT64: ((unsigned long long *)p)[i] = (unsigned long long)to_i64(v); break;
    case INGOT_DTYPE_BOOL: ((unsigned char *)p)[i] = v != (T)0; break;
    default: break;
    }
}

/* ---- V values at offset off with element stride st (st 0: broadcast) --------------------------- */

template <typename T, int V>
__device__ __forceinline__ void load_vec(const void *p, int64_t off, int64_t st, int dt, T (&o)[V])
{
    if (st == 0) {
        T v = load_one<T>(p, off, dt);
#pragma unroll
        for (int j = 0; j < V; j++) o[j] = v;
        return;
    }
    if (V == 8 && st == 1) {
        if (dt == INGOT_DTYPE_FLOAT16 || dt == INGOT_DTYPE_BFLOAT16) {
            const uint16_t *q = (const uint16_t *)p + off;
            if (((uintptr_t)q & 15) == 0) {
                uint4 u = *(const uint4 *)q;
                const uint32_t w[4] = {u.x, u.y, u.z, u.w};
#pragma unroll
                for (int j = 0; j < 4; j++) {
                    if (dt == INGOT_DTYPE_FLOAT16) {
                        __half2 h = *(const __half2 *)&w[j];
                        float2 f = __half22float2(h);
                        o[2 * j] = (T)f.x;
                        o[2 * j + 1] = (T)f.y;
                    } else {
                        __nv_bfloat162 h = *(const __nv_bfloat162 *)&w[j];
                        float2 f = __bfloat1622float2(h);
                        o[2 * j] = (T)f.x;
                        o[2 * j + 1] = (T)f.y;
                    }
                }
                return;
            }
        } else if (dt == INGOT_DTYPE_FLOAT) {
            const float *q = (const float *)p + off;
            if (((uintptr_t)q & 15) == 0) {
                float4 a = *(const float4 *)q, b = *(const float4 *)(q + 4);
                o[0] = (T)a.x;
                o[1] = (T)a.y;
                o[2] = (T)a.z;
                o[3] = (T)a.w;
                o[4] = (T)b.x;
                o[5] = (T)b.y;
                o[6] = (T)b.z;
                o[7] = (T)b.w;
                return;
            }
        }
    }
#pragma unroll
    for (int j = 0; j < V; j++) o[j] = load_one<T>(p, off + j * st, dt);
}

template <typename T, int V>
__device__ __forceinline__ void store_vec(void *p, int64_t off, int64_t st, int dt, const T (&v)[V])
{
    if (V == 8 && st == 1) {
        if (dt == INGOT_DTYPE_FLOAT16 || dt == INGOT_DTYPE_BFLOAT16) {
            uint16_t *q = (uint16_t *)p + off;
            if (((uintptr_t)q & 15) == 0) {
                uint32_t w[4];
#pragma unroll
                for (int j = 0; j < 4; j++) {
                    if (dt == INGOT_DTYPE_FLOAT16) {
                        __half2 h = __floats2half2_rn((float)v[2 * j], (float)v[2 * j + 1]);
                        w[j] = *(uint32_t *)&h;
                    } else {
                        __nv_bfloat162 h = __floats2bfloat162_rn((float)v[2 * j], (float)v[2 * j + 1]);
                        w[j] = *(uint32_t *)&h;
                    }
                }
                *(uint4 *)q = make_uint4(w[0], w[1], w[2], w[3]);
                return;
            }
        } else if (dt == INGOT_DTYPE_FLOAT) {
            float *q = (float *)p + off;
            if (((uintptr_t)q & 15) == 0) {
                *(float4 *)q = make_float4((float)v[0], (float)v[1], (float)v[2], (float)v[3]);
                *(float4 *)(q + 4) = make_float4((float)v[4], (float)v[5], (float)v[6], (float)v[7]);
                return;
            }
        }
    }
#pragma unroll
    for (int j = 0; j < V; j++) store_one<T>(p, off + j * st, dt, v[j]);
}

/* ---- the operations ------------------------------------------------------------------------------ */

/* Rounding through fp16 and bf16 bits, by the names IG_EW_FLOAT_EXPRS uses (the generated kernels define
 * their own, by PTX). */
__device__ __forceinline__ unsigned short f2h(float f) { return __half_as_ushort(__float2half_rn(f)); }
__device__ __forceinline__ float h2f(unsigned short h) { return __half2float(__ushort_as_half(h)); }
__device__ __forceinline__ unsigned short f2b(float f) { return __bfloat16_as_ushort(__float2bfloat16_rn(f)); }
__device__ __forceinline__ float b2f(unsigned short h) { return __bfloat162float(__ushort_as_bfloat16(h)); }

__device__ __forceinline__ float fmod_py(float x, float y)
{
    float m = fmodf(x, y);
    if (y == 0.f || m != m) return m;
    if (m != 0.f) {
        if ((y < 0.f) != (m < 0.f)) m += y;
    } else {
        m = copysignf(0.f, y);
    }
    return m;
}

__device__ __forceinline__ long long ipow(long long x, long long e)
{
    if (e < 0) return x == 1 ? 1 : x == -1 ? ((e & 1) ? -1 : 1) : 0;
    unsigned long long r = 1, b = (unsigned long long)x, u = (unsigned long long)e;
    while (u) {
        if (u & 1) r *= b;
        b *= b;
        u >>= 1;
    }
    return (long long)r;
}

/* x[j] = op(p[j], q[j], s[j]) for the V values; the switch sits outside the element loop so each case
 * is one straight run of V operations. */
template <int V>
__device__ __forceinline__ void apply_f(int code, const float (&p)[V], const float (&q)[V], const float (&s)[V],
                                        float k, float k2, float (&x)[V])
{
#define EW_CASE(c, expr)                              \
    case c:                                           \
        _Pragma("unroll") for (int j = 0; j < V; j++) \
        {                                             \
            const float a = p[j], b = q[j], z = s[j]; \
            (void)b;                                  \
            (void)z;                                  \
            x[j] = (expr);                            \
        }                                             \
        break;
    switch (code) {
        IG_EW_FLOAT_EXPRS(EW_CASE)
    default:
        if (ig__pw_math_ext(code)) {
            _Pragma("unroll") for (int j = 0; j < V; j++) x[j] = ig__pw_math_f32(code, p[j], k, k2);
        } else {
            _Pragma("unroll") for (int j = 0; j < V; j++) x[j] = 0.f;
        }
    }
#undef EW_CASE
}

__device__ __forceinline__ long long op_i(int code, long long x, long long y, long long z, long long k, long long k2)
{
    switch (code) {
    case IG_EW_COPY:
    case IG_EW_TO_INT:
    case IG_EW_FLOOR:
    case IG_EW_CEIL:
    case IG_EW_ROUND: return x;
    case IG_EW_NEG: return (long long)(0ull - (unsigned long long)x);
    case IG_EW_ABS: return x < 0 ? (long long)(0ull - (unsigned long long)x) : x;
    case IG_EW_RELU: return x > 0 ? x : 0;
    case IG_EW_CLIP: return x < k ? k : x > k2 ? k2 : x;
    case IG_EW_NOT: return x == 0;
    case IG_EW_TO_BOOL: return x != 0;
    case IG_EW_ADD: return (long long)((unsigned long long)x + (unsigned long long)y);
    case IG_EW_SUB: return (long long)((unsigned long long)x - (unsigned long long)y);
    case IG_EW_MUL: return (long long)((unsigned long long)x * (unsigned long long)y);
    case IG_EW_DIV: return y == 0 ? 0 : y == -1 ? (long long)(0ull - (unsigned long long)x) : x / y;
    case IG_EW_MOD: {
        if (y == 0 || y == -1) return 0;
        long long r = x % y;
        if (r != 0 && ((r < 0) != (y < 0))) r += y;
        return r;
    }
    case IG_EW_FMOD: return (y == 0 || y == -1) ? 0 : x % y;
    case IG_EW_POW: return ipow(x, y);
    case IG_EW_MAX: return x > y ? x : y;
    case IG_EW_MIN: return x < y ? x : y;
    case IG_EW_PRELU: return x < 0 ? (long long)((unsigned long long)x * (unsigned long long)y) : x;
    case IG_EW_EQ: return x == y;
    case IG_EW_GT: return x > y;
    case IG_EW_LT: return x < y;
    case IG_EW_GE: return x >= y;
    case IG_EW_LE: return x <= y;
    case IG_EW_AND: return x != 0 && y != 0;
    case IG_EW_OR: return x != 0 || y != 0;
    case IG_EW_WHERE: return x != 0 ? y : z;
    case IG_EW_MULADD: return (long long)((unsigned long long)x * (unsigned long long)y + (unsigned long long)z);
    case IG_PW_SIGN: return ig__pw_math_i64(code, x);
    default: return 0;
    }
}

template <typename T, int V>
__device__ __forceinline__ void apply(int code, const T (&p)[V], const T (&q)[V], const T (&s)[V], double k, double k2,
                                      T (&x)[V]);
template <int V>
__device__ __forceinline__ void apply(int code, const float (&p)[V], const float (&q)[V], const float (&s)[V], double k,
                                      double k2, float (&x)[V])
{
    apply_f<V>(code, p, q, s, (float)k, (float)k2, x);
}
template <int V>
__device__ __forceinline__ void apply(int code, const long long (&p)[V], const long long (&q)[V],
                                      const long long (&s)[V], double k, double k2, long long (&x)[V])
{
#pragma unroll
    for (int j = 0; j < V; j++) x[j] = op_i(code, p[j], q[j], s[j], (long long)k, (long long)k2);
}

/* o = register ref (or the constant); ref is warp-uniform, every index below is a constant. */
template <typename T, int V, int NR>
__device__ __forceinline__ void fetch(int ref, const T (&r)[NR][V], double k, T (&o)[V])
{
    if (ref >= NR) { /* IG_REF_K (or none) */
        T c = (T)k;
#pragma unroll
        for (int j = 0; j < V; j++) o[j] = c;
        return;
    }
    switch (ref) {
#define FETCH_CASE(i)                                                                              \
    case i:                                                                                        \
        if (i < NR) { _Pragma("unroll") for (int j = 0; j < V; j++) o[j] = r[i < NR ? i : 0][j]; } \
        break;
        // clang-format off
        FETCH_CASE(0)
        FETCH_CASE(1)
        FETCH_CASE(2)
        FETCH_CASE(3)
        FETCH_CASE(4)
        FETCH_CASE(5)
        // clang-format on
#undef FETCH_CASE
    default: break;
    }
}

template <typename T, int V, int NR> __device__ __forceinline__ void put(int dst, T (&r)[NR][V], const T (&v)[V])
{
    switch (dst) {
#define PUT_CASE(i)                                                                                \
    case i:                                                                                        \
        if (i < NR) { _Pragma("unroll") for (int j = 0; j < V; j++) r[i < NR ? i : 0][j] = v[j]; } \
        break;
        // clang-format off
        PUT_CASE(0)
        PUT_CASE(1)
        PUT_CASE(2)
        PUT_CASE(3)
        PUT_CASE(4)
        PUT_CASE(5)
        // clang-format on
#undef PUT_CASE
    default: break;
    }
}

/* The usual op of a chain, r0 = f(r0, k | r1) with no register as third operand (register allocation
 * gives an op the register of its first operand when that dies there and is the lowest free one),
 * computed in place: true when done. The general path copies each operand into a temporary through a
 * switch over registers; on a long chain those copies cost more instructions than the arithmetic (8 ops
 * over [64, 1M] ran at 23% of copy bandwidth, each op adding as much time as the whole copy). */
template <typename T, int V, int NR> __device__ __forceinline__ bool apply_in_place(const ig_ew_op &op, T (&r)[NR][V])
{
    if (NR < 2 || op.a != 0 || op.dst != 0 || op.c < NR || (op.b < NR && op.b != 1)) return false;
    T kk[V];
#pragma unroll
    for (int j = 0; j < V; j++) kk[j] = (T)op.k;
    if (op.b >= NR)
        apply<V>(op.code, r[0], kk, kk, op.k, op.k2, r[0]);
    else
        apply<V>(op.code, r[0], r[NR > 1 ? 1 : 0], kk, op.k, op.k2, r[0]);
    return true;
}

/* Run the program on V consecutive elements whose outer coordinates are shared: input k's elements sit
 * at off[k] + j * (its innermost stride; 0 when broadcast). */
template <typename T, int V, int NR>
__device__ __forceinline__ void run_program(const ig_ew_args &a, T (&r)[NR][V], const int64_t (&off)[IG_EW_MAX_IN])
{
    const int last = a.rank - 1;
    for (int i = 0; i < a.n_ops; i++) {
        const ig_ew_op &op = a.ops[i];
        T x[V];
        if (op.code == IG_EW_LOAD) {
            switch (op.a) {
#define LOAD_CASE(kk)                                                                                          \
    case kk:                                                                                                   \
        load_vec<T, V>(a.in[kk], off[kk], a.in_kind[kk] == 2 ? 0 : a.in_strides[kk][last], a.in_dtype[kk], x); \
        break;
                // clang-format off
                LOAD_CASE(0)
                LOAD_CASE(1)
                LOAD_CASE(2)
                LOAD_CASE(3)
                LOAD_CASE(4)
                LOAD_CASE(5)
                // clang-format on
#undef LOAD_CASE
            default:
#pragma unroll
                for (int j = 0; j < V; j++) x[j] = (T)0;
            }
        } else if (apply_in_place<T, V, NR>(op, r)) {
            continue;
        } else {
            T p[V], q[V], s[V];
            fetch<T, V, NR>(op.a, r, op.k, p);
            fetch<T, V, NR>(op.b, r, op.k, q);
            fetch<T, V, NR>(op.c, r, op.k, s);
            apply<V>(op.code, p, q, s, op.k, op.k2, x);
        }
        put<T, V, NR>(op.dst, r, x);
    }
}

/* Offsets of element e (row-major over a.dims) in every input and in the output. */
__device__ __forceinline__ void element_offsets(const ig_ew_args &a, int64_t e, int64_t (&io)[IG_EW_MAX_IN],
                                                int64_t &oo)
{
    const int last = a.rank - 1;
#pragma unroll
    for (int k = 0; k < IG_EW_MAX_IN; k++) io[k] = 0;
    oo = 0;
    if (a.rank == 1) {
        oo = e * a.out_strides[0];
#pragma unroll
        for (int k = 0; k < IG_EW_MAX_IN; k++) io[k] = e * a.in_strides[k][0];
    } else if (a.n <= INT32_MAX) {
        /* coordinates with 32-bit division (a 64-bit one is a long software routine), offsets in 64 */
        uint32_t rem = (uint32_t)e;
#pragma unroll
        for (int d = IG_EW_MAX_RANK - 1; d >= 0; d--) {
            if (d > last) continue;
            const uint32_t dim = (uint32_t)a.dims[d];
            const int64_t c = d ? rem % dim : rem;
            rem = d ? rem / dim : 0;
            oo += c * a.out_strides[d];
#pragma unroll
            for (int k = 0; k < IG_EW_MAX_IN; k++) io[k] += c * a.in_strides[k][d];
        }
    } else {
        int64_t rem = e;
#pragma unroll
        for (int d = IG_EW_MAX_RANK - 1; d >= 0; d--) {
            if (d > last) continue;
            int64_t c = d ? rem % a.dims[d] : rem;
            rem = d ? rem / a.dims[d] : 0;
            oo += c * a.out_strides[d];
#pragma unroll
            for (int k = 0; k < IG_EW_MAX_IN; k++) io[k] += c * a.in_strides[k][d];
        }
    }
#pragma unroll
    for (int k = 0; k < IG_EW_MAX_IN; k++) {
        if (a.in_kind[k] == 1)
            io[k] = e;
        else if (a.in_kind[k] == 2)
            io[k] = 0;
    }
    if (a.out_contig) oo = e;
}

template <typename T, int V, int NR>
__global__ void __launch_bounds__(EW_BLOCK, NR > 4 ? 1 : 2) ew_kernel(const ig_ew_args a)
{
    const int64_t n_vec = (a.n + V - 1) / V;
    const int last = a.rank - 1;
    const bool rows_aligned = a.dims[last] % V == 0;
    {
        /* one group of V elements per thread, no grid-stride loop: a loop would let the compiler hoist
         * every stride of the argument block into registers */
        const int64_t t = (int64_t)blockIdx.x * blockDim.x + threadIdx.x;
        if (t >= n_vec) return;
        const int64_t e0 = t * V;
        int64_t off[IG_EW_MAX_IN], oo;
        if (rows_aligned && e0 + V <= a.n) {
            element_offsets(a, e0, off, oo);
            T r[NR][V];
            run_program<T, V, NR>(a, r, off);
            T res[V];
            fetch<T, V, NR>(a.result, r, 0.0, res);
            store_vec<T, V>(a.out, oo, a.out_strides[last], a.out_dtype, res);
        } else {
            /* a row boundary inside these V elements, or the tail: one element at a time */
            for (int j = 0; j < V && e0 + j < a.n; j++) {
                element_offsets(a, e0 + j, off, oo);
                T r[NR][1];
                run_program<T, 1, NR>(a, r, off);
                T res[1];
                fetch<T, 1, NR>(a.result, r, 0.0, res);
                store_one<T>(a.out, oo, a.out_dtype, res[0]);
            }
        }
    }
}

/* ---- the fast path: at most two inputs, loaded first, then ops on two registers --------------------
 * Most programs are a copy/cast, a binary op, or a binary op and an activation (bias + ReLU/Clip,
 * masks, residual adds, scaling). Here both loads are issued before any arithmetic (two loads in flight
 * per thread), indices are 32-bit when the tensors allow, and only two registers exist: far fewer
 * registers per thread than the general interpreter, so more warps hide the memory latency. */

template <typename I> __device__ __forceinline__ void fast_offsets(const ig_ew_args &a, I e, I &o0, I &o1, I &oo)
{
    o0 = o1 = oo = 0;
    I rem = e;
#pragma unroll
    for (int d = IG_EW_MAX_RANK - 1; d >= 0; d--) {
        if (d >= a.rank) continue;
        I c = d ? rem % (I)a.dims[d] : rem;
        rem = d ? rem / (I)a.dims[d] : 0;
        oo += c * (I)a.out_strides[d];
        o0 += c * (I)a.in_strides[0][d];
        o1 += c * (I)a.in_strides[1][d];
    }
    if (a.in_kind[0] == 1)
        o0 = e;
    else if (a.in_kind[0] == 2)
        o0 = 0;
    if (a.in_kind[1] == 1)
        o1 = e;
    else if (a.in_kind[1] == 2)
        o1 = 0;
    if (a.out_contig) oo = e;
}

template <int V> __device__ __forceinline__ void fast_ops(const ig_ew_args &a, int first, float (&r)[2][V])
{
    for (int i = first; i < a.n_ops; i++) {
        const ig_ew_op &op = a.ops[i];
        if (apply_in_place<float, V, 2>(op, r)) continue;
        float p[V], q[V], s[V], x[V];
        fetch<float, V, 2>(op.a, r, op.k, p);
        fetch<float, V, 2>(op.b, r, op.k, q);
        fetch<float, V, 2>(op.c, r, op.k, s);
        apply<V>(op.code, p, q, s, op.k, op.k2, x);
        put<float, V, 2>(op.dst, r, x);
    }
}

template <typename I> __global__ void __launch_bounds__(EW_BLOCK) ew_fast_kernel(const ig_ew_args a, int n_loads)
{
    const I n = (I)a.n;
    const I e0 = ((I)blockIdx.x * EW_BLOCK + (I)threadIdx.x) * 8;
    if (e0 >= n) return;
    const int last = a.rank - 1;
    I o0, o1, oo;
    float r[2][8];
    if ((I)a.dims[last] % 8 == 0 && e0 + 8 <= n) {
        fast_offsets<I>(a, e0, o0, o1, oo);
        for (int i = 0; i < n_loads; i++) {
            const ig_ew_op &op = a.ops[i];
            const int k = op.a;
            const I off = k ? o1 : o0;
            const int64_t st = a.in_kind[k] == 2 ? 0 : a.in_strides[k][last];
            float x[8];
            load_vec<float, 8>(a.in[k], (int64_t)off, st, a.in_dtype[k], x);
            put<float, 8, 2>(op.dst, r, x);
        }
        fast_ops<8>(a, n_loads, r);
        float res[8];
        fetch<float, 8, 2>(a.result, r, 0.0, res);
        store_vec<float, 8>(a.out, (int64_t)oo, a.out_strides[last], a.out_dtype, res);
        return;
    }
    for (int j = 0; j < 8 && e0 + j < n; j++) {
        fast_offsets<I>(a, e0 + j, o0, o1, oo);
        float r1[2][1];
        for (int i = 0; i < n_loads; i++) {
            const ig_ew_op &op = a.ops[i];
            float x[1] = {load_one<float>(a.in[op.a], (int64_t)(op.a ? o1 : o0), a.in_dtype[op.a])};
            put<float, 1, 2>(op.dst, r1, x);
        }
        fast_ops<1>(a, n_loads, r1);
        float res[1];
        fetch<float, 1, 2>(a.result, r1, 0.0, res);
        store_one<float>(a.out, (int64_t)oo, a.out_dtype, res[0]);
    }
}

/* ---- the transposing copy (ew_transpose.cuh): C rows of TR_TP inputs in, TR_TP * C outputs out ----- */

/* V elements as one aligned access: 16 bytes of fp32 or fp16 move in one instruction. */
template <typename T, int V> struct alignas(sizeof(T) * V) tr_vec {
    T v[V];
};

/* k (<= V) elements from p into v as floats, zeros after: one vector load when all V are there and p is
 * aligned for it. */
template <typename T, int V> __device__ __forceinline__ void tr_load(const T *p, int k, float (&v)[V])
{
    if (k == V && ((uintptr_t)p & (sizeof(tr_vec<T, V>) - 1)) == 0) {
        const tr_vec<T, V> u = *(const tr_vec<T, V> *)p;
#pragma unroll
        for (int i = 0; i < V; i++) v[i] = (float)u.v[i];
        return;
    }
#pragma unroll
    for (int i = 0; i < V; i++) v[i] = i < k ? (float)p[i] : 0.f;
}

template <typename T, int V> __device__ __forceinline__ void tr_store(T *p, int k, const float (&v)[V])
{
    if (k == V && ((uintptr_t)p & (sizeof(tr_vec<T, V>) - 1)) == 0) {
        tr_vec<T, V> u;
#pragma unroll
        for (int i = 0; i < V; i++) u.v[i] = (T)v[i];
        *(tr_vec<T, V> *)p = u;
        return;
    }
#pragma unroll
    for (int i = 0; i < V; i++)
        if (i < k) p[i] = (T)v[i];
}

/* Dynamic shared memory: C rows of TR_LD floats (at most 32.9 KB). */
template <typename TI, typename TO>
__global__ void __launch_bounds__(TR_THREADS) ew_transpose_kernel(const ig_ew_args a)
{
    extern __shared__ float4 tr_smem[];
    float *tile = (float *)tr_smem;
    int64_t in_base, out_base, p0, in_c, src;
    int slot;
    tr_tile(a, blockIdx.x, in_base, out_base, p0, in_c);
    const int C = (int)a.dims[a.rank - 2];
    /* every load first (2 * C runs in flight), then the tile */
    float v[TR_MAX_C][2][TR_VEC];
#pragma unroll
    for (int c = 0; c < TR_MAX_C; c++)
#pragma unroll
        for (int h = 0; h < 2; h++)
            if (c < C) {
                const int k = tr_load_run(a, in_base, in_c, p0, threadIdx.x, c, h, src, slot);
                tr_load<TI, TR_VEC>((const TI *)a.in[0] + src, k, v[c][h]);
            }
#pragma unroll
    for (int c = 0; c < TR_MAX_C; c++)
#pragma unroll
        for (int h = 0; h < 2; h++)
            if (c < C) {
                tr_load_run(a, in_base, in_c, p0, threadIdx.x, c, h, src, slot);
                *(float4 *)&tile[slot] = make_float4(v[c][h][0], v[c][h][1], v[c][h][2], v[c][h][3]);
            }
    __syncthreads();
    const int n = tr_tile_outputs(a, p0);
    TO *y = (TO *)a.out + out_base + p0 * C;
    for (int i = TR_OUT_RUN * threadIdx.x; i < n; i += TR_OUT_RUN * TR_THREADS) {
        float o[TR_OUT_RUN];
#pragma unroll
        for (int k = 0; k < TR_OUT_RUN; k++) o[k] = i + k < n ? tile[tr_slot(C, i + k)] : 0.f;
        tr_store<TO, TR_OUT_RUN>(y + i, n - i < TR_OUT_RUN ? n - i : TR_OUT_RUN, o);
    }
}

/* The register form (ew_transpose.cuh): a thread's TR8_PIX positions of CC rows in, its TR8_PIX * CC
 * contiguous outputs out, 16 bytes an access. */
#define TR8_THREADS 256
template <typename TI, typename TO, int CC>
__global__ void __launch_bounds__(TR8_THREADS) ew_tr8_kernel(const ig_ew_args a, unsigned threads)
{
    const unsigned t = blockIdx.x * TR8_THREADS + threadIdx.x;
    if (t >= threads) return;
    int64_t in_off, in_c, out_off;
    tr8_group(a, t, in_off, in_c, out_off);
    constexpr int VI = 16 / sizeof(TI), VO = 16 / sizeof(TO);
    static_assert(TR8_PIX % VI == 0 && TR8_PIX * CC % VO == 0, "whole vectors");
    float v[CC][TR8_PIX];
#pragma unroll
    for (int c = 0; c < CC; c++)
#pragma unroll
        for (int j = 0; j < TR8_PIX; j += VI) {
            float u[VI];
            tr_load<TI, VI>((const TI *)a.in[0] + in_off + c * in_c + j, VI, u);
#pragma unroll
            for (int i = 0; i < VI; i++) v[c][j + i] = u[i];
        }
    TO *y = (TO *)a.out + out_off;
#pragma unroll
    for (int k = 0; k < TR8_PIX * CC; k += VO) {
        float u[VO];
#pragma unroll
        for (int i = 0; i < VO; i++) u[i] = v[(k + i) % CC][(k + i) / CC];
        tr_store<TO, VO>(y + k, VO, u);
    }
}

template <typename TI, typename TO> static void *tr_kernel_of(const ig_ew_args *a, bool regs)
{
    if (!regs) return (void *)ew_transpose_kernel<TI, TO>;
    return a->dims[a->rank - 2] == 3 ? (void *)ew_tr8_kernel<TI, TO, 3> : (void *)ew_tr8_kernel<TI, TO, 4>;
}

template <typename TI> static void *tr_kernel_from(const ig_ew_args *a, bool regs)
{
    switch (a->out_dtype) {
    case INGOT_DTYPE_FLOAT: return tr_kernel_of<TI, float>(a, regs);
    case INGOT_DTYPE_FLOAT16: return tr_kernel_of<TI, __half>(a, regs);
    default: return tr_kernel_of<TI, __nv_bfloat16>(a, regs);
    }
}

/* The instance for the program's dtypes (tr_applies admits fp32, fp16 and bf16 only): the register form
 * (regs: tr8_applies) or the tile. */
static void *tr_kernel(const ig_ew_args *a, bool regs)
{
    switch (a->in_dtype[0]) {
    case INGOT_DTYPE_FLOAT: return tr_kernel_from<float>(a, regs);
    case INGOT_DTYPE_FLOAT16: return tr_kernel_from<__half>(a, regs);
    default: return tr_kernel_from<__nv_bfloat16>(a, regs);
    }
}

extern "C" const char *ingot_cuda_ew_transpose_form(const ig_ew_args *a)
{
    return tr8_applies(*a) ? "pixels in registers" : tr_applies(*a) ? "shared-memory tile" : NULL;
}

/* Number of leading LOAD ops when the program fits the fast kernel, else -1. */
static int ew_fast_loads(const ig_ew_args *a)
{
    if (a->int_math || a->n_in > 2 || a->result >= 2) return -1;
    int nl = 0;
    while (nl < a->n_ops && a->ops[nl].code == IG_EW_LOAD) {
        if (a->ops[nl].a >= 2 || a->ops[nl].dst >= 2) return -1;
        nl++;
    }
    for (int i = nl; i < a->n_ops; i++) {
        const ig_ew_op *o = &a->ops[i];
        if (o->code == IG_EW_LOAD || o->dst >= 2) return -1;
        if ((o->a < IG_REF_K && o->a >= 2) || (o->b < IG_REF_K && o->b >= 2) || (o->c < IG_REF_K && o->c >= 2))
            return -1;
    }
    /* two loads into one register would lose the first */
    if (nl == 2 && a->ops[0].dst == a->ops[1].dst) return -1;
    return nl;
}

/* True when every offset of the launch fits in 32 bits. */
static bool ew_fits_i32(const ig_ew_args *a)
{
    if (a->n >= ((int64_t)1 << 31) - 16) return false;
    int64_t mo = 0, mi[IG_EW_MAX_IN] = {0};
    for (int d = 0; d < a->rank; d++) {
        int64_t span = a->dims[d] - 1;
        mo += span * (a->out_strides[d] < 0 ? -a->out_strides[d] : a->out_strides[d]);
        for (int k = 0; k < a->n_in; k++)
            mi[k] += span * (a->in_strides[k][d] < 0 ? -a->in_strides[k][d] : a->in_strides[k][d]);
    }
    if (mo >= ((int64_t)1 << 31) - 16) return false;
    for (int k = 0; k < a->n_in; k++)
        if (mi[k] >= ((int64_t)1 << 31) - 16) return false;
    return true;
}

/* The registers a float program touches (its highest register + 1): programs that need only r0 and r1
 * (copies, casts, bias+ReLU, GELU) or up to r3 (broadcast epilogues such as GRN's x * n * w + b + x) run
 * in kernels with that many register arrays: fewer registers per thread, more warps per SM, more loads
 * in flight. */
static int ew_regs_used(const ig_ew_args *a)
{
    int n = a->result < IG_REF_K ? a->result + 1 : 1;
    for (int i = 0; i < a->n_ops; i++) {
        const ig_ew_op *o = &a->ops[i];
        if (o->dst + 1 > n) n = o->dst + 1;
        if (o->code == IG_EW_LOAD) continue;
        const int refs[3] = {o->a, o->b, o->c};
        for (int k = 0; k < 3; k++)
            if (refs[k] < IG_REF_K && refs[k] + 1 > n) n = refs[k] + 1;
    }
    return n;
}

/* The kernel for program a, its launch geometry and dynamic shared memory, and its second argument
 * (-1: it has one; the fast kernel's load count, the register transpose's thread count). */
static void ew_config(const ig_ew_args *a, void **func, dim3 *grid, dim3 *block, size_t *smem, int *second)
{
    *smem = 0;
    *second = -1;
    if (tr8_applies(*a)) {
        const int64_t threads = tr8_threads(*a);
        *func = tr_kernel(a, true);
        *grid = dim3((unsigned)((threads + TR8_THREADS - 1) / TR8_THREADS));
        *block = dim3(TR8_THREADS);
        *second = (int)threads;
        return;
    }
    if (tr_applies(*a)) {
        *func = tr_kernel(a, false);
        *grid = dim3((unsigned)tr_blocks(*a));
        *block = dim3(TR_THREADS);
        *smem = (size_t)a->dims[a->rank - 2] * TR_LD * sizeof(float);
        return;
    }
    int v = a->int_math ? 2 : 8;
    int64_t n_vec = (a->n + v - 1) / v;
    int64_t blocks = (n_vec + EW_BLOCK - 1) / EW_BLOCK;
    if (blocks < 1) blocks = 1;
    *grid = dim3((unsigned)blocks);
    *block = dim3(EW_BLOCK);
    const int n_loads = ew_fast_loads(a);
    if (n_loads >= 0) {
        *second = n_loads;
        *func = ew_fits_i32(a) ? (void *)ew_fast_kernel<int32_t> : (void *)ew_fast_kernel<int64_t>;
    } else if (a->int_math) {
        *func = (void *)ew_kernel<long long, 2, IG_EW_NREG>;
    } else if (ew_regs_used(a) <= 2) {
        *func = (void *)ew_kernel<float, 8, 2>;
    } else if (ew_regs_used(a) <= 4) {
        *func = (void *)ew_kernel<float, 8, 4>;
    } else {
        *func = (void *)ew_kernel<float, 8, IG_EW_NREG>;
    }
}

/* Every kernel by pointer, with the arguments a graph node gets (ingot_cuda_ew_node_params): one choice,
 * in ew_config. */
extern "C" cudaError_t ingot_cuda_ew(const ig_ew_args *a, cudaStream_t s)
{
    if (a->n <= 0) return cudaSuccess;
    void *func;
    dim3 grid, block;
    size_t smem;
    int second;
    ew_config(a, &func, &grid, &block, &smem, &second);
    void *args[] = {(void *)a, &second}; /* a kernel of one argument reads the first only */
    const cudaError_t e = cudaLaunchKernel(func, grid, block, args, smem, s);
    if (e != cudaSuccess) cudaGetLastError(); /* reported here, not again by the next check */
    return e;
}

extern "C" cudaError_t ingot_cuda_ew_node_params(const ig_ew_args *a, struct cudaKernelNodeParams *params,
                                                 void *arg_storage, void **arg_ptrs)
{
    void *func;
    dim3 grid, block;
    size_t smem;
    int second;
    ew_config(a, &func, &grid, &block, &smem, &second);
    /* arg_storage holds the argument block, then the second argument */
    memcpy(arg_storage, a, sizeof *a);
    arg_ptrs[0] = arg_storage;
    if (second >= 0) {
        memcpy((char *)arg_storage + sizeof *a, &second, sizeof second);
        arg_ptrs[1] = (char *)arg_storage + sizeof *a;
    }
    params->func = func;
    params->gridDim = grid;
    params->blockDim = block;
    params->sharedMemBytes = (unsigned)smem;
    params->kernelParams = arg_ptrs;
    params->extra = NULL;
    return cudaSuccess;
}

/* ---- programs compiled at run time (src/cuda/ew_jit.c): the interpreter's grid, their own kernel ---- */

extern "C" int ingot_cuda_ew_fits_i32(const ig_ew_args *a) { return ew_fits_i32(a) ? 1 : 0; }

static dim3 ew_jit_grid(const ig_ew_args *a)
{
    int64_t blocks = ((a->n + 7) / 8 + EW_BLOCK - 1) / EW_BLOCK;
    return dim3((unsigned)(blocks < 1 ? 1 : blocks));
}

extern "C" cudaError_t ingot_cuda_ew_jit_launch(const void *func, const ig_ew_args *a, cudaStream_t s)
{
    if (a->n <= 0) return cudaSuccess;
    void *args[1] = {(void *)a};
    return cudaLaunchKernel(func, ew_jit_grid(a), dim3(EW_BLOCK), args, 0, s);
}

/* ---- fill ------------------------------------------------------------------------------------------ */

template <typename E> __global__ void fill_kernel(E *dst, int64_t n, E v)
{
    for (int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += (int64_t)gridDim.x * blockDim.x)
        dst[i] = v;
}

extern "C" cudaError_t ingot_cuda_fill(void *dst, int64_t n, int32_t esize, uint64_t bits, cudaStream_t s)
{
    if (n <= 0) return cudaSuccess;
    if (bits == 0) return cudaMemsetAsync(dst, 0, (size_t)n * (size_t)esize, s);
    int64_t blocks = (n + EW_BLOCK - 1) / EW_BLOCK;
    if (blocks > EW_MAX_GRID) blocks = EW_MAX_GRID;
    switch (esize) {
    case 1: fill_kernel<uint8_t><<<(unsigned)blocks, EW_BLOCK, 0, s>>>((uint8_t *)dst, n, (uint8_t)bits); break;
    case 2: fill_kernel<uint16_t><<<(unsigned)blocks, EW_BLOCK, 0, s>>>((uint16_t *)dst, n, (uint16_t)bits); break;
    case 4: fill_kernel<uint32_t><<<(unsigned)blocks, EW_BLOCK, 0, s>>>((uint32_t *)dst, n, (uint32_t)bits); break;
    case 8: fill_kernel<uint64_t><<<(unsigned)blocks, EW_BLOCK, 0, s>>>((uint64_t *)dst, n, bits); break;
    default: return cudaErrorInvalidValue;
    }
    return cudaGetLastError();
}
