/*
 * lower_ew.c -- elementwise steps: one kernel (elementwise.cu) runs a register program over every
 * element of its output, each operand read through its own strides (0 for broadcast dims). Pointwise
 * programs come from the graph (ingot.Pointwise, the epilogues of the fused ops) or from one
 * elementwise node the optimizer left alone (translated by src/ops/pw.c, the same translation the
 * optimizer uses); copies, layout changes and dtype conversions are programs of one LOAD.
 */
#include "lower_internal.h"

#include <inttypes.h>
#include <stdio.h>

_Static_assert(IG_PW_NREG == IG_EW_NREG && IG_PW_MAX_IN == IG_EW_MAX_IN &&
                   IG_PW_MAX_OPS + IG_PW_MAX_IN <= IG_EW_MAX_OPS,
               "pointwise programs (src/ops/pw.h) must fit the CUDA elementwise kernel");

ingot_status ig__lw_ew_step(ig_lower *L, int32_t node_id, const char *what, const ig_pw_reg_op *ops, int32_t n_ops,
                            int result, const int32_t *in, int32_t n_in, bool int_math, int32_t out, int io_patch)
{
    ig_cu_prog *p = L->p;
    if (n_in > IG_EW_MAX_IN || n_ops > IG_EW_MAX_OPS)
        return ig__errf(L->err, INGOT_ERR_INTERNAL, "elementwise program of %d inputs and %d ops", (int)n_in,
                        (int)n_ops);
    ig_cu_step *s = ig__lw_step(L, IG_ST_EW, node_id, what);
    if (!s) return ig__lw_oom(L);
    s->io_patch = io_patch;
    const ig_cu_tensor *o = &p->tensors[out];
    ig_cu_ew *w = &s->u.ew;
    w->out = out;
    w->n_in = n_in;
    ig_ew_args *a = &w->args;
    memset(a, 0, sizeof *a);
    int32_t r = o->rank;
    int64_t dims[IG_MAX_RANK], ost[IG_MAX_RANK], ist[IG_EW_MAX_IN][IG_MAX_RANK];
    for (int32_t k = 0; k < r; k++) {
        dims[k] = o->dims[k];
        ost[k] = o->strides[k];
    }
    for (int i = 0; i < n_in; i++) {
        w->in[i] = in[i];
        const ig_cu_tensor *t = &p->tensors[in[i]];
        if (t->rank > r)
            return ig__errf(L->err, INGOT_ERR_INTERNAL, "elementwise input of rank %d into rank %d", (int)t->rank,
                            (int)r);
        int32_t pad = r - t->rank;
        for (int32_t k = 0; k < r; k++) {
            if (k < pad) {
                ist[i][k] = 0;
                continue;
            }
            int64_t d = t->dims[k - pad];
            if (d == dims[k])
                ist[i][k] = t->strides[k - pad];
            else if (d == 1)
                ist[i][k] = 0;
            else
                return ig__errf(L->err, INGOT_ERR_INTERNAL, "elementwise input dim %" PRId64 " against %" PRId64, d,
                                dims[k]);
        }
        a->in_dtype[i] = t->dtype;
    }
    /* iterate in the output's memory order (axes by decreasing output stride); when that leaves an
     * innermost run too short for vector accesses (an NCHW image written channels-last: runs of 3),
     * iterate in the first input's order instead (runs of H*W) -- any order is correct */
    int64_t cd[IG_MAX_RANK], co[IG_MAX_RANK], ci[IG_EW_MAX_IN][IG_MAX_RANK];
    int32_t n = 0;
    for (int attempt = 0; attempt < 2; attempt++) {
        const int64_t *key = attempt == 0 || n_in == 0 ? ost : ist[0];
        int32_t perm[IG_MAX_RANK];
        for (int32_t k = 0; k < r; k++) perm[k] = k;
        for (int32_t i = 1; i < r; i++)
            for (int32_t j = i; j > 0; j--) {
                int32_t x = perm[j - 1], y = perm[j];
                int64_t sx = dims[x] == 1 ? 0 : key[x], sy = dims[y] == 1 ? 0 : key[y];
                if (sx < sy) {
                    perm[j - 1] = y;
                    perm[j] = x;
                }
            }
        n = 0;
        for (int32_t q = 0; q < r; q++) {
            int32_t k = perm[q];
            if (dims[k] == 1) continue;
            if (n > 0) { /* merge with the previous dim when every operand steps through both evenly */
                bool ok = co[n - 1] == ost[k] * dims[k];
                for (int i = 0; i < n_in && ok; i++) ok = ci[i][n - 1] == ist[i][k] * dims[k];
                if (ok) {
                    cd[n - 1] *= dims[k];
                    co[n - 1] = ost[k];
                    for (int i = 0; i < n_in; i++) ci[i][n - 1] = ist[i][k];
                    continue;
                }
            }
            cd[n] = dims[k];
            co[n] = ost[k];
            for (int i = 0; i < n_in; i++) ci[i][n] = ist[i][k];
            n++;
        }
        if (n == 0) {
            cd[0] = 1;
            co[0] = 1;
            for (int i = 0; i < n_in; i++) ci[i][0] = 0;
            n = 1;
        }
        bool short_run = n > 1 && cd[n - 1] < 8 && n_in > 0;
        if (!short_run || attempt == 1) break;
        /* keep this order unless the input's order gives a longer innermost run */
        int64_t best_inner = 1;
        for (int32_t k = 0; k < r; k++)
            if (dims[k] > 1 && ist[0][k] == 1 && dims[k] > best_inner) best_inner = dims[k];
        if (best_inner < 8) break;
    }
    if (n > IG_EW_MAX_RANK) {
        if (node_id >= 0)
            return ig__lw_fail(L, node_id, INGOT_ERR_MODEL_UNSUPPORTED_OP,
                               "%s: the strides of its operands leave %d dims (at most %d supported)",
                               what ? what : "elementwise", (int)n, IG_EW_MAX_RANK);
        return ig__errf(L->err, INGOT_ERR_MODEL_UNSUPPORTED_OP,
                        "%s: the strides of its operands leave %d dims (at most %d supported)",
                        what ? what : "elementwise", (int)n, IG_EW_MAX_RANK);
    }
    int64_t total = 1;
    for (int32_t k = 0; k < n; k++) total *= cd[k];
    a->n = (int64_t)ig__lw_numel(o->rank, o->dims) == 0 ? 0 : total;
    a->rank = n;
    a->int_math = int_math;
    a->out_dtype = o->dtype;
    for (int32_t k = 0; k < n; k++) {
        a->dims[k] = cd[k];
        a->out_strides[k] = co[k];
    }
    int64_t sacc = 1;
    a->out_contig = 1;
    for (int32_t k = n - 1; k >= 0; k--) {
        if (co[k] != sacc) a->out_contig = 0;
        sacc *= cd[k];
    }
    a->n_in = n_in;
    for (int i = 0; i < n_in; i++) {
        bool zero = true, same = a->out_contig != 0;
        for (int32_t k = 0; k < n; k++) {
            a->in_strides[i][k] = ci[i][k];
            if (ci[i][k] != 0) zero = false;
            if (ci[i][k] != co[k]) same = false;
        }
        a->in_kind[i] = zero ? 2 : same ? 1 : 0;
    }
    a->n_ops = n_ops;
    for (int32_t i = 0; i < n_ops; i++) {
        ig_ew_op *d = &a->ops[i];
        memset(d, 0, sizeof *d);
        d->code = ops[i].code;
        d->a = ops[i].a;
        d->b = ops[i].b;
        d->c = ops[i].c;
        d->dst = ops[i].dst;
        d->k = ops[i].k;
        d->k2 = ops[i].k2;
    }
    a->result = (uint8_t)result;
    return INGOT_OK;
}

ingot_status ig__lw_copy(ig_lower *L, int32_t node_id, const char *what, int32_t src, int32_t dst, int io_patch)
{
    ig_pw_reg_op load = {.code = IG_PW_LOAD, .a = 0, .b = IG_PW_REF_NONE, .c = IG_PW_REF_NONE, .dst = 0};
    bool int_math = !ig__dtype_is_float(ig__lw_T(L, src)->dtype) && !ig__dtype_is_float(ig__lw_T(L, dst)->dtype);
    return ig__lw_ew_step(L, node_id, what, &load, 1, 0, &src, 1, int_math, dst, io_patch);
}

int32_t ig__lw_materialize(ig_lower *L, int32_t node_id, int32_t t, bool nhwc, const char *what)
{
    ig_cu_tensor c = *ig__lw_T(L, t);
    int32_t d = ig__lw_dense(L, c.dtype, c.rank, c.dims, nhwc);
    if (d < 0) return -1;
    if (ig__lw_copy(L, node_id, what, t, d, 0) != INGOT_OK) return -2;
    return d;
}

int32_t ig__lw_contig(ig_lower *L, int32_t node_id, int32_t t)
{
    if (t < 0 || ig__cu_tensor_contig(ig__lw_T(L, t))) return t;
    return ig__lw_materialize(L, node_id, t, false, "contiguous copy");
}

/* The output of a program keeps the innermost (contiguous) axis of its main input -- the first input
 * of the output's full shape: channels-last stays channels-last, and a transposed operand (K^T) is
 * written transposed, so the copy streams along one axis and a GEMM downstream takes the transpose for
 * free. Otherwise the output is dense in logical order. */
static int32_t inner_axis_of(ig_lower *L, const int32_t *in, int32_t n_in, int32_t rank, const int64_t *dims)
{
    for (int i = 0; i < n_in; i++) {
        const ig_cu_tensor *t = ig__lw_T(L, in[i]);
        if (t->rank != rank || t->rank < 2) continue;
        bool full = true;
        for (int32_t k = 0; k < t->rank; k++)
            if (t->dims[k] != dims[k]) full = false;
        if (!full) continue;
        int32_t inner = -1;
        for (int32_t k = 0; k < t->rank; k++)
            if (t->strides[k] == 1 && t->dims[k] > 1) inner = k;
        return inner < 0 ? t->rank - 1 : inner;
    }
    return -1;
}

int32_t ig__lw_program_out(ig_lower *L, const int32_t *in, int32_t n_in, ingot_dtype dt, const int64_t *dims,
                           int32_t rank, int32_t v)
{
    int32_t t = ig__lw_dense_inner(L, dt, rank, dims, inner_axis_of(L, in, n_in, rank, dims));
    return t >= 0 && v >= 0 ? ig__lw_concat_slot(L, v, t) : t;
}

int32_t ig__lw_program(ig_lower *L, int32_t node_id, const ig_pw_prog *prog, const int32_t *in, ingot_dtype out_dtype,
                       const int64_t *out_dims, int32_t out_rank, int32_t out)
{
    ig_pw_reg_op ops[IG_EW_MAX_OPS];
    int result = 0;
    int n_ops = ig__pw_to_regs(prog, ops, IG_EW_MAX_OPS, &result);
    if (n_ops < 0) {
        ig__lw_fail(L, node_id, INGOT_ERR_INTERNAL, "the pointwise program does not fit the elementwise kernel");
        return -1;
    }
    if (out < 0 && (out = ig__lw_program_out(L, in, prog->n_in, out_dtype, out_dims, out_rank, -1)) < 0) {
        ig__lw_oom(L);
        return -1;
    }
    if (ig__lw_ew_step(L, node_id, NULL, ops, n_ops, result, in, prog->n_in, prog->int_math, out, 0) != INGOT_OK)
        return -1;
    return out;
}

/* ---- elementwise nodes ------------------------------------------------------------------------------ */

/* The device tensors of node id's program inputs (every input but the scalar constants, which fold into
 * instructions' k); in_ref gets the program ref of each node input. */
static ingot_status gather_inputs(ig_lower *L, int32_t id, ig_pw_prog *prog, int16_t *in_ref, int32_t *tensors)
{
    const ig_node *n = ig__lw_node(L, id);
    prog->n_in = 0;
    for (int32_t i = 0; i < n->n_inputs; i++) {
        int32_t v = n->inputs[i], j = 0;
        double k;
        in_ref[i] = IG_PW_NONE;
        if (v < 0) continue;
        if (ig__pw_scalar_const(L->g, v, &k)) {
            in_ref[i] = IG_PW_K;
            continue;
        }
        while (j < i && n->inputs[j] != v) j++;
        if (j < i) { /* the same value twice: one input */
            in_ref[i] = in_ref[j];
            continue;
        }
        if (prog->n_in >= IG_PW_MAX_IN)
            return ig__lw_fail(L, id, INGOT_ERR_MODEL_UNSUPPORTED_OP, "more than %d tensor inputs", IG_PW_MAX_IN);
        int32_t t = ig__lw_get(L, v);
        if (t < 0)
            return ig__lw_fail(L, id, INGOT_ERR_INTERNAL, "input '%s' has no device tensor", L->g->values[v].name);
        tensors[prog->n_in] = t;
        in_ref[i] = (int16_t)prog->n_in++;
    }
    return INGOT_OK;
}

static bool node_int_math(ig_lower *L, const ig_node *n)
{
    for (int32_t i = 0; i < n->n_inputs; i++)
        if (n->inputs[i] >= 0 && ig__dtype_is_float(ig__lw_val(L, n->inputs[i])->dtype)) return false;
    for (int32_t j = 0; j < n->n_outputs; j++)
        if (n->outputs[j] >= 0 && ig__dtype_is_float(ig__lw_val(L, n->outputs[j])->dtype)) return false;
    return true;
}

ingot_status ig__lw_elementwise(ig_lower *L, int32_t id)
{
    const ig_node *n = ig__lw_node(L, id);
    ig_pw_prog prog;
    ig__pw_init(&prog, 0, node_int_math(L, n));
    int16_t in_ref[16];
    int32_t tensors[IG_PW_MAX_IN];
    if (n->n_inputs > 16) return ig__lw_fail(L, id, INGOT_ERR_MODEL_UNSUPPORTED_OP, "more than 16 inputs");
    ingot_status st = gather_inputs(L, id, &prog, in_ref, tensors);
    if (st != INGOT_OK) return st;
    int16_t result;
    if ((st = ig__pw_append_node(L->g, n, in_ref, &prog, &result, L->err)) != INGOT_OK) return st;
    int32_t yv = n->outputs[0];
    int64_t dims[IG_MAX_RANK];
    int32_t rank = ig__lw_value_dims(L, yv, dims);
    ingot_dtype dt = ig__lw_dev_dtype(L->p, ig__lw_val(L, yv)->dtype);
    int32_t out = ig__lw_program_out(L, tensors, prog.n_in, dt, dims, rank, yv);
    if (out < 0) return ig__lw_oom(L);
    if ((out = ig__lw_program(L, id, &prog, tensors, dt, dims, rank, out)) < 0) return ig__lw_status(L);
    L->p->val_tensor[yv] = out;
    return INGOT_OK;
}

/* BatchNormalization the optimizer did not fold (its parameters constant): y = x * scale[c] + shift[c]
 * with the two vectors computed at build time. */
ingot_status ig__lw_batchnorm(ig_lower *L, int32_t id)
{
    const ig_node *n = ig__lw_node(L, id);
    const ig_value *x = ig__lw_val(L, n->inputs[0]);
    int32_t rank = x->shape.rank;
    int64_t C = x->shape.d[1].n, dims[IG_MAX_RANK], st[IG_MAX_RANK];
    dims[0] = C;
    st[0] = 1;
    for (int32_t q = 1; q < rank - 1; q++) {
        dims[q] = 1;
        st[q] = 0;
    }
    int32_t in[3] = {ig__lw_get(L, n->inputs[0]), -1, -1};
    if (in[0] < 0) return ig__lw_fail(L, id, INGOT_ERR_INTERNAL, "input has no device tensor");
    for (int q = 0; q < 2; q++) {
        ig_cu_wreq r = {0};
        r.kind = q == 0 ? IG_W_BN_SCALE : IG_W_BN_SHIFT;
        r.src = -1;
        for (int j = 0; j < 4; j++) r.bn[j] = n->inputs[1 + j];
        r.eps = ig__attr_float(n, "epsilon", 1e-5f);
        r.scale = 1;
        r.dtype = INGOT_DTYPE_FLOAT;
        r.n_out = (int32_t)C;
        r.bytes = (size_t)C * 4;
        if ((in[1 + q] = ig__lw_weight(L, &r, rank - 1, dims, st)) < 0) return ig__lw_oom(L);
    }
    ig_pw_prog prog;
    memset(&prog, 0, sizeof prog);
    prog.n_in = 3;
    prog.n_ops = 1;
    prog.op[0] = (ig_pw_inst){.code = IG_PW_MULADD, .a = 0, .b = 1, .c = 2};
    int64_t od[IG_MAX_RANK];
    int32_t orank = ig__lw_value_dims(L, n->outputs[0], od);
    int32_t out = ig__lw_program(L, id, &prog, in, ig__lw_T(L, in[0])->dtype, od, orank, -1);
    if (out < 0) return ig__lw_status(L);
    L->p->val_tensor[n->outputs[0]] = out;
    return INGOT_OK;
}

ingot_status ig__lw_pointwise(ig_lower *L, int32_t id)
{
    const ig_node *n = ig__lw_node(L, id);
    ig_pw_prog prog;
    ingot_status st = ig__pw_decode(L->g, n, "", n->n_inputs, &prog, L->err);
    if (st != INGOT_OK) return st;
    int32_t in[IG_PW_MAX_IN];
    for (int32_t i = 0; i < prog.n_in; i++)
        if ((in[i] = ig__lw_get(L, n->inputs[i])) < 0)
            return ig__lw_fail(L, id, INGOT_ERR_INTERNAL, "input %d has no device tensor", (int)i);
    int32_t yv = n->outputs[0];
    int64_t dims[IG_MAX_RANK];
    int32_t rank = ig__lw_value_dims(L, yv, dims);
    ingot_dtype dt = ig__lw_dev_dtype(L->p, ig__lw_val(L, yv)->dtype);
    int32_t out = ig__lw_program_out(L, in, prog.n_in, dt, dims, rank, yv);
    if (out < 0) return ig__lw_oom(L);
    if ((out = ig__lw_program(L, id, &prog, in, dt, dims, rank, out)) < 0) return ig__lw_status(L);
    L->p->val_tensor[yv] = out;
    return INGOT_OK;
}

/* Mean(x0, .., x(n-1)) with broadcasting: one program (x0 + .. + x(n-1)) / n when the inputs fit one
 * (IG_PW_MAX_IN), else partial sums of as many as fit, kept in fp32, each the first input of the next. */
ingot_status ig__lw_mean(ig_lower *L, int32_t id)
{
    const ig_node *n = ig__lw_node(L, id);
    int32_t yv = n->outputs[0], acc = -1, i = 0;
    int64_t dims[IG_MAX_RANK];
    int32_t rank = ig__lw_value_dims(L, yv, dims);
    while (i < n->n_inputs) {
        int32_t in[IG_PW_MAX_IN], m = 0;
        if (acc >= 0) in[m++] = acc;
        for (; m < IG_PW_MAX_IN && i < n->n_inputs; i++)
            if ((in[m++] = ig__lw_get(L, n->inputs[i])) < 0)
                return ig__lw_fail(L, id, INGOT_ERR_INTERNAL, "input %d has no device tensor", (int)i);
        bool last = i == n->n_inputs;
        ig_pw_prog prog;
        memset(&prog, 0, sizeof prog);
        prog.n_in = m;
        int16_t sum = 0; /* SSA value of the running sum */
        for (int32_t j = 1; j < m; j++) {
            prog.op[prog.n_ops] = (ig_pw_inst){.code = IG_PW_ADD, .a = sum, .b = (int16_t)j, .c = IG_PW_NONE};
            sum = (int16_t)(m + prog.n_ops++);
        }
        if (last) /* divided, not multiplied by 1/n: the CPU op's s / n */
            prog.op[prog.n_ops++] =
                (ig_pw_inst){.code = IG_PW_DIV, .a = sum, .b = IG_PW_K, .c = IG_PW_NONE, .k = (float)n->n_inputs};
        ingot_dtype t = last ? ig__lw_dev_dtype(L->p, ig__lw_val(L, yv)->dtype) : INGOT_DTYPE_FLOAT;
        if ((acc = ig__lw_program(L, id, &prog, in, t, dims, rank, -1)) < 0) return ig__lw_status(L);
    }
    L->p->val_tensor[yv] = acc;
    return INGOT_OK;
}

const char *ig__lw_supports_mean(const ig_graph *g, const ig_node *n)
{
    ingot_dtype t = g->values[n->outputs[0]].dtype;
    if (!ig__dtype_is_float(t) || t == INGOT_DTYPE_DOUBLE) return "only fp32/fp16/bf16 inputs";
    return NULL;
}

const char *ig__lw_supports_elementwise(const ig_graph *g, const ig_node *n)
{
    if (n->op == IG_OP_clip)
        for (int32_t i = 1; i < n->n_inputs; i++)
            if (n->inputs[i] >= 0 && !(g->values[n->inputs[i]].flags & IG_VAL_CONST))
                return "Clip bounds must be constants";
    return NULL;
}

/* ---- epilogues of fused GEMMs and convolutions ------------------------------------------------------ */

int ig__lw_epi_kind(const ig_pw_prog *e)
{
    if (e->n_ops == 0) return IG_LW_EPI_NONE;
    const ig_pw_inst *a = &e->op[0], *b = &e->op[e->n_ops - 1];
    if (e->n_ops == 1 && a->a == 0) {
        if (a->code == IG_PW_RELU) return IG_LW_EPI_RELU;
        if (a->code == IG_PW_CLIP) return IG_LW_EPI_CLIP;
        if (a->code == IG_PW_GELU_ERF || a->code == IG_PW_GELU_TANH) return IG_LW_EPI_GELU;
    }
    bool res = e->n_in == 2 && a->code == IG_PW_ADD && ((a->a == 0 && a->b == 1) || (a->a == 1 && a->b == 0));
    if (res && e->n_ops == 1) return IG_LW_EPI_RES;
    if (res && e->n_ops == 2 && b->code == IG_PW_RELU && b->a == e->n_in) return IG_LW_EPI_RES_RELU;
    return IG_LW_EPI_OTHER;
}

/* Program ref r of the epilogue, in the program that reads acc, bias (when has_bias) and the extras
 * and adds the bias first. */
static int16_t epi_ref(int16_t r, const ig_pw_prog *e, int32_t n_in, bool has_bias)
{
    if (r < 0) return r;
    if (r == 0) return has_bias ? (int16_t)n_in : 0;
    if (r < e->n_in) return (int16_t)(r + has_bias);
    return (int16_t)(n_in + has_bias + (r - e->n_in));
}

int32_t ig__lw_epilogue(ig_lower *L, int32_t node_id, const ig_pw_prog *epi, int32_t acc, int32_t bias,
                        const int32_t *extras, ingot_dtype out_dtype, const int64_t *out_dims, int32_t out_rank,
                        int32_t v)
{
    bool has_bias = bias >= 0;
    int32_t n_in = epi->n_in + has_bias, in[IG_PW_MAX_IN + 1];
    if (has_bias && (n_in > IG_PW_MAX_IN || epi->n_ops + 1 > IG_PW_MAX_OPS)) {
        /* no room to add the bias inside: acc + bias first, then the epilogue */
        ig_pw_prog add = {.n_in = 2, .n_ops = 1};
        add.op[0] = (ig_pw_inst){.code = IG_PW_ADD, .a = 0, .b = 1, .c = -1};
        int32_t two[2] = {acc, bias};
        const ig_cu_tensor *A = ig__lw_T(L, acc);
        int32_t sum = ig__lw_program(L, node_id, &add, two, A->dtype, A->dims, A->rank, -1);
        if (sum < 0) return -1;
        return ig__lw_epilogue(L, node_id, epi, sum, -1, extras, out_dtype, out_dims, out_rank, v);
    }
    ig_pw_prog p;
    memset(&p, 0, sizeof p);
    p.n_in = n_in;
    p.int_math = epi->int_math;
    in[0] = acc;
    if (has_bias) {
        in[1] = bias;
        p.op[p.n_ops++] = (ig_pw_inst){.code = IG_PW_ADD, .a = 0, .b = 1, .c = -1};
    }
    for (int32_t j = 1; j < epi->n_in; j++) in[j + has_bias] = extras[j - 1];
    for (int32_t i = 0; i < epi->n_ops; i++) {
        ig_pw_inst x = epi->op[i];
        x.a = epi_ref(x.a, epi, n_in, has_bias);
        x.b = epi_ref(x.b, epi, n_in, has_bias);
        x.c = epi_ref(x.c, epi, n_in, has_bias);
        p.op[p.n_ops++] = x;
    }
    int32_t out = ig__lw_program_out(L, in, p.n_in, out_dtype, out_dims, out_rank, v);
    if (out < 0) {
        ig__lw_oom(L);
        return -1;
    }
    return ig__lw_program(L, node_id, &p, in, out_dtype, out_dims, out_rank, out);
}
