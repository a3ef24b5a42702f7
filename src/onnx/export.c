/*
 * export.c -- an ig_graph written back as an ONNX ModelProto: the engine file's graph section, and a
 * model users can open in Netron (`ingot inspect --optimized --save-onnx`). The writer emits only
 * what the importer reads (onnx.h), so import(export(g)) gives g's nodes in the same order, with the
 * same attributes, declared inputs and outputs, initializers and opsets; values computed by inference
 * are left to inference, and nodes of the ingot domain stay nodes of the ingot domain.
 *
 * Repeated scalars are written unpacked (proto2's default, what onnx's own serializer writes);
 * submessages are built in their own buffer and appended with their length.
 */
#include "import.h"

#include <stdio.h>
#include <string.h>

enum { WIRE_VARINT = 0, WIRE_I64 = 1, WIRE_LEN = 2, WIRE_I32 = 5 };

static void pb_varint(ig_wbuf *b, uint64_t v)
{
    uint8_t x[10];
    int n = 0;
    do {
        x[n] = (uint8_t)(v & 0x7f);
        v >>= 7;
        if (v) x[n] |= 0x80;
        n++;
    } while (v);
    ig__wbuf_put(b, x, (size_t)n);
}

static void pb_tag(ig_wbuf *b, uint32_t field, uint32_t wire) { pb_varint(b, (uint64_t)field << 3 | wire); }

static void pb_int(ig_wbuf *b, uint32_t field, int64_t v)
{
    pb_tag(b, field, WIRE_VARINT);
    pb_varint(b, (uint64_t)v);
}

static void pb_float(ig_wbuf *b, uint32_t field, float v)
{
    uint32_t u;
    memcpy(&u, &v, 4);
    pb_tag(b, field, WIRE_I32);
    uint8_t x[4] = {(uint8_t)u, (uint8_t)(u >> 8), (uint8_t)(u >> 16), (uint8_t)(u >> 24)};
    ig__wbuf_put(b, x, 4);
}

static void pb_bytes(ig_wbuf *b, uint32_t field, const void *p, size_t n)
{
    pb_tag(b, field, WIRE_LEN);
    pb_varint(b, n);
    ig__wbuf_put(b, p, n);
}

static void pb_str(ig_wbuf *b, uint32_t field, const char *s) { pb_bytes(b, field, s ? s : "", s ? strlen(s) : 0); }

/* Append sub as a length-delimited field of b and free it. */
static void pb_msg(ig_wbuf *b, uint32_t field, ig_wbuf *sub)
{
    if (sub->oom) b->oom = true;
    pb_bytes(b, field, sub->p, sub->n);
    ig__wbuf_free(sub);
}

/* ---- tensors ---- */

typedef struct exporter {
    const ig_graph *g;
    const ig_onnx_export_options *o;
    ig_wbuf *weights; /* NULL: data inline */
} exporter;

static void put_tensor(exporter *x, ig_wbuf *b, const ig_const *c, const char *name)
{
    for (int32_t k = 0; k < c->rank; k++) pb_int(b, F_TENSOR_DIMS, c->dims[k]);
    pb_int(b, F_TENSOR_DTYPE, c->dtype);
    if (name) pb_str(b, F_TENSOR_NAME, name);
    if (!x->weights || c->n_bytes < x->o->inline_max) {
        pb_bytes(b, F_TENSOR_RAW, c->data, c->n_bytes);
        return;
    }
    ig__wbuf_pad(x->weights, IG_ONNX_EMBEDDED_ALIGN);
    size_t off = x->weights->n;
    ig__wbuf_put(x->weights, c->data, c->n_bytes);
    char num[32];
    const char *kv[3][2] = {{"location", IG_ONNX_EMBEDDED}, {"offset", num}, {"length", NULL}};
    char len[32];
    snprintf(num, sizeof num, "%zu", off);
    snprintf(len, sizeof len, "%zu", c->n_bytes);
    kv[2][1] = len;
    for (int i = 0; i < 3; i++) {
        ig_wbuf e = {0};
        pb_str(&e, F_ENTRY_KEY, kv[i][0]);
        pb_str(&e, F_ENTRY_VALUE, kv[i][1]);
        pb_msg(b, F_TENSOR_EXTERNAL, &e);
    }
    pb_int(b, F_TENSOR_LOCATION, 1); /* EXTERNAL */
}

/* ---- attributes ---- */

static void put_attr(exporter *x, ig_wbuf *b, const ig_attr *a)
{
    if (a->type == IG_ATTR_GRAPHS || a->type == IG_ATTR_SPARSE_TENSORS || a->type == IG_ATTR_TYPE_PROTOS) {
        ig__wbuf_put(b, a->raw, a->raw_len); /* the whole AttributeProto, kept as read */
        return;
    }
    pb_str(b, F_ATTR_NAME, a->name);
    pb_int(b, F_ATTR_TYPE, a->type);
    switch (a->type) {
    case IG_ATTR_FLOAT: pb_float(b, F_ATTR_F, a->f); break;
    case IG_ATTR_INT: pb_int(b, F_ATTR_I, a->i); break;
    case IG_ATTR_STRING: pb_bytes(b, F_ATTR_S, a->s, a->s_len); break;
    case IG_ATTR_FLOATS:
        for (int64_t k = 0; k < a->n; k++) pb_float(b, F_ATTR_FLOATS, a->floats[k]);
        break;
    case IG_ATTR_INTS:
        for (int64_t k = 0; k < a->n; k++) pb_int(b, F_ATTR_INTS, a->ints[k]);
        break;
    case IG_ATTR_STRINGS:
        for (int64_t k = 0; k < a->n; k++) pb_str(b, F_ATTR_STRINGS, a->strings[k]);
        break;
    case IG_ATTR_TENSOR:
    case IG_ATTR_TENSORS: {
        int64_t n = a->type == IG_ATTR_TENSOR ? 1 : a->n;
        for (int64_t k = 0; k < n; k++) {
            ig_wbuf t = {0};
            exporter inl = {x->g, x->o, NULL}; /* attribute tensors stay in the graph */
            put_tensor(&inl, &t, &a->t[k], a->t[k].name);
            pb_msg(b, a->type == IG_ATTR_TENSOR ? F_ATTR_T : F_ATTR_TENSORS, &t);
        }
        break;
    }
    case IG_ATTR_GRAPH: pb_bytes(b, F_ATTR_G, a->raw, a->raw_len); break;
    case IG_ATTR_SPARSE_TENSOR: pb_bytes(b, F_ATTR_SPARSE, a->raw, a->raw_len); break;
    case IG_ATTR_TYPE_PROTO: pb_bytes(b, F_ATTR_TP, a->raw, a->raw_len); break;
    default: break;
    }
}

/* ---- values ---- */

static const char *value_name(const ig_graph *g, int32_t v) { return v >= 0 ? g->values[v].name : ""; }

/* A ValueInfoProto with the declared type (or the inferred one when nothing was declared). */
static void put_value_info(exporter *x, ig_wbuf *b, int32_t id)
{
    const ig_graph *g = x->g;
    const ig_value *v = &g->values[id];
    pb_str(b, F_VI_NAME, v->name);
    bool decl = (v->flags & IG_VAL_DECLARED) != 0;
    ingot_dtype dt = decl ? v->decl_dtype : v->dtype;
    /* an undeclared output gets its type only: its inferred dims may name symbols of this graph */
    static const ig_shape none = {.rank = -1};
    const ig_shape *s = decl ? &v->decl_shape : &none;
    if (dt == INGOT_DTYPE_UNDEFINED && s->rank < 0) return;
    ig_wbuf tt = {0}, type = {0};
    if (dt != INGOT_DTYPE_UNDEFINED) pb_int(&tt, F_TT_ELEM, dt);
    if (s->rank >= 0) {
        ig_wbuf shape = {0};
        for (int32_t k = 0; k < s->rank; k++) {
            ig_wbuf dim = {0};
            ig_dim d = s->d[k];
            if (ig__dim_known(d) && !(decl && v->decl_dim_names[k]))
                pb_int(&dim, F_DIM_VALUE, d.n);
            else if (decl && v->decl_dim_names[k])
                pb_str(&dim, F_DIM_PARAM, v->decl_dim_names[k]);
            else if (d.n == 1 && d.sym >= 0 && d.sym < g->n_syms)
                pb_str(&dim, F_DIM_PARAM, g->syms[d.sym]);
            /* n * symbol with n > 1 is not expressible: left unknown (a fresh symbol on import) */
            pb_msg(&shape, F_SHAPE_DIM, &dim);
        }
        pb_msg(&tt, F_TT_SHAPE, &shape);
    }
    pb_msg(&type, F_TYPE_TENSOR, &tt);
    pb_msg(b, F_VI_TYPE, &type);
}

/* ---- the graph ---- */

/* An ONNX op the optimizer made at a later opset than the model imports (Gelu is ONNX's from opset 20,
 * LayerNormalization from 17): the file cannot say so in ONNX's terms, since opset_import is one
 * version per domain, so it is stored in the ingot domain, where the importer takes ONNX's definition
 * whatever the opset (ig__op_find). */
static bool later_onnx_op(const ig_graph *g, const ig_node *n)
{
    bool def = !n->domain || !n->domain[0] || !strcmp(n->domain, "ai.onnx");
    return def && n->opset > ig__graph_opset(g, "");
}

static void put_node(exporter *x, ig_wbuf *b, const ig_node *n)
{
    const ig_graph *g = x->g;
    for (int32_t k = 0; k < n->n_inputs; k++) pb_str(b, F_NODE_INPUT, value_name(g, n->inputs[k]));
    for (int32_t k = 0; k < n->n_outputs; k++) pb_str(b, F_NODE_OUTPUT, value_name(g, n->outputs[k]));
    if (n->name && n->name[0]) pb_str(b, F_NODE_NAME, n->name);
    pb_str(b, F_NODE_OP_TYPE, n->op_type);
    if (later_onnx_op(g, n))
        pb_str(b, F_NODE_DOMAIN, IG_ONNX_LATER_DOMAIN);
    else if (n->domain && n->domain[0])
        pb_str(b, F_NODE_DOMAIN, n->domain);
    for (int32_t k = 0; k < n->n_attrs; k++) {
        ig_wbuf a = {0};
        put_attr(x, &a, &n->attrs[k]);
        pb_msg(b, F_NODE_ATTR, &a);
    }
}

static void put_graph(exporter *x, ig_wbuf *b)
{
    const ig_graph *g = x->g;
    for (int32_t i = 0; i < g->n_nodes; i++) {
        if (g->nodes[i].dead) continue;
        ig_wbuf nb = {0};
        put_node(x, &nb, &g->nodes[i]);
        pb_msg(b, F_GRAPH_NODE, &nb);
    }
    if (g->name) pb_str(b, F_GRAPH_NAME, g->name);
    for (int32_t v = 0; v < g->n_values; v++) {
        const ig_value *val = &g->values[v];
        if (!(val->flags & IG_VAL_INITIALIZER) || !(val->flags & IG_VAL_CONST)) continue;
        ig_wbuf t = {0};
        put_tensor(x, &t, &val->c, val->name);
        pb_msg(b, F_GRAPH_INIT, &t);
    }
    for (int32_t i = 0; i < g->n_inputs; i++) {
        ig_wbuf vi = {0};
        put_value_info(x, &vi, g->inputs[i]);
        pb_msg(b, F_GRAPH_INPUT, &vi);
    }
    for (int32_t i = 0; i < g->n_outputs; i++) {
        ig_wbuf vi = {0};
        put_value_info(x, &vi, g->outputs[i]);
        pb_msg(b, F_GRAPH_OUTPUT, &vi);
    }
}

ingot_status ig__onnx_export(const ig_graph *g, const ig_onnx_export_options *o, ig_wbuf *out, ig_err *err)
{
    static const ig_onnx_export_options defaults = {.weights = NULL};
    if (!o) o = &defaults;
    memset(out, 0, sizeof *out);
    for (int32_t v = 0; v < g->n_values; v++) {
        const ig_value *val = &g->values[v];
        if ((val->flags & IG_VAL_INITIALIZER) && !(val->flags & IG_VAL_CONST))
            return ig__errf(err, INGOT_ERR_INVALID_ARG,
                            "tensor '%s': its external data was not loaded, so it cannot be written out", val->name);
    }
    exporter x = {g, o, o->weights};
    pb_int(out, F_MODEL_IR_VERSION, g->ir_version > 0 ? g->ir_version : 8);
    pb_str(out, F_MODEL_PRODUCER_NAME, o->producer ? o->producer : "ingot");
    pb_str(out, F_MODEL_PRODUCER_VERSION, o->producer_version ? o->producer_version : "");
    if (g->model_domain) pb_str(out, F_MODEL_DOMAIN, g->model_domain);
    if (g->model_version) pb_int(out, F_MODEL_VERSION, g->model_version);
    ig_wbuf gb = {0};
    put_graph(&x, &gb);
    pb_msg(out, F_MODEL_GRAPH, &gb);
    for (int32_t i = 0; i < g->n_opsets; i++) {
        ig_wbuf os = {0};
        if (g->opsets[i].domain && g->opsets[i].domain[0]) pb_str(&os, F_OPSET_DOMAIN, g->opsets[i].domain);
        pb_int(&os, F_OPSET_VERSION, g->opsets[i].version);
        pb_msg(out, F_MODEL_OPSET, &os);
    }
    bool later = false;
    for (int32_t i = 0; i < g->n_nodes && !later; i++) later = !g->nodes[i].dead && later_onnx_op(g, &g->nodes[i]);
    if (later && !ig__graph_opset(g, IG_ONNX_LATER_DOMAIN)) { /* the domain those nodes are stored in */
        ig_wbuf os = {0};
        pb_str(&os, F_OPSET_DOMAIN, IG_ONNX_LATER_DOMAIN);
        pb_int(&os, F_OPSET_VERSION, 1);
        pb_msg(out, F_MODEL_OPSET, &os);
    }
    for (int32_t i = 0; i < g->n_meta; i++) {
        ig_wbuf e = {0};
        pb_str(&e, F_ENTRY_KEY, g->meta_keys[i]);
        pb_str(&e, F_ENTRY_VALUE, g->meta_values[i]);
        pb_msg(out, F_MODEL_META, &e);
    }
    if (out->oom || (o->weights && o->weights->oom)) {
        ig__wbuf_free(out);
        return ig__errf(err, INGOT_ERR_OUT_OF_MEMORY, "out of memory writing the graph as ONNX");
    }
    return INGOT_OK;
}
