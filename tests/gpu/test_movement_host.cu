/*
 * test_movement_host.cu -- the pooling and depthwise-convolution kernels of movement.cu checked without a
 * GPU: each thread's body (a __host__ __device__ function) runs on the host, thread by thread, over
 * random problems in every layout (NCHW, channels-last, a channels-last slab of a wider tensor as a
 * Concat's input writes, rows of a wider W as a Slice leaves them), dtype, vector width and index width,
 * against a direct reference in double.
 *
 * Tensors sit in buffers of NaN around and between their elements, so a read outside the tensor (past an
 * edge, into another channel slab, a vector too wide) poisons an output the reference says is a number;
 * outputs sit in buffers of a byte pattern, so a write outside them is seen. Every vector access is
 * checked for alignment to its size (the host would not fault where the GPU does).
 */
#include "host_check.h"
#define IG_VEC_ALIGNED(p, bytes) check_aligned(p, bytes)

#include "../../src/cuda/kernels/movement.cu"

#include <math.h>
#include <vector>

#include "host_rng.h"

/* [n, c, h, w] in a buffer: its strides, offset (elements) and the buffer's size. */
struct view {
    int64_t d[4], s[4], off, size;
};

static view make_view(int layout, int64_t n, int64_t c, int64_t h, int64_t w)
{
    view v = {{n, c, h, w}, {0, 0, 0, 0}, 0, 0};
    const int64_t ce = layout == 2 ? c + rint_in(0, 9) : c, we = layout == 3 ? w + rint_in(1, 5) : w;
    if (layout == 1 || layout == 2) { /* channels-last; 2: channels c0 .. c0 + c of ce */
        v.s[1] = 1, v.s[3] = ce, v.s[2] = w * ce, v.s[0] = h * w * ce;
        v.off = layout == 2 ? rint_in(0, (int)(ce - c)) : 0;
    } else { /* NCHW; 3: rows of we, the view starting part-way into one */
        v.s[3] = 1, v.s[2] = we, v.s[1] = h * we, v.s[0] = c * h * we;
        v.off = layout == 3 ? rint_in(0, (int)(we - w)) : 0;
    }
    v.size = v.off + reach(v.d, v.s) + 1 + 16;
    return v;
}

static int64_t at(const view &v, int64_t n, int64_t c, int64_t h, int64_t w)
{
    return v.off + n * v.s[0] + c * v.s[1] + h * v.s[2] + w * v.s[3];
}

/* A buffer of elements of dtype dt: NaN (or a byte pattern), 16-byte aligned plus `skew` elements. */
struct buf {
    std::vector<uint4> mem;
    int dt, es, skew;
    buf(int dt_, int64_t n, int skew_, bool nan) : mem((size_t)((n + skew_) * 4 + 15) / 16 + 1), dt(dt_), skew(skew_)
    {
        es = esize_of(dt);
        memset(mem.data(), 0xa5, mem.size() * 16);
        if (nan)
            for (int64_t i = 0; i < n; i++) set(i, NAN);
    }
    char *base() { return (char *)mem.data() + skew * es; }
    void set(int64_t i, float v)
    {
        if (dt == INGOT_DTYPE_FLOAT) ((float *)base())[i] = v;
        if (dt == INGOT_DTYPE_FLOAT16) ((__half *)base())[i] = from_f<__half>(v);
        if (dt == INGOT_DTYPE_BFLOAT16) ((__nv_bfloat16 *)base())[i] = from_f<__nv_bfloat16>(v);
    }
    double get(int64_t i)
    {
        if (dt == INGOT_DTYPE_FLOAT16) return to_f(((__half *)base())[i]);
        if (dt == INGOT_DTYPE_BFLOAT16) return to_f(((__nv_bfloat16 *)base())[i]);
        return ((float *)base())[i];
    }
    bool pristine(int64_t i) /* still the 0xa5 pattern */
    {
        for (int b = 0; b < es; b++)
            if ((uint8_t)base()[i * es + b] != 0xa5) return false;
        return true;
    }
};

static void fill(buf &b, const view &v, double nan_rate)
{
    for (int64_t n = 0; n < v.d[0]; n++)
        for (int64_t c = 0; c < v.d[1]; c++)
            for (int64_t h = 0; h < v.d[2]; h++)
                for (int64_t w = 0; w < v.d[3]; w++)
                    b.set(at(v, n, c, h, w), rnd() % 100000 < nan_rate * 100000 ? NAN : (rnd() % 4001) / 1000.f - 2.f);
}

/* y against the reference; every byte of y's buffer outside the tensor untouched. */
static int compare(const char *what, buf &y, const view &yv, const std::vector<double> &ref)
{
    const double tol = y.dt == INGOT_DTYPE_FLOAT ? 1e-5 : y.dt == INGOT_DTYPE_FLOAT16 ? 2e-3 : 1e-2;
    std::vector<char> in(yv.size, 0);
    size_t k = 0;
    for (int64_t n = 0; n < yv.d[0]; n++)
        for (int64_t c = 0; c < yv.d[1]; c++)
            for (int64_t h = 0; h < yv.d[2]; h++)
                for (int64_t w = 0; w < yv.d[3]; w++, k++) {
                    const int64_t i = at(yv, n, c, h, w);
                    in[i] = 1;
                    const double g = y.get(i), r = ref[k];
                    const bool ok = isnan(r) ? isnan(g) : g == r || fabs(g - r) <= tol * (1 + fabs(r));
                    if (!ok) {
                        printf("FAIL %s: y[%lld,%lld,%lld,%lld] = %g, expected %g\n", what, (long long)n, (long long)c,
                               (long long)h, (long long)w, g, r);
                        return 1;
                    }
                }
    for (int64_t i = 0; i < yv.size; i++)
        if (!in[i] && !y.pristine(i)) {
            printf("FAIL %s: element %lld outside y written\n", what, (long long)i);
            return 1;
        }
    return 0;
}

static int aligned(const char *what)
{
    if (!misaligned) return 0;
    printf("FAIL %s: %lld vector accesses not aligned to their size\n", what, (long long)misaligned);
    return 1;
}

/* ---- pooling ---------------------------------------------------------------------------------------- */

static std::vector<double> pool_ref(const ig_pool_args &a, buf &x, const view &xv)
{
    std::vector<double> r;
    for (int64_t n = 0; n < a.n; n++)
        for (int64_t c = 0; c < a.c; c++)
            for (int64_t oh = 0; oh < a.oh; oh++)
                for (int64_t ow = 0; ow < a.ow; ow++) {
                    double acc = a.is_max ? -INFINITY : 0;
                    int cnt = 0;
                    for (int i = 0; i < a.kh; i++)
                        for (int j = 0; j < a.kw; j++) {
                            const int64_t ih = oh * a.sh - a.ph + i * a.dh, iw = ow * a.sw - a.pw + j * a.dw;
                            if (ih >= 0 && ih < a.h && iw >= 0 && iw < a.w) {
                                const double v = x.get(at(xv, n, c, ih, iw));
                                if (!a.is_max)
                                    acc += v;
                                else if (!isnan(acc) && (v > acc || isnan(v))) /* a NaN, once seen, stays */
                                    acc = v;
                                cnt++;
                            } else if (a.count_include_pad && ih >= -a.ph && ih < a.h + a.eh && iw >= -a.pw &&
                                       iw < a.w + a.ew) {
                                cnt++;
                            }
                        }
                    r.push_back(a.is_max ? acc : cnt ? acc / cnt : 0);
                }
    return r;
}

template <typename T, typename I> static void run_pool(const ig_pool_args &a, bool cl, int v, int s, int tw)
{
    const int64_t threads = cl ? a.n * a.oh * a.ow * (a.c / v) : a.n * a.c * a.oh * ((a.ow + tw - 1) / tw);
    for (I t = 0; t < (I)threads; t++) {
        if (cl) {
            if constexpr (sizeof(T) == 2)
                if (v == 8) pool_cl_thread<T, 8, I>(a, t);
            if (v == 4) pool_cl_thread<T, 4, I>(a, t);
            if (v == 2) pool_cl_thread<T, 2, I>(a, t);
            if (v == 1) pool_cl_thread<T, 1, I>(a, t);
        } else if (tw == 1) {
            pool_rows<T, 0, 1, I>(a, t);
        } else if (s == 1) {
            pool_rows<T, 1, 4, I>(a, t);
        } else {
            pool_rows<T, 2, 4, I>(a, t);
        }
    }
}

template <typename I> static void run_pool_t(const ig_pool_args &a, bool cl, int v, int s, int tw)
{
    if (a.dtype == INGOT_DTYPE_FLOAT) run_pool<float, I>(a, cl, v, s, tw);
    if (a.dtype == INGOT_DTYPE_FLOAT16) run_pool<__half, I>(a, cl, v, s, tw);
    if (a.dtype == INGOT_DTYPE_BFLOAT16) run_pool<__nv_bfloat16, I>(a, cl, v, s, tw);
}

static const int dtypes[3] = {INGOT_DTYPE_FLOAT, INGOT_DTYPE_FLOAT16, INGOT_DTYPE_BFLOAT16};
static const int channels[] = {1, 2, 3, 4, 5, 6, 8, 12, 16, 24, 36, 60};

static int pool_trial(int trial, int64_t *by_v)
{
    ig_pool_args a;
    memset(&a, 0, sizeof a);
    a.dtype = dtypes[rnd() % 3];
    a.is_max = rnd() % 2;
    a.count_include_pad = rnd() % 2;
    a.n = rint_in(1, 2);
    a.c = channels[rnd() % (sizeof channels / sizeof *channels)];
    a.h = rint_in(1, 12);
    a.w = rint_in(1, 14);
    const bool common = rnd() % 2; /* half the trials on the windows the fast paths take */
    a.kh = common ? 3 : rint_in(1, 5);
    a.kw = common ? 3 : rint_in(1, 5);
    a.sh = common ? rint_in(1, 2) : rint_in(1, 3);
    a.sw = common ? a.sh : rint_in(1, 3);
    a.dh = common ? 1 : rint_in(1, 2);
    a.dw = common ? 1 : rint_in(1, 2);
    a.ph = rint_in(0, a.kh - 1), a.eh = rint_in(0, a.kh - 1);
    a.pw = rint_in(0, a.kw - 1), a.ew = rint_in(0, a.kw - 1);
    const bool ceil_mode = rnd() % 2;
    const int64_t sh = a.h + a.ph + a.eh - ((a.kh - 1) * a.dh + 1), sw = a.w + a.pw + a.ew - ((a.kw - 1) * a.dw + 1);
    if (sh < 0 || sw < 0) return 0;
    a.oh = (ceil_mode ? (sh + a.sh - 1) / a.sh : sh / a.sh) + 1;
    a.ow = (ceil_mode ? (sw + a.sw - 1) / a.sw : sw / a.sw) + 1;
    if (ceil_mode && (a.oh - 1) * a.sh >= a.h + a.ph) a.oh--; /* the last window starts inside (ONNX) */
    if (ceil_mode && (a.ow - 1) * a.sw >= a.w + a.pw) a.ow--;
    const int xl = rint_in(0, 3), yl = rnd() % 2 ? xl : rint_in(0, 3);
    const view xv = make_view(xl, a.n, a.c, a.h, a.w), yv = make_view(yl, a.n, a.c, a.oh, a.ow);
    buf x(a.dtype, xv.size, rnd() % 4 ? 0 : rint_in(1, 7), true),
        y(a.dtype, yv.size, rnd() % 4 ? 0 : rint_in(1, 7), false);
    fill(x, xv, 0.002);
    a.x = x.base() + xv.off * x.es;
    a.y = y.base() + yv.off * y.es;
    memcpy(a.xs, xv.s, sizeof a.xs);
    memcpy(a.ys, yv.s, sizeof a.ys);
    const std::vector<double> ref = pool_ref(a, x, xv);
    const pool_plan p = plan_pool(&a);
    by_v[p.cl ? p.v : 8 + p.tw]++;
    char what[256];
    int fails = 0;
    /* the plan's kernel, and every narrower one, in both index widths */
    for (int v = p.cl ? p.v : 1; v >= 1; v /= 2)
        for (int tw = p.cl ? 1 : p.tw; tw >= 1; tw = tw == 1 ? 0 : 1)
            for (int i64 = 0; i64 < 2; i64++) {
                if (!i64 && !p.i32) continue;
                snprintf(what, sizeof what,
                         "pool trial %d %s dt %d n%lld c%lld %lldx%lld k%dx%d s%dx%d d%dx%d p%d,%d,%d,%d cip%d -> "
                         "%lldx%lld layouts %d/%d %s v%d tw%d i%d",
                         trial, a.is_max ? "max" : "avg", a.dtype, (long long)a.n, (long long)a.c, (long long)a.h,
                         (long long)a.w, a.kh, a.kw, a.sh, a.sw, a.dh, a.dw, a.ph, a.pw, a.eh, a.ew,
                         a.count_include_pad, (long long)a.oh, (long long)a.ow, xl, yl, p.cl ? "cl" : "rows", v, tw,
                         i64 ? 64 : 32);
                memset(y.mem.data(), 0xa5, y.mem.size() * 16);
                if (i64)
                    run_pool_t<int64_t>(a, p.cl, v, p.s, tw);
                else
                    run_pool_t<int32_t>(a, p.cl, v, p.s, tw);
                fails += compare(what, y, yv, ref) || aligned(what);
                if (fails) return fails;
            }
    return fails;
}

/* ---- depthwise convolution ---------------------------------------------------------------------------- */

static std::vector<double> dw_ref(const ig_dwconv_args &a, buf &x, const view &xv, buf &f, buf *b)
{
    std::vector<double> r;
    for (int64_t n = 0; n < a.n; n++)
        for (int64_t c = 0; c < a.c; c++)
            for (int64_t oh = 0; oh < a.oh; oh++)
                for (int64_t ow = 0; ow < a.ow; ow++) {
                    double acc = b ? b->get(c) : 0;
                    for (int i = 0; i < a.kh; i++)
                        for (int j = 0; j < a.kw; j++) {
                            const int64_t ih = oh * a.sh - a.ph + i * a.dh, iw = ow * a.sw - a.pw + j * a.dw;
                            if (ih >= 0 && ih < a.h && iw >= 0 && iw < a.w)
                                acc += x.get(at(xv, n, c, ih, iw)) * f.get((int64_t)(i * a.kw + j) * a.c + c);
                        }
                    if (a.act == IG_ACT_RELU && acc < 0) acc = 0;
                    if (a.act == IG_ACT_CLIP) acc = fmin(fmax(acc, a.lo), a.hi);
                    r.push_back(acc);
                }
    return r;
}

template <typename T, typename I> static void run_dw(const ig_dwconv_args &a, int v)
{
    for (I t = 0; t < (I)(a.n * a.oh * a.ow * a.c / v); t++) {
        if (v == 4) dwconv_cl<T, 4, I>(a, t);
        if (v == 2) dwconv_cl<T, 2, I>(a, t);
        if (v == 1) dwconv_cl<T, 1, I>(a, t);
    }
}

template <typename I> static void run_dw_t(const ig_dwconv_args &a, int v)
{
    if (a.dtype == INGOT_DTYPE_FLOAT) run_dw<float, I>(a, v);
    if (a.dtype == INGOT_DTYPE_FLOAT16) run_dw<__half, I>(a, v);
    if (a.dtype == INGOT_DTYPE_BFLOAT16) run_dw<__nv_bfloat16, I>(a, v);
}

static int dw_trial(int trial, int64_t *by_v)
{
    ig_dwconv_args a;
    memset(&a, 0, sizeof a);
    a.dtype = dtypes[rnd() % 3];
    a.act = rint_in(0, 2);
    a.lo = -0.5f, a.hi = 1.5f;
    a.n = rint_in(1, 2);
    a.c = channels[rnd() % (sizeof channels / sizeof *channels)];
    a.h = rint_in(1, 11);
    a.w = rint_in(1, 13);
    a.kh = a.kw = rnd() % 2 ? 3 : 5;
    a.sh = a.sw = rint_in(1, 2);
    a.dh = a.dw = rnd() % 4 ? 1 : 2;
    a.ph = a.pw = (a.kh - 1) / 2 * a.dh;
    a.oh = (a.h + 2 * a.ph - ((a.kh - 1) * a.dh + 1)) / a.sh + 1;
    a.ow = (a.w + 2 * a.pw - ((a.kw - 1) * a.dw + 1)) / a.sw + 1;
    if (a.oh < 1 || a.ow < 1) return 0;
    const int xl = rint_in(0, 3), yl = rnd() % 2 ? xl : rint_in(0, 3);
    const view xv = make_view(xl, a.n, a.c, a.h, a.w), yv = make_view(yl, a.n, a.c, a.oh, a.ow);
    buf x(a.dtype, xv.size, rnd() % 4 ? 0 : rint_in(1, 7), true),
        y(a.dtype, yv.size, rnd() % 4 ? 0 : rint_in(1, 7), false);
    buf f(a.dtype, a.kh * a.kw * a.c + 16, rnd() % 4 ? 0 : rint_in(1, 7), true), bb(a.dtype, a.c + 16, 0, true);
    const view fv = {{1, 1, 1, a.kh * a.kw * a.c}, {0, 0, 0, 1}, 0, 0}, bv = {{1, 1, 1, a.c}, {0, 0, 0, 1}, 0, 0};
    fill(x, xv, 0);
    fill(f, fv, 0);
    fill(bb, bv, 0);
    const bool bias = rnd() % 2;
    a.x = x.base() + xv.off * x.es;
    a.y = y.base() + yv.off * y.es;
    a.filt = f.base();
    a.b = bias ? bb.base() : NULL;
    memcpy(a.xs, xv.s, sizeof a.xs);
    memcpy(a.ys, yv.s, sizeof a.ys);
    const std::vector<double> ref = dw_ref(a, x, xv, f, bias ? &bb : NULL);
    const int64_t xd[4] = {a.n, a.c, a.h, a.w}, yd[4] = {a.n, a.c, a.oh, a.ow};
    const int vmax = vec_width(4, esize_of(a.dtype), a.c, xd, a.xs, yd, a.ys, a.x, a.y, a.filt, a.b);
    const bool i32 = fits_i32(a.n * a.c * a.oh * a.ow, reach(xd, a.xs), reach(yd, a.ys), a.kh * a.kw * a.c);
    by_v[vmax]++;
    char what[256];
    for (int v = vmax; v >= 1; v /= 2)
        for (int i64 = 0; i64 < 2; i64++) {
            if (!i64 && !i32) continue;
            snprintf(what, sizeof what,
                     "dwconv trial %d dt %d n%lld c%lld %lldx%lld k%d s%d d%d act %d bias %d layouts %d/%d v%d i%d",
                     trial, a.dtype, (long long)a.n, (long long)a.c, (long long)a.h, (long long)a.w, a.kh, a.sh, a.dh,
                     a.act, bias, xl, yl, v, i64 ? 64 : 32);
            memset(y.mem.data(), 0xa5, y.mem.size() * 16);
            if (i64)
                run_dw_t<int64_t>(a, v);
            else
                run_dw_t<int32_t>(a, v);
            if (compare(what, y, yv, ref) || aligned(what)) return 1;
        }
    return 0;
}

/* The launchers' choices on the shapes that matter: the vector width from strides and alignment. */
static int check_plans(void)
{
    int fails = 0;
    ig_pool_args a;
    memset(&a, 0, sizeof a);
    a.n = 64, a.c = 256, a.h = a.w = a.oh = a.ow = 28, a.kh = a.kw = 3, a.sh = a.sw = 1, a.dh = a.dw = 1;
    a.ph = a.pw = a.eh = a.ew = 1;
    const int64_t nchw[4] = {256 * 784, 784, 28, 1}, nhwc[4] = {784 * 256, 1, 28 * 256, 256};
    struct {
        int dt;
        int64_t c;
        const int64_t *s;
        uintptr_t px;
        bool cl;
        int v, tw;
    } cases[] = {
        {INGOT_DTYPE_FLOAT16, 256, nhwc, 0, true, 8, 0},  {INGOT_DTYPE_FLOAT16, 256, nhwc, 8, true, 4, 0},
        {INGOT_DTYPE_FLOAT16, 256, nhwc, 2, true, 1, 0},  {INGOT_DTYPE_FLOAT, 256, nhwc, 0, true, 4, 0},
        {INGOT_DTYPE_BFLOAT16, 256, nhwc, 4, true, 2, 0}, {INGOT_DTYPE_FLOAT16, 256, nchw, 0, false, 0, 4},
    };
    for (auto &k : cases) {
        a.dtype = k.dt;
        a.c = k.c;
        memcpy(a.xs, k.s, sizeof a.xs);
        memcpy(a.ys, k.s, sizeof a.ys);
        a.x = (const void *)(uintptr_t)(4096 + k.px);
        a.y = (void *)(uintptr_t)4096;
        const pool_plan p = plan_pool(&a);
        if (p.cl != k.cl || (k.cl && p.v != k.v) || (!k.cl && p.tw != k.tw) || !p.i32) {
            printf("FAIL plan: dtype %d x at +%d: %s v%d tw%d i32 %d\n", k.dt, (int)k.px, p.cl ? "cl" : "rows", p.v,
                   p.tw, p.i32);
            fails++;
        }
    }
    /* googlenet's [64, 256, 28, 28] fits 32-bit indices; [64, 64, 1024, 1024] (2^32 elements) does not */
    a.h = a.w = a.oh = a.ow = 1024;
    a.c = 64;
    const int64_t big[4] = {64 * 1024 * 1024, 1024 * 1024, 1024, 1};
    memcpy(a.xs, big, sizeof a.xs);
    memcpy(a.ys, big, sizeof a.ys);
    if (plan_pool(&a).i32) {
        printf("FAIL plan: 2^32 elements with 32-bit indices\n");
        fails++;
    }
    return fails;
}

int main(int argc, char **argv)
{
    int trials = argc > 1 ? atoi(argv[1]) : 3000, fails = check_plans();
    int64_t pool_by[16] = {0}, dw_by[16] = {0};
    for (int t = 0; t < trials && !fails; t++) fails += pool_trial(t, pool_by);
    for (int t = 0; t < trials && !fails; t++) fails += dw_trial(t, dw_by);
    printf("pool plans: channels-last x8 %lld, x4 %lld, x2 %lld, x1 %lld; rows x4 %lld, x1 %lld\n",
           (long long)pool_by[8], (long long)pool_by[4], (long long)pool_by[2], (long long)pool_by[1],
           (long long)pool_by[12], (long long)pool_by[9]);
    printf("dwconv widths: x4 %lld, x2 %lld, x1 %lld\n", (long long)dw_by[4], (long long)dw_by[2], (long long)dw_by[1]);
    printf("%s: %d trials each\n", fails ? "FAIL" : "PASS", trials);
    return fails ? 1 : 0;
}
