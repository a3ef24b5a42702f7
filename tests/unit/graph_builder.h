/*
 * graph_builder.h -- one-node test graphs for the op unit tests: inputs, initializers, a node with
 * attributes, inference through the op's descriptor (as the driver would call it), and a run of its CPU
 * kernel on constant inputs.
 */
#ifndef INGOT_TEST_GRAPH_BUILDER_H
#define INGOT_TEST_GRAPH_BUILDER_H

#include "ops/op.h"

#include <stdio.h>
#include <string.h>

#if defined(__GNUC__)
#pragma GCC diagnostic ignored "-Wunused-function"
#endif

typedef struct T {
    ig_graph g;
    ig_arena fold;
    ig_err err;
} T;

static void t_init(T *t)
{
    memset(t, 0, sizeof *t);
    ig__graph_init(&t->g, &t->err);
    ig__arena_init(&t->fold);
}

static void t_free(T *t)
{
    ig__arena_free(&t->fold);
    ig__graph_free(&t->g);
}

static ig_dim D(int64_t n) { return ig__dim_const(n); }
static ig_dim S(T *t, const char *name)
{
    ig_dim d = {1, ig__graph_symbol(&t->g, name)};
    return d;
}

static ig_value *V(T *t, const char *name)
{
    int32_t id = ig__graph_value(&t->g, name, &t->err); /* may grow the value array: index after */
    return &t->g.values[id];
}

/* A graph input of dtype dt and shape dims. */
static ig_value *t_input(T *t, const char *name, ingot_dtype dt, int rank, const ig_dim *dims)
{
    ig_value *v = V(t, name);
    v->dtype = dt;
    v->shape.rank = rank;
    for (int i = 0; i < rank; i++) v->shape.d[i] = dims[i];
    v->flags |= IG_VAL_INPUT;
    return v;
}

/* An initializer holding a copy of data. */
static ig_value *t_const(T *t, const char *name, ingot_dtype dt, int rank, const int64_t *dims, const void *data)
{
    ig_value *v = V(t, name);
    size_t n = 1;
    for (int i = 0; i < rank; i++) n *= (size_t)dims[i];
    size_t bytes = n * ingot_dtype_size(dt);
    void *copy = ig__arena_alloc(&t->g.arena, bytes ? bytes : 1);
    if (bytes) memcpy(copy, data, bytes);
    v->dtype = dt;
    v->shape.rank = rank;
    v->flags |= IG_VAL_CONST | IG_VAL_INITIALIZER;
    v->c.dtype = dt;
    v->c.rank = rank;
    for (int i = 0; i < rank; i++) {
        v->shape.d[i] = D(dims[i]);
        v->c.dims[i] = dims[i];
    }
    v->c.data = copy;
    v->c.n_bytes = bytes;
    v->c.name = v->name;
    return v;
}

static ig_value *t_i64(T *t, const char *name, int n, const int64_t *vals)
{
    int64_t d = n;
    return t_const(t, name, INGOT_DTYPE_INT64, 1, &d, vals);
}

static ig_value *t_scalar_i64(T *t, const char *name, int64_t v)
{
    return t_const(t, name, INGOT_DTYPE_INT64, 0, NULL, &v);
}

/* Split "a,b,,c" into names; "" stays as an omitted entry. */
static int split_names(const char *s, char names[][32])
{
    int n = 0;
    if (!*s) return 0;
    for (;;) {
        const char *e = strchr(s, ',');
        size_t len = e ? (size_t)(e - s) : strlen(s);
        memcpy(names[n], s, len);
        names[n][len] = 0;
        n++;
        if (!e) break;
        s = e + 1;
    }
    return n;
}

static ig_node *t_node(T *t, const char *op, int opset, const char *ins, const char *outs)
{
    char in[16][32], out[16][32];
    int ni = split_names(ins, in), no = split_names(outs, out);
    int32_t id = ig__graph_add_node(&t->g, op, op, "", ni, no, 8, &t->err);
    ig_node *n = &t->g.nodes[id];
    n->n_attrs = 0;
    n->opset = opset;
    for (int i = 0; i < ni; i++) n->inputs[i] = in[i][0] ? ig__graph_value(&t->g, in[i], &t->err) : -1;
    n = &t->g.nodes[id];
    for (int i = 0; i < no; i++) {
        n->outputs[i] = out[i][0] ? ig__graph_value(&t->g, out[i], &t->err) : -1;
        if (n->outputs[i] >= 0) t->g.values[n->outputs[i]].producer = id;
    }
    return n;
}

static void a_int(ig_node *n, const char *name, int64_t v)
{
    ig_attr *a = &n->attrs[n->n_attrs++];
    a->name = name;
    a->type = IG_ATTR_INT;
    a->i = v;
}

static void a_ints(T *t, ig_node *n, const char *name, int c, const int64_t *v)
{
    ig_attr *a = &n->attrs[n->n_attrs++];
    int64_t *p = ig__arena_alloc(&t->g.arena, sizeof(int64_t) * (size_t)(c ? c : 1));
    memcpy(p, v, sizeof(int64_t) * (size_t)c);
    a->name = name;
    a->type = IG_ATTR_INTS;
    a->ints = p;
    a->n = c;
}

static void a_str(ig_node *n, const char *name, const char *s)
{
    ig_attr *a = &n->attrs[n->n_attrs++];
    a->name = name;
    a->type = IG_ATTR_STRING;
    a->s = s;
    a->s_len = strlen(s);
}

/* The node's descriptor, in its domain (ai.onnx when none is set). */
static const ig_op_def *def_of(const ig_node *n) { return ig__op_find(n->domain, n->op_type, n->opset, NULL); }

static ingot_status t_infer(T *t, ig_node *n)
{
    ig__err_clear(&t->err);
    const ig_op_def *d = def_of(n);
    if (!d) return ig__errf(&t->err, INGOT_ERR_MODEL_UNSUPPORTED_OP, "no op %s at opset %d", n->op_type, n->opset);
    if (n->n_inputs < d->min_in || (d->max_in >= 0 && n->n_inputs > d->max_in))
        return ig__errf(&t->err, INGOT_ERR_MODEL_INVALID, "arity");
    ig_infer cx = {&t->g, n, &t->err, &t->fold};
    return d->infer(&cx);
}

/* "[batch,seq,12,64]" */
static const char *shp(T *t, const char *name)
{
    static char buf[8][256];
    static int k;
    char *b = buf[k++ % 8];
    return ig__shape_str(&t->g, &V(t, name)->shape, b, 256);
}

static ig_value *t_f32(T *t, const char *name, int rank, const int64_t *dims, const float *data)
{
    return t_const(t, name, INGOT_DTYPE_FLOAT, rank, dims, data);
}

static void a_float(ig_node *n, const char *name, float v)
{
    ig_attr *a = &n->attrs[n->n_attrs++];
    a->name = name;
    a->type = IG_ATTR_FLOAT;
    a->f = v;
}

static void a_floats(T *t, ig_node *n, const char *name, int c, const float *v)
{
    ig_attr *a = &n->attrs[n->n_attrs++];
    float *p = ig__arena_alloc(&t->g.arena, sizeof(float) * (size_t)(c ? c : 1));
    memcpy(p, v, sizeof(float) * (size_t)c);
    a->name = name;
    a->type = IG_ATTR_FLOATS;
    a->floats = p;
    a->n = c;
}

/* ---- CPU execution of one node whose inputs are all constants ---- */

typedef struct R {
    ig_tensor in[8], out[8];
    const ig_tensor *inp[8];
    ig_tensor *outp[8];
    void *scratch;
    int n_out;
} R;

static void r_free(R *r)
{
    for (int i = 0; i < 8; i++) {
        ig__free_aligned(r->in[i].data);
        ig__free_aligned(r->out[i].data);
    }
    ig__free_aligned(r->scratch);
    memset(r, 0, sizeof *r);
}

static void tensor_from_value(ig_tensor *te, const ig_value *v)
{
    int64_t dims[IG_MAX_RANK];
    for (int i = 0; i < v->shape.rank; i++) dims[i] = v->shape.d[i].n;
    ig__tensor_set_shape(te, v->dtype, v->shape.rank, dims);
    size_t bytes = (size_t)te->numel * ingot_dtype_size(v->dtype);
    te->data = ig__malloc_aligned(bytes ? bytes : 64, 64);
}

/* Infer, then run the CPU kernel (serially when pool is NULL). */
static ingot_status t_run(T *t, ig_node *n, struct ig_pool *pool, R *r)
{
    memset(r, 0, sizeof *r);
    ingot_status st = t_infer(t, n);
    if (st != INGOT_OK) return st;
    for (int i = 0; i < n->n_inputs; i++) {
        if (n->inputs[i] < 0) continue;
        const ig_value *v = &t->g.values[n->inputs[i]];
        tensor_from_value(&r->in[i], v);
        if (v->c.n_bytes) memcpy(r->in[i].data, v->c.data, v->c.n_bytes);
        r->inp[i] = &r->in[i];
    }
    for (int i = 0; i < n->n_outputs; i++) {
        if (n->outputs[i] < 0) continue;
        tensor_from_value(&r->out[i], &t->g.values[n->outputs[i]]);
        memset(r->out[i].data, 0xAB, (size_t)r->out[i].numel * ingot_dtype_size(r->out[i].dtype));
        r->outp[i] = &r->out[i];
    }
    r->n_out = n->n_outputs;
    const ig_op_def *d = def_of(n);
    size_t sb = d->cpu_scratch ? d->cpu_scratch(&t->g, n) : 0;
    if (sb) r->scratch = ig__malloc_aligned(sb, 64);
    ig_exec ex = {.g = &t->g,
                  .node = n,
                  .n_in = n->n_inputs,
                  .n_out = n->n_outputs,
                  .in = r->inp,
                  .out = r->outp,
                  .scratch = r->scratch,
                  .scratch_bytes = sb,
                  .pool = pool,
                  .err = &t->err};
    return d->cpu(&ex);
}

#endif
