/*
 * einsum.c -- Einsum: a general reference implementation of numpy's einsum for any number of operands.
 *
 * The equation ("bhqd,bhkd->bhqk", "...ij,...jk", "ii->i", "ij->") is parsed into labels: the letters,
 * and for "..." one label per broadcast dim (aligned from the right, numpy's rule, a dim of 1 broadcasts).
 * Without "->" the output is the ellipsis dims followed by the letters used exactly once, in ASCII
 * order. A letter repeated in one operand takes that operand's diagonal.
 *
 * Kernel: each output element (threads split the output) sums, over every combination of the labels
 * not in the output, the product of the operands' elements; every operand is walked through one stride
 * per label (strides of a repeated label add up). Floats accumulate in double and are rounded once,
 * integers in int64 wrapping like the type. Cost: output elements x contracted combinations x operands,
 * fine for what exporters emit (batched matrix products and transposes of attention), not a GEMM.
 */
#include "op.h"
#include "ops_internal.h"

#include <inttypes.h>
#include <stdio.h>

#define MAX_OPS   8
#define N_LETTERS 52
#define MAX_LAB   (N_LETTERS + IG_MAX_RANK)

typedef struct es_spec {
    int n_ops;
    int32_t rank[MAX_OPS];
    int8_t lab[MAX_OPS][IG_MAX_RANK]; /* label of each dim of each operand */
    int32_t out_rank;
    int8_t out_lab[IG_MAX_RANK];
    int n_ell; /* ellipsis dims (labels N_LETTERS .. N_LETTERS + n_ell - 1) */
    bool used[MAX_LAB];
} es_spec;

static int letter_id(char c)
{
    if (c >= 'a' && c <= 'z') return c - 'a';
    if (c >= 'A' && c <= 'Z') return 26 + c - 'A';
    return -1;
}

/* Parse one term into labels; the ellipsis takes `ell_dims` dims (given the operand's rank), or, for the
 * output, spec->n_ell. Returns false with a message in msg. */
static bool parse_term(const char *t, size_t len, int32_t rank, bool is_out, es_spec *s, int8_t *lab, int32_t *n_lab,
                       char *msg, size_t msz)
{
    int letters = 0, ell = 0;
    for (size_t i = 0; i < len; i++) {
        if (t[i] == '.') {
            if (i + 2 >= len || t[i + 1] != '.' || t[i + 2] != '.') {
                snprintf(msg, msz, "a '.' that is not part of '...'");
                return false;
            }
            ell++;
            i += 2;
        } else if (letter_id(t[i]) >= 0) {
            letters++;
        } else {
            snprintf(msg, msz, "character '%c' is not a letter", t[i]);
            return false;
        }
    }
    if (ell > 1) {
        snprintf(msg, msz, "more than one '...' in a term");
        return false;
    }
    int32_t e = is_out ? (ell ? s->n_ell : 0) : rank - letters;
    if (!is_out && (e < 0 || (!ell && e != 0))) {
        snprintf(msg, msz, "term '%.*s' names %d dims but its operand has rank %d", (int)len, t, letters, (int)rank);
        return false;
    }
    if (letters + e > IG_MAX_RANK) {
        snprintf(msg, msz, "term '%.*s' has more than %d dims", (int)len, t, IG_MAX_RANK);
        return false;
    }
    int32_t k = 0;
    for (size_t i = 0; i < len; i++) {
        if (t[i] == '.') {
            /* an operand's ellipsis dims are the last e of the n_ell broadcast dims */
            for (int32_t j = 0; j < e; j++) lab[k++] = (int8_t)(N_LETTERS + (is_out ? j : s->n_ell - e + j));
            i += 2;
        } else {
            lab[k++] = (int8_t)letter_id(t[i]);
        }
    }
    *n_lab = k;
    return true;
}

/* Parse the equation for operands of the given ranks. */
static bool parse_equation(const char *eq, int n_ops, const int32_t *ranks, es_spec *s, char *msg, size_t msz)
{
    memset(s, 0, sizeof *s);
    char buf[512];
    size_t n = 0;
    for (const char *p = eq; *p && n + 1 < sizeof buf; p++)
        if (*p != ' ') buf[n++] = *p;
    buf[n] = 0;
    if (n_ops < 1 || n_ops > MAX_OPS) {
        snprintf(msg, msz, "%d operands (1 to %d supported)", n_ops, MAX_OPS);
        return false;
    }
    const char *arrow = strstr(buf, "->");
    size_t lhs_len = arrow ? (size_t)(arrow - buf) : n;
    /* the ellipsis width: the largest over the operands */
    const char *p = buf;
    for (int i = 0; i < n_ops; i++) {
        const char *end = memchr(p, ',', lhs_len - (size_t)(p - buf));
        size_t len = end ? (size_t)(end - p) : lhs_len - (size_t)(p - buf);
        if (i < n_ops - 1 && !end) {
            snprintf(msg, msz, "the equation has fewer terms than the %d operands", n_ops);
            return false;
        }
        if (i == n_ops - 1 && end) {
            snprintf(msg, msz, "the equation has more terms than the %d operands", n_ops);
            return false;
        }
        int letters = 0;
        bool ell = false;
        for (size_t j = 0; j < len; j++) {
            if (letter_id(p[j]) >= 0) letters++;
            if (p[j] == '.') ell = true;
        }
        if (ell && ranks[i] - letters > s->n_ell) s->n_ell = ranks[i] - letters;
        p = end ? end + 1 : p + len;
    }
    if (s->n_ell > IG_MAX_RANK) {
        snprintf(msg, msz, "too many broadcast dims");
        return false;
    }
    p = buf;
    int count[MAX_LAB] = {0};
    s->n_ops = n_ops;
    for (int i = 0; i < n_ops; i++) {
        const char *end = memchr(p, ',', lhs_len - (size_t)(p - buf));
        size_t len = end ? (size_t)(end - p) : lhs_len - (size_t)(p - buf);
        if (!parse_term(p, len, ranks[i], false, s, s->lab[i], &s->rank[i], msg, msz)) return false;
        for (int32_t d = 0; d < s->rank[i]; d++) {
            s->used[s->lab[i][d]] = true;
            bool seen = false; /* count a label once per operand */
            for (int32_t e = 0; e < d; e++) seen |= s->lab[i][e] == s->lab[i][d];
            if (!seen) count[s->lab[i][d]]++;
        }
        p = end ? end + 1 : p + len;
    }
    if (arrow) {
        const char *o = arrow + 2;
        if (!parse_term(o, strlen(o), 0, true, s, s->out_lab, &s->out_rank, msg, msz)) return false;
        for (int32_t d = 0; d < s->out_rank; d++) {
            int l = s->out_lab[d];
            if (!s->used[l]) {
                snprintf(msg, msz, "output label '%c' appears in no input", l < 26 ? 'a' + l : 'A' + l - 26);
                return false;
            }
            for (int32_t e = 0; e < d; e++)
                if (s->out_lab[e] == l) {
                    snprintf(msg, msz, "output label repeated");
                    return false;
                }
        }
    } else { /* implicit: ellipsis dims, then the letters used once, in ASCII order (A-Z before a-z) */
        for (int j = 0; j < s->n_ell; j++) s->out_lab[s->out_rank++] = (int8_t)(N_LETTERS + j);
        for (int pass = 0; pass < 2; pass++)
            for (int l = pass ? 0 : 26; l < (pass ? 26 : N_LETTERS); l++)
                if (count[l] == 1) {
                    if (s->out_rank >= IG_MAX_RANK) {
                        snprintf(msg, msz, "more than %d output dims", IG_MAX_RANK);
                        return false;
                    }
                    s->out_lab[s->out_rank++] = (int8_t)l;
                }
    }
    return true;
}

/* ---- inference ---- */

static ingot_status einsum_infer(ig_infer *cx)
{
    ingot_status st;
    int n = ig__n_in(cx);
    int32_t ranks[MAX_OPS] = {0};
    const ig_attr *a = ig__node_attr(cx->node, "equation");
    if (!a || a->type != IG_ATTR_STRING || !a->s)
        return ig__fail(cx, INGOT_ERR_MODEL_INVALID, "attribute 'equation' (a string) is required");
    if (n > MAX_OPS) return ig__unsupported(cx, "%d operands (at most %d supported)", n, MAX_OPS);
    ingot_dtype t = ig__in(cx, 0)->dtype;
    for (int i = 0; i < n; i++) {
        ig_value *v = ig__in(cx, i);
        if ((st = ig__check_dtype(cx, i, IG_TS_NUM)) != INGOT_OK) return st;
        if (v->dtype != t)
            return ig__fail_shape(cx, "input %d '%s' has dtype %s, input 0 %s", i, v->name, ingot_dtype_name(v->dtype),
                                  ingot_dtype_name(t));
        if (v->shape.rank < 0) {
            ig_shape u = {.rank = -1};
            return ig__set_out(cx, 0, t, &u);
        }
        ranks[i] = v->shape.rank;
    }
    es_spec s;
    char msg[200];
    if (!parse_equation(a->s, n, ranks, &s, msg, sizeof msg))
        return ig__fail(cx, INGOT_ERR_MODEL_INVALID, "equation '%s': %s", a->s, msg);
    ig_dim size[MAX_LAB];
    bool have[MAX_LAB] = {false};
    for (int i = 0; i < n; i++) {
        const ig_shape *sh = &ig__in(cx, i)->shape;
        for (int32_t d = 0; d < s.rank[i]; d++) {
            int l = s.lab[i][d];
            ig_dim v = sh->d[d];
            if (!have[l] || (ig__dim_known(size[l]) && size[l].n == 1 && l >= N_LETTERS)) {
                size[l] = v;
                have[l] = true;
            } else if (ig__dim_known(v) && ig__dim_known(size[l]) && v.n != size[l].n &&
                       !(l >= N_LETTERS && v.n == 1)) {
                return ig__fail_shape(
                    cx, "equation '%s': label of input %d dim %d has size %" PRId64 " but %" PRId64 " elsewhere", a->s,
                    i, (int)d, v.n, size[l].n);
            }
        }
    }
    ig_shape out = {.rank = s.out_rank};
    for (int32_t d = 0; d < s.out_rank; d++) out.d[d] = size[s.out_lab[d]];
    return ig__set_out(cx, 0, t, &out);
}

/* ---- kernel ---- */

typedef struct es_job {
    es_spec s;
    int n_ops;
    const ig_tensor *in[MAX_OPS];
    ig_tensor *out;
    int32_t n_out, n_sum;
    int64_t out_size[IG_MAX_RANK], sum_size[MAX_LAB];
    int64_t out_st[MAX_OPS][IG_MAX_RANK], sum_st[MAX_OPS][MAX_LAB]; /* per operand, per label */
    int64_t n_comb;                                                 /* contracted combinations */
    bool fl;
} es_job;

static void es_range(void *arg, int64_t b, int64_t e)
{
    const es_job *j = arg;
    const int n = j->n_ops;
    for (int64_t o = b; o < e; o++) {
        int64_t base[MAX_OPS] = {0}, rem = o;
        for (int32_t d = j->n_out - 1; d >= 0; d--) {
            int64_t c = rem % j->out_size[d];
            rem /= j->out_size[d];
            for (int i = 0; i < n; i++) base[i] += c * j->out_st[i][d];
        }
        double accf = 0;
        uint64_t acci = 0;
        int64_t off[MAX_OPS], coord[MAX_LAB] = {0};
        for (int i = 0; i < n; i++) off[i] = base[i];
        for (int64_t c = 0; c < j->n_comb; c++) {
            if (j->fl) {
                double p = 1;
                for (int i = 0; i < n; i++) p *= ig__elem_f64(j->in[i]->dtype, j->in[i]->data, off[i]);
                accf += p;
            } else {
                uint64_t p = 1;
                for (int i = 0; i < n; i++) p *= (uint64_t)ig__elem_i64(j->in[i]->dtype, j->in[i]->data, off[i]);
                acci += p;
            }
            for (int32_t d = j->n_sum - 1; d >= 0; d--) { /* odometer over the contracted labels */
                for (int i = 0; i < n; i++) off[i] += j->sum_st[i][d];
                if (++coord[d] < j->sum_size[d]) break;
                for (int i = 0; i < n; i++) off[i] -= j->sum_st[i][d] * j->sum_size[d];
                coord[d] = 0;
            }
        }
        if (j->fl)
            ig__elem_set_f64(j->out->dtype, j->out->data, o, accf);
        else
            ig__elem_set_i64(j->out->dtype, j->out->data, o, (int64_t)acci);
    }
}

static ingot_status einsum_cpu(ig_exec *ex)
{
    int n = ex->n_in;
    if (n < 1 || n > MAX_OPS) return ig__exec_fail(ex, INGOT_ERR_MODEL_UNSUPPORTED_OP, "%d operands", n);
    es_job job, *j = &job; /* ~5 KB of strides: on the stack, no allocation per call */
    memset(j, 0, sizeof *j);
    int32_t ranks[MAX_OPS];
    for (int i = 0; i < n; i++) ranks[i] = ex->in[i]->rank;
    char msg[200];
    if (!parse_equation(ig__attr_str(ex->node, "equation", ""), n, ranks, &j->s, msg, sizeof msg))
        return ig__exec_fail(ex, INGOT_ERR_MODEL_INVALID, "equation: %s", msg);
    int64_t size[MAX_LAB];
    for (int l = 0; l < MAX_LAB; l++) size[l] = 1;
    for (int i = 0; i < n; i++)
        for (int32_t d = 0; d < j->s.rank[i]; d++)
            if (ex->in[i]->dims[d] != 1) size[j->s.lab[i][d]] = ex->in[i]->dims[d];
    for (int i = 0; i < n; i++)
        for (int32_t d = 0; d < j->s.rank[i]; d++) {
            int64_t v = ex->in[i]->dims[d];
            if (v != size[j->s.lab[i][d]] && !(v == 1 && j->s.lab[i][d] >= N_LETTERS))
                return ig__exec_fail(ex, INGOT_ERR_MODEL_SHAPE,
                                     "input %d dim %d has size %" PRId64 ", expected %" PRId64, i, (int)d, v,
                                     size[j->s.lab[i][d]]);
        }
    bool in_out[MAX_LAB] = {false};
    j->n_out = j->s.out_rank;
    for (int32_t d = 0; d < j->n_out; d++) {
        in_out[j->s.out_lab[d]] = true;
        j->out_size[d] = size[j->s.out_lab[d]];
    }
    int sum_lab[MAX_LAB];
    j->n_comb = 1;
    for (int l = 0; l < MAX_LAB; l++)
        if (j->s.used[l] && !in_out[l]) {
            sum_lab[j->n_sum] = l;
            j->sum_size[j->n_sum++] = size[l];
            j->n_comb *= size[l];
        }
    for (int i = 0; i < n; i++) {
        int64_t str[IG_MAX_RANK];
        ig__strides(ex->in[i], str);
        j->in[i] = ex->in[i];
        for (int32_t d = 0; d < j->s.rank[i]; d++) {
            if (ex->in[i]->dims[d] == 1) continue; /* broadcast: stride 0 */
            int l = j->s.lab[i][d];
            for (int32_t q = 0; q < j->n_out; q++)
                if (j->s.out_lab[q] == l) j->out_st[i][q] += str[d];
            for (int32_t q = 0; q < j->n_sum; q++)
                if (sum_lab[q] == l) j->sum_st[i][q] += str[d];
        }
    }
    j->n_ops = n;
    j->out = ex->out[0];
    j->fl = ig__dtype_is_float(ex->out[0]->dtype);
    if (ex->out[0]->numel > 0) {
        int64_t grain = (1 << 16) / (j->n_comb * n > 0 ? j->n_comb * n : 1);
        ig__parallel_for(ex->pool, ex->out[0]->numel, grain < 1 ? 1 : grain, es_range, j);
    }
    return INGOT_OK;
}

/* Two operations (multiply, add) per operand per term of every output element. */
static double einsum_flops(const ig_graph *g, const ig_node *n)
{
    int32_t ranks[MAX_OPS];
    if (n->n_inputs < 1 || n->n_inputs > MAX_OPS) return 0;
    for (int i = 0; i < n->n_inputs; i++) {
        if (n->inputs[i] < 0 || !ig__shape_known(&g->values[n->inputs[i]].shape)) return 0;
        ranks[i] = g->values[n->inputs[i]].shape.rank;
    }
    es_spec s;
    char msg[200];
    if (!parse_equation(ig__attr_str(n, "equation", ""), n->n_inputs, ranks, &s, msg, sizeof msg)) return 0;
    double size[MAX_LAB];
    for (int l = 0; l < MAX_LAB; l++) size[l] = 1;
    for (int i = 0; i < n->n_inputs; i++)
        for (int32_t d = 0; d < s.rank[i]; d++) {
            double v = (double)g->values[n->inputs[i]].shape.d[d].n;
            if (v != 1) size[s.lab[i][d]] = v;
        }
    double f = 2.0 * n->n_inputs;
    for (int l = 0; l < MAX_LAB; l++)
        if (s.used[l]) f *= size[l];
    return f;
}

const ig_op_def ig__op_einsum = {
    .name = "Einsum",
    .since = 12,
    .min_in = 1,
    .max_in = -1,
    .min_out = 1,
    .max_out = 1,
    .infer = einsum_infer,
    .cpu = einsum_cpu,
    .flops = einsum_flops,
};
