/*
 * ew_jit.c -- fused elementwise programs compiled into kernels of their own at run time (NVRTC).
 *
 * The interpreter in kernels/elementwise.cu runs any register program, but it pays for that on every
 * element: the opcode switch, operands routed through temporaries, constants read from the argument
 * block. On the H200 that costs about 13 instructions per element and op (ncu, 2026-12-02): a chain of
 * 8 ops over [64, 1M] fp32 runs at 36% of copy bandwidth, ConvNeXt-V2's GRN epilogue at 6%. Here each
 * program becomes straight-line CUDA C -- one statement per op, constants as literals, the dtypes and
 * the index width fixed -- which NVRTC compiles once per distinct program and process.
 *
 * The generated kernel takes the same ig_ew_args as the interpreter (so binding, launching and the CUDA
 * Graph's pointer patching do not change) and computes exactly the interpreter's expressions, in fp32,
 * rounding once at the store. It includes no header: the toolkit's headers need not be installed where
 * ingot runs, only libnvrtc. Programs it does not cover (integer math, dtypes other than fp32/fp16/bf16
 * -- and bool inputs, read as 0 or 1 --, the codes of pw_math.h) keep the interpreter, as does every program when NVRTC
 * is missing or fails; INGOT_CUDA_EW_JIT=0 turns it off.
 */
#define _POSIX_C_SOURCE 200809L
#include "cuda_internal.h"

#include <math.h>
#include <nvrtc.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define JIT_V     8   /* elements per thread, as the interpreter */
#define JIT_BLOCK 256 /* threads per block, as the interpreter */
#define JIT_CACHE 4096

/* ---- a growing string ---------------------------------------------------------------------------- */

typedef struct sbuf {
    char *p;
    size_t n, cap;
    bool failed; /* out of memory: the source is not used */
} sbuf;

static void sb_add(sbuf *b, const char *fmt, ...) IG_PRINTF(2, 3);
static void sb_add(sbuf *b, const char *fmt, ...)
{
    if (b->failed) return;
    for (;;) {
        va_list ap;
        va_start(ap, fmt);
        int w = vsnprintf(b->p ? b->p + b->n : NULL, b->p ? b->cap - b->n : 0, fmt, ap);
        va_end(ap);
        if (w < 0) {
            b->failed = true;
            return;
        }
        if (b->p && b->n + (size_t)w < b->cap) {
            b->n += (size_t)w;
            return;
        }
        size_t cap = (b->cap ? b->cap * 2 : 8192) + (size_t)w;
        char *np = ig__realloc(b->p, cap);
        if (!np) {
            b->failed = true;
            return;
        }
        b->p = np;
        b->cap = cap;
    }
}

/* ---- what the generator covers ------------------------------------------------------------------- */

static const char *dtype_tag(int32_t dt)
{
    switch (dt) {
    case INGOT_DTYPE_FLOAT: return "f32";
    case INGOT_DTYPE_FLOAT16: return "f16";
    case INGOT_DTYPE_BFLOAT16: return "bf16";
    default: return NULL;
    }
}

/* An input's tag: the output's dtypes and bool (a Where's condition, a mask), read as 0 or 1 as the
 * interpreter reads it. */
static const char *in_tag(int32_t dt) { return dt == INGOT_DTYPE_BOOL ? "b8" : dtype_tag(dt); }

/* The interpreter's expression of code, as text (kernels.h, IG_EW_FLOAT_EXPRS): NULL for the codes left
 * to the interpreter (pw_math.h's). */
static const char *code_expr(int code)
{
    switch (code) {
#define IG_EXPR_TEXT_(c, e) \
    case c: return #e;
        IG_EW_FLOAT_EXPRS(IG_EXPR_TEXT_)
#undef IG_EXPR_TEXT_
    default: return NULL;
    }
}

bool ig__cu_ew_jit_covers(const ig_ew_args *a)
{
    if (a->int_math || a->n <= 0 || a->rank < 1 || a->rank > IG_EW_MAX_RANK || a->n_in < 1 || a->n_in > IG_EW_MAX_IN ||
        a->n_ops < 1 || a->n_ops > IG_EW_MAX_OPS || !dtype_tag(a->out_dtype) || ingot_cuda_ew_transpose_form(a))
        return false;
    for (int k = 0; k < a->n_in; k++)
        if (!in_tag(a->in_dtype[k]) || a->in_kind[k] < 0 || a->in_kind[k] > 2) return false;
    bool set[IG_EW_NREG] = {false};
    for (int i = 0; i < a->n_ops; i++) {
        const ig_ew_op *o = &a->ops[i];
        if (o->dst >= IG_EW_NREG) return false;
        if (o->code == IG_EW_LOAD) {
            if (o->a >= a->n_in) return false;
        } else {
            if (!code_expr(o->code)) return false;
            const uint8_t r[3] = {o->a, o->b, o->c};
            for (int s = 0; s < 3; s++)
                if (r[s] < IG_REF_K && !set[r[s]]) return false; /* a register read before it is written */
        }
        set[o->dst] = true;
    }
    return a->result < IG_EW_NREG && set[a->result];
}

/* ---- the source ------------------------------------------------------------------------------------ */

/* A float constant as a literal that reads back the same bits (hexadecimal; NaN and infinities by
 * their bits). */
static void float_lit(char *buf, size_t n, double v)
{
    float f = (float)v;
    if (f != f || isinf(f)) {
        uint32_t u;
        memcpy(&u, &f, sizeof u);
        snprintf(buf, n, "__int_as_float(0x%08x)", (unsigned)u);
    } else {
        snprintf(buf, n, "%af", (double)f);
    }
}

/* What every generated kernel needs: the argument block (its layout checked against the host's), fp16
 * and bf16 conversions by PTX (no cuda_fp16.h), loads and stores of 1 and 8 values per dtype. */
static void preamble(sbuf *b)
{
    sb_add(b,
           "typedef long long i64; typedef unsigned long long u64; typedef int i32; typedef unsigned int u32;\n"
           "typedef unsigned short u16; typedef unsigned char u8;\n"
           "struct ig_ew_op { u8 code, a, b, c, dst, pad[3]; double k, k2; };\n"
           "struct ig_ew_args { i64 n; i32 rank; i32 int_math; i64 dims[%d]; void *out; i64 out_strides[%d];\n"
           "  i32 out_dtype; i32 out_contig; i32 n_in; i32 n_ops; const void *in[%d]; i32 in_dtype[%d];\n"
           "  i32 in_kind[%d]; i64 in_strides[%d][%d]; ig_ew_op ops[%d]; u8 result; };\n"
           "static_assert(sizeof(ig_ew_args) == %zu, \"ig_ew_args: the host's layout\");\n",
           IG_EW_MAX_RANK, IG_EW_MAX_RANK, IG_EW_MAX_IN, IG_EW_MAX_IN, IG_EW_MAX_IN, IG_EW_MAX_IN, IG_EW_MAX_RANK,
           IG_EW_MAX_OPS, sizeof(ig_ew_args));
    sb_add(
        b, "%s",
        "__device__ __forceinline__ float h2f(u16 h) { float f; asm(\"cvt.f32.f16 %0, %1;\" : \"=f\"(f) : \"h\"(h)); "
        "return f; }\n"
        "__device__ __forceinline__ u16 f2h(float f) { u16 h; asm(\"cvt.rn.f16.f32 %0, %1;\" : \"=h\"(h) : "
        "\"f\"(f)); return h; }\n"
        "__device__ __forceinline__ float b2f(u16 h) { return __uint_as_float((u32)h << 16); }\n"
        "__device__ __forceinline__ u16 f2b(float f) {\n"
        "#if __CUDA_ARCH__ >= 800\n"
        "  u16 h; asm(\"cvt.rn.bf16.f32 %0, %1;\" : \"=h\"(h) : \"f\"(f)); return h;\n"
        "#else\n"
        "  u32 u = __float_as_uint(f);\n"
        "  if ((u & 0x7fffffffu) > 0x7f800000u) return (u16)0x7fff;\n"
        "  u += 0x7fffu + ((u >> 16) & 1u); return (u16)(u >> 16);\n"
        "#endif\n"
        "}\n"
        "__device__ __forceinline__ float fmod_py(float x, float y) {\n"
        "  float m = fmodf(x, y);\n"
        "  if (y == 0.f || m != m) return m;\n"
        "  if (m != 0.f) { if ((y < 0.f) != (m < 0.f)) m += y; } else { m = copysignf(0.f, y); }\n"
        "  return m; }\n"
        "__device__ __forceinline__ float ld1_f32(const void *p, i64 i) { return ((const float *)p)[i]; }\n"
        "__device__ __forceinline__ float ld1_f16(const void *p, i64 i) { return h2f(((const u16 *)p)[i]); }\n"
        "__device__ __forceinline__ float ld1_bf16(const void *p, i64 i) { return b2f(((const u16 *)p)[i]); }\n"
        "__device__ __forceinline__ float ld1_b8(const void *p, i64 i) { return ((const u8 *)p)[i] != 0 ? 1.f : 0.f; "
        "}\n"
        "__device__ __forceinline__ void st1_f32(void *p, i64 i, float v) { ((float *)p)[i] = v; }\n"
        "__device__ __forceinline__ void st1_f16(void *p, i64 i, float v) { ((u16 *)p)[i] = f2h(v); }\n"
        "__device__ __forceinline__ void st1_bf16(void *p, i64 i, float v) { ((u16 *)p)[i] = f2b(v); }\n"
        /* 8 values from off with stride st (0: one value for all); 16-byte loads where contiguous */
        "__device__ __forceinline__ void ld8_f32(const void *p, i64 off, i64 st, float (&o)[8]) {\n"
        "  const float *q = (const float *)p + off;\n"
        "  if (st == 0) { float v = *q; for (int j = 0; j < 8; j++) o[j] = v; return; }\n"
        "  if (st == 1 && ((u64)q & 15) == 0) { float4 x = ((const float4 *)q)[0], y = ((const float4 *)q)[1];\n"
        "    o[0] = x.x; o[1] = x.y; o[2] = x.z; o[3] = x.w; o[4] = y.x; o[5] = y.y; o[6] = y.z; o[7] = y.w; "
        "return; }\n"
        "  for (int j = 0; j < 8; j++) o[j] = q[j * st]; }\n"
        "__device__ __forceinline__ void unpack8(uint4 u, bool bf, float (&o)[8]) {\n"
        "  const u32 w[4] = {u.x, u.y, u.z, u.w};\n"
        "  for (int j = 0; j < 4; j++) { u16 lo = (u16)(w[j] & 0xffffu), hi = (u16)(w[j] >> 16);\n"
        "    o[2 * j] = bf ? b2f(lo) : h2f(lo); o[2 * j + 1] = bf ? b2f(hi) : h2f(hi); } }\n"
        "__device__ __forceinline__ void ld8_16(const void *p, i64 off, i64 st, bool bf, float (&o)[8]) {\n"
        "  const u16 *q = (const u16 *)p + off;\n"
        "  if (st == 0) { float v = bf ? b2f(*q) : h2f(*q); for (int j = 0; j < 8; j++) o[j] = v; return; }\n"
        "  if (st == 1 && ((u64)q & 15) == 0) { unpack8(*(const uint4 *)q, bf, o); return; }\n"
        "  for (int j = 0; j < 8; j++) o[j] = bf ? b2f(q[j * st]) : h2f(q[j * st]); }\n"
        "__device__ __forceinline__ void ld8_f16(const void *p, i64 off, i64 st, float (&o)[8]) "
        "{ ld8_16(p, off, st, false, o); }\n"
        "__device__ __forceinline__ void ld8_bf16(const void *p, i64 off, i64 st, float (&o)[8]) "
        "{ ld8_16(p, off, st, true, o); }\n"
        "__device__ __forceinline__ void ld8_b8(const void *p, i64 off, i64 st, float (&o)[8]) {\n"
        "  const u8 *q = (const u8 *)p + off;\n"
        "  if (st == 0) { float v = *q != 0 ? 1.f : 0.f; for (int j = 0; j < 8; j++) o[j] = v; return; }\n"
        "  if (st == 1 && ((u64)q & 7) == 0) { u64 x = *(const u64 *)q;\n"
        "    for (int j = 0; j < 8; j++) o[j] = ((x >> (8 * j)) & 0xffu) != 0 ? 1.f : 0.f; return; }\n"
        "  for (int j = 0; j < 8; j++) o[j] = q[j * st] != 0 ? 1.f : 0.f; }\n"
        "__device__ __forceinline__ void st8_f32(void *p, i64 off, i64 st, const float (&v)[8]) {\n"
        "  float *q = (float *)p + off;\n"
        "  if (st == 1 && ((u64)q & 15) == 0) { ((float4 *)q)[0] = make_float4(v[0], v[1], v[2], v[3]);\n"
        "    ((float4 *)q)[1] = make_float4(v[4], v[5], v[6], v[7]); return; }\n"
        "  for (int j = 0; j < 8; j++) q[j * st] = v[j]; }\n"
        "__device__ __forceinline__ void st8_16(void *p, i64 off, i64 st, bool bf, const float (&v)[8]) {\n"
        "  u16 *q = (u16 *)p + off;\n"
        "  u16 h[8];\n"
        "  for (int j = 0; j < 8; j++) h[j] = bf ? f2b(v[j]) : f2h(v[j]);\n"
        "  if (st == 1 && ((u64)q & 15) == 0) {\n"
        "    *(uint4 *)q = make_uint4(h[0] | ((u32)h[1] << 16), h[2] | ((u32)h[3] << 16), h[4] | ((u32)h[5] << 16),\n"
        "                             h[6] | ((u32)h[7] << 16)); return; }\n"
        "  for (int j = 0; j < 8; j++) q[j * st] = h[j]; }\n"
        "__device__ __forceinline__ void st8_f16(void *p, i64 off, i64 st, const float (&v)[8]) "
        "{ st8_16(p, off, st, false, v); }\n"
        "__device__ __forceinline__ void st8_bf16(void *p, i64 off, i64 st, const float (&v)[8]) "
        "{ st8_16(p, off, st, true, v); }\n");
}

/* The offsets of element `e` (an expression of type I) in every general-strided input and the output. */
static void offsets(sbuf *b, const ig_ew_args *a, const char *e)
{
    bool need_div = a->rank > 1 && (!a->out_contig);
    for (int k = 0; k < a->n_in; k++) need_div = need_div || (a->rank > 1 && a->in_kind[k] == 0);
    for (int k = 0; k < a->n_in; k++)
        sb_add(b, "      I o%d = %s;\n", k, a->in_kind[k] == 1 ? e : a->in_kind[k] == 2 ? "0" : "0");
    sb_add(b, "      I oo = %s;\n", a->out_contig ? e : "0");
    if (a->rank == 1) {
        for (int k = 0; k < a->n_in; k++)
            if (a->in_kind[k] == 0) sb_add(b, "      o%d = %s * (I)a.in_strides[%d][0];\n", k, e, k);
        if (!a->out_contig) sb_add(b, "      oo = %s * (I)a.out_strides[0];\n", e);
        return;
    }
    if (!need_div) return;
    sb_add(b, "      { I r = %s, c;\n", e);
    for (int d = a->rank - 1; d >= 0; d--) {
        if (d)
            sb_add(b, "        c = r %% (I)a.dims[%d]; r /= (I)a.dims[%d];\n", d, d);
        else
            sb_add(b, "        c = r;\n");
        for (int k = 0; k < a->n_in; k++)
            if (a->in_kind[k] == 0) sb_add(b, "        o%d += c * (I)a.in_strides[%d][%d];\n", k, k, d);
        if (!a->out_contig) sb_add(b, "        oo += c * (I)a.out_strides[%d];\n", d);
    }
    sb_add(b, "      }\n");
}

/* The program over arrays of w values: v<i> is the value op i writes (SSA; registers renamed). */
static void program(sbuf *b, const ig_ew_args *a, int w, bool vec)
{
    int reg[IG_EW_NREG];
    for (int r = 0; r < IG_EW_NREG; r++) reg[r] = -1;
    const int last = a->rank - 1;
    for (int i = 0; i < a->n_ops; i++) {
        const ig_ew_op *o = &a->ops[i];
        if (o->code == IG_EW_LOAD) {
            int k = o->a;
            const char *t = in_tag(a->in_dtype[k]);
            if (vec) {
                char st[64];
                if (a->in_kind[k] == 2)
                    snprintf(st, sizeof st, "0");
                else if (a->in_kind[k] == 1)
                    snprintf(st, sizeof st, "1");
                else
                    snprintf(st, sizeof st, "a.in_strides[%d][%d]", k, last);
                sb_add(b, "      float v%d[8]; ld8_%s(a.in[%d], o%d, %s, v%d);\n", i, t, k, k, st, i);
            } else {
                sb_add(b, "      float v%d[1] = {ld1_%s(a.in[%d], o%d)};\n", i, t, k, k);
            }
        } else {
            char ops[3][48], k1[48], k2[48];
            const uint8_t r[3] = {o->a, o->b, o->c};
            float_lit(k1, sizeof k1, o->k);
            float_lit(k2, sizeof k2, o->k2);
            for (int s = 0; s < 3; s++) {
                if (r[s] < IG_REF_K)
                    snprintf(ops[s], sizeof ops[s], "v%d[j]", reg[r[s]]);
                else if (r[s] == IG_REF_K)
                    snprintf(ops[s], sizeof ops[s], "%s", k1);
                else
                    snprintf(ops[s], sizeof ops[s], "0.f");
            }
            sb_add(b,
                   "      float v%d[%d];\n"
                   "#pragma unroll\n"
                   "      for (int j = 0; j < %d; j++) { const float a = %s, b = %s, z = %s, k = %s, k2 = %s;\n"
                   "        (void)b; (void)z; (void)k; (void)k2; v%d[j] = %s; }\n",
                   i, w, w, ops[0], ops[1], ops[2], k1, k2, i, code_expr(o->code));
        }
        reg[o->dst] = i;
    }
}

/* The whole kernel `name` for program a (ig__cu_ew_jit_covers(a)). */
static void kernel(sbuf *b, const ig_ew_args *a, bool i32, const char *name)
{
    const char *ot = dtype_tag(a->out_dtype);
    const int last = a->rank - 1;
    int res = -1;
    for (int i = 0; i < a->n_ops; i++)
        if (a->ops[i].dst == a->result) res = i;
    sb_add(b,
           "extern \"C\" __global__ void __launch_bounds__(%d) %s(const ig_ew_args a)\n{\n"
           "  typedef %s I;\n"
           "  const I n = (I)a.n;\n"
           "  const I e0 = ((I)blockIdx.x * %d + (I)threadIdx.x) * 8;\n"
           "  if (e0 >= n) return;\n"
           "  if ((I)a.dims[%d] %% 8 == 0 && e0 + 8 <= n) {\n",
           JIT_BLOCK, name, i32 ? "int" : "long long", JIT_BLOCK, last);
    offsets(b, a, "e0");
    program(b, a, 8, true);
    char ost[48] = "1";
    if (!a->out_contig) snprintf(ost, sizeof ost, "a.out_strides[%d]", last);
    sb_add(b, "      st8_%s(a.out, oo, %s, v%d);\n", ot, ost, res);
    sb_add(b, "  } else {\n    for (int jj = 0; jj < 8 && e0 + jj < n; jj++) {\n      const I e = e0 + jj;\n");
    offsets(b, a, "e");
    program(b, a, 1, false);
    sb_add(b, "      st1_%s(a.out, oo, v%d[0]);\n    }\n  }\n}\n", ot, res);
}

/* ---- compiling and loading --------------------------------------------------------------------------- */

typedef struct jit_entry {
    uint64_t hash;
    void *func; /* its cudaKernel_t (a failed compile is not cached: a later instance tries again) */
} jit_entry;

static pthread_mutex_t jit_lock = PTHREAD_MUTEX_INITIALIZER;
static jit_entry jit_cache[JIT_CACHE];
static int jit_n;

bool ig__cu_ew_jit_enabled(void)
{
    const char *v = getenv("INGOT_CUDA_EW_JIT");
    return !(v && !strcmp(v, "0"));
}

/* NVRTC's verdict as an ingot error; the program log's head goes into the message. */
static ingot_status nvrtc_fail(ig_err *err, nvrtcProgram p, nvrtcResult r, const char *what)
{
    char log[512] = "";
    size_t n = 0;
    if (p && nvrtcGetProgramLogSize(p, &n) == NVRTC_SUCCESS && n > 1) {
        char *full = ig__malloc(n);
        if (full && nvrtcGetProgramLog(p, full) == NVRTC_SUCCESS) snprintf(log, sizeof log, ": %.400s", full);
        ig__free(full);
    }
    return ig__errf(err, INGOT_ERR_CUDA, "NVRTC %s: %s%s", what, nvrtcGetErrorString(r), log);
}

/* src compiled by NVRTC for arch ("sm_90") into a cubin of *size bytes the caller frees. */
static ingot_status nvrtc_cubin(const char *src, const char *arch, char **cubin, size_t *size, ig_err *err)
{
    *cubin = NULL;
    *size = 0;
    char opt[64];
    snprintf(opt, sizeof opt, "--gpu-architecture=%s", arch);
    const char *opts[] = {opt, "-std=c++17", "--fmad=true"};
    nvrtcProgram p = NULL;
    nvrtcResult r = nvrtcCreateProgram(&p, src, "ingot_ew.cu", 0, NULL, NULL);
    if (r != NVRTC_SUCCESS) return nvrtc_fail(err, NULL, r, "create");
    ingot_status st = INGOT_OK;
    size_t n = 0;
    if ((r = nvrtcCompileProgram(p, (int)(sizeof opts / sizeof opts[0]), opts)) != NVRTC_SUCCESS)
        st = nvrtc_fail(err, p, r, "compile");
    else if ((r = nvrtcGetCUBINSize(p, &n)) != NVRTC_SUCCESS)
        st = nvrtc_fail(err, p, r, "cubin size");
    else if (!(*cubin = ig__malloc(n ? n : 1)))
        st = ig__errf(err, INGOT_ERR_OUT_OF_MEMORY, "out of memory");
    else if ((r = nvrtcGetCUBIN(p, *cubin)) != NVRTC_SUCCESS)
        st = nvrtc_fail(err, p, r, "cubin");
    else
        *size = n;
    nvrtcDestroyProgram(&p);
    if (st != INGOT_OK) {
        ig__free(*cubin);
        *cubin = NULL;
    }
    return st;
}

/* ---- the cache folder: a unit compiled by an earlier process is read back, not compiled again ---- */

#define JIT_FILE_MAGIC "IGEWCUB1"
#define JIT_FILE_MAX   ((size_t)64 << 20)

static int64_t jit_units_compiled, jit_units_cached; /* atomics: the tests compile outside jit_lock */

void ig__cu_ew_jit_stats(int64_t *compiled, int64_t *cached)
{
    *compiled = __atomic_load_n(&jit_units_compiled, __ATOMIC_RELAXED);
    *cached = __atomic_load_n(&jit_units_cached, __ATOMIC_RELAXED);
}

/* The cubin of the unit src for arch: from the cache folder (core/cache.c) when a process compiled the
 * same unit for the same architecture with the same NVRTC before, else compiled and put there. NVRTC
 * takes 0.1-0.3 s a unit, which every process paid at its first context (ResNet-50's context creation
 * went from 0.70 to 1.13 s with the generated kernels). A file is [magic][key][hash of the cubin][cubin];
 * any mismatch, a short read or a missing folder means "compile". INGOT_CUDA_EW_JIT_CACHE=0: always
 * compile. */
static ingot_status cubin_of(const char *src, const char *arch, char **cubin, ig_err *err)
{
    int maj = 0, min = 0;
    char ver[64], name[64];
    if (nvrtcVersion(&maj, &min) != NVRTC_SUCCESS) maj = min = -1;
    snprintf(ver, sizeof ver, "%s nvrtc %d.%d", arch, maj, min);
    uint64_t key = ig__fnv1a(ig__fnv1a(IG_FNV_SEED, ver, strlen(ver)), src, strlen(src));
    snprintf(name, sizeof name, "ew-%016llx.cubin", (unsigned long long)key);
    const char *env = getenv("INGOT_CUDA_EW_JIT_CACHE");
    bool use = !(env && !strcmp(env, "0"));
    size_t n = 0;
    unsigned char *f = use ? ig__cache_get(name, JIT_FILE_MAX, &n) : NULL;
    if (f && n > 24 && !memcmp(f, JIT_FILE_MAGIC, 8) && ig__get_le64(f + 8) == key &&
        ig__get_le64(f + 16) == ig__fnv1a(IG_FNV_SEED, f + 24, n - 24)) {
        memmove(f, f + 24, n - 24); /* the caller frees what it gets with ig__free, as NVRTC's */
        *cubin = (char *)f;
        __atomic_fetch_add(&jit_units_cached, 1, __ATOMIC_RELAXED);
        return INGOT_OK;
    }
    ig__free(f);
    ingot_status st = nvrtc_cubin(src, arch, cubin, &n, err);
    if (st != INGOT_OK) return st;
    __atomic_fetch_add(&jit_units_compiled, 1, __ATOMIC_RELAXED);
    unsigned char *out = use ? ig__malloc(n + 24) : NULL;
    if (out) {
        memcpy(out, JIT_FILE_MAGIC, 8);
        ig__put_le64(out + 8, key);
        ig__put_le64(out + 16, ig__fnv1a(IG_FNV_SEED, *cubin, n));
        memcpy(out + 24, *cubin, n);
        ig__cache_put(name, out, n + 24); /* not cached: the next process compiles again */
    }
    ig__free(out);
    return INGOT_OK;
}

/* The architecture of the current device, "sm_90". */
static ingot_status device_arch(char *arch, size_t n, ig_err *err)
{
    int dev = 0, major = 0, minor = 0;
    ingot_status st = IG_CU(err, NULL, cudaGetDevice(&dev));
    if (st == INGOT_OK) st = IG_CU(err, NULL, cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, dev));
    if (st == INGOT_OK) st = IG_CU(err, NULL, cudaDeviceGetAttribute(&minor, cudaDevAttrComputeCapabilityMinor, dev));
    if (st == INGOT_OK) snprintf(arch, n, "sm_%d%d", major, minor);
    return st;
}

/* One program's kernel: its body (named KERNEL_NAME) and the name it gets from the body's hash, so equal
 * programs share one kernel. */
typedef struct jit_body {
    char *text;
    uint64_t hash;
    char name[40];
} jit_body;

static ingot_status body_of(const ig_ew_args *a, bool i32, jit_body *b, ig_err *err)
{
    sbuf t = {0};
    kernel(&t, a, i32, "KERNEL_NAME");
    if (t.failed) {
        ig__free(t.p);
        return ig__errf(err, INGOT_ERR_OUT_OF_MEMORY, "out of memory");
    }
    b->text = t.p;
    b->hash = ig__fnv1a(IG_FNV_SEED, t.p, t.n);
    snprintf(b->name, sizeof b->name, "ig_ew_%016llx", (unsigned long long)b->hash);
    return INGOT_OK;
}

/* The preamble and the bodies, each under its own name: one translation unit. */
static ingot_status unit_of(const jit_body *const *bodies, int n, char **out, ig_err *err)
{
    sbuf all = {0};
    preamble(&all);
    for (int i = 0; i < n; i++) {
        const char *q = bodies[i]->text, *m;
        while ((m = strstr(q, "KERNEL_NAME"))) {
            sb_add(&all, "%.*s%s", (int)(m - q), q, bodies[i]->name);
            q = m + strlen("KERNEL_NAME");
        }
        sb_add(&all, "%s", q);
    }
    if (all.failed) {
        ig__free(all.p);
        return ig__errf(err, INGOT_ERR_OUT_OF_MEMORY, "out of memory");
    }
    /* INGOT_CUDA_EW_JIT_DUMP=DIR: every generated unit as DIR/<first kernel's name>.cu */
    const char *dump = getenv("INGOT_CUDA_EW_JIT_DUMP");
    if (dump && *dump && n > 0) {
        char path[1024];
        snprintf(path, sizeof path, "%s/%s.cu", dump, bodies[0]->name);
        FILE *f = fopen(path, "w");
        if (f) {
            fputs(all.p, f);
            fclose(f);
        }
    }
    *out = all.p;
    return INGOT_OK;
}

ingot_status ig__cu_ew_jit_check(const ig_ew_args *const *progs, const bool *i32, int n, const char *arch, ig_err *err)
{
    jit_body *b = ig__calloc((size_t)n + 1, sizeof *b);
    const jit_body **all = ig__calloc((size_t)n + 1, sizeof *all);
    char *src = NULL, *cubin = NULL;
    ingot_status st = b && all ? INGOT_OK : ig__errf(err, INGOT_ERR_OUT_OF_MEMORY, "out of memory");
    int m = 0;
    for (int i = 0; i < n && st == INGOT_OK; i++) {
        if ((st = body_of(progs[i], i32[i], &b[i], err)) != INGOT_OK) break;
        bool dup = false; /* one kernel per name in a unit */
        for (int t = 0; t < m && !dup; t++) dup = all[t]->hash == b[i].hash;
        if (!dup) all[m++] = &b[i];
    }
    if (st == INGOT_OK && m > 0) st = unit_of(all, m, &src, err);
    if (st == INGOT_OK && m > 0) st = cubin_of(src, arch, &cubin, err);
    ig__free(cubin);
    ig__free(src);
    for (int i = 0; b && i < n; i++) ig__free(b[i].text);
    ig__free(b);
    ig__free(all);
    return st;
}

/* Compile the programs not in the cache yet as one unit into one library (one NVRTC run and one module
 * per instance, however many programs), under the lock: each program compiles once per process however
 * many contexts prepare at once. funcs[i] is NULL where a program's kernel is not available. */
ingot_status ig__cu_ew_jit_batch(const ig_ew_args *const *progs, const bool *i32, int n, void **funcs, ig_err *err)
{
    jit_body *b = ig__calloc((size_t)n + 1, sizeof *b);
    const jit_body **todo = ig__calloc((size_t)n + 1, sizeof *todo);
    ingot_status st = b && todo ? INGOT_OK : ig__errf(err, INGOT_ERR_OUT_OF_MEMORY, "out of memory");
    for (int i = 0; i < n; i++) funcs[i] = NULL;
    for (int i = 0; i < n && st == INGOT_OK; i++) st = body_of(progs[i], i32[i], &b[i], err);
    char *src = NULL, *cubin = NULL;
    pthread_mutex_lock(&jit_lock);
    int n_todo = 0;
    for (int i = 0; i < n && st == INGOT_OK; i++) {
        bool known = false;
        for (int c = 0; c < jit_n && !known; c++) known = jit_cache[c].hash == b[i].hash;
        for (int t = 0; t < n_todo && !known; t++) known = todo[t]->hash == b[i].hash;
        if (!known) todo[n_todo++] = &b[i];
    }
    if (st == INGOT_OK && n_todo > 0 && jit_n + n_todo > JIT_CACHE)
        st = ig__errf(err, INGOT_ERR_CUDA, "more than %d compiled elementwise programs", JIT_CACHE);
    char arch[32];
    if (st == INGOT_OK && n_todo > 0) st = device_arch(arch, sizeof arch, err);
    if (st == INGOT_OK && n_todo > 0) st = unit_of(todo, n_todo, &src, err);
    if (st == INGOT_OK && n_todo > 0) st = cubin_of(src, arch, &cubin, err);
    cudaLibrary_t lib = NULL;
    /* loaded for the life of the process: every context of every engine may launch its kernels */
    if (st == INGOT_OK && n_todo > 0)
        st = IG_CU(err, NULL, cudaLibraryLoadData(&lib, cubin, NULL, NULL, 0, NULL, NULL, 0));
    for (int t = 0; t < n_todo && st == INGOT_OK; t++) {
        cudaKernel_t k = NULL;
        st = IG_CU(err, NULL, cudaLibraryGetKernel(&k, lib, todo[t]->name));
        jit_cache[jit_n + t].hash = todo[t]->hash;
        jit_cache[jit_n + t].func = (void *)k;
    }
    if (st == INGOT_OK) {
        jit_n += n_todo;
    } else if (lib) {
        cudaLibraryUnload(lib);
    }
    for (int i = 0; i < n && st == INGOT_OK; i++)
        for (int c = 0; c < jit_n && !funcs[i]; c++)
            if (jit_cache[c].hash == b[i].hash) funcs[i] = jit_cache[c].func;
    pthread_mutex_unlock(&jit_lock);
    ig__free(cubin);
    ig__free(src);
    for (int i = 0; b && i < n; i++) ig__free(b[i].text);
    ig__free(b);
    ig__free(todo);
    return st;
}
