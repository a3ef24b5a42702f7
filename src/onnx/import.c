/*
 * import.c -- ModelProto to ig_graph.
 *
 * The model is read straight off the file's bytes in a few passes, because protobuf fields may come
 * in any order and the IR needs some facts before others: ModelProto's opset_import (which follows the
 * graph in serialized files) before nodes; all initializers before graph inputs (an input that has an
 * initializer is a weight, not an input); inputs before nodes (a node may not produce a graph input).
 * Each pass is a cheap skip over the fields it does not want. Strings and decoded arrays go to the
 * graph's arena; tensor bytes stay in the file (see tensor.c).
 *
 * Status codes: INGOT_ERR_MODEL_PARSE for broken wire format, INGOT_ERR_MODEL_INVALID for a
 * well-formed file that breaks ONNX rules (counts, duplicates, dangling names),
 * INGOT_ERR_MODEL_UNSUPPORTED_OP for valid ONNX that ingot does not handle (string tensors, sequence
 * types, sparse initializers), INGOT_ERR_IO for files.
 */
#define _XOPEN_SOURCE 700
#include "import.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>

#define PB_LOOP(m, f, r) while (((r) = ig__pb_next((m), &(f))) > 0)

static ingot_status oom(ig_onnx_imp *im, const char *what)
{
    return ig__errf(im->pb.err, INGOT_ERR_OUT_OF_MEMORY, "%s: out of memory reading %s", im->pb.path, what);
}

/* ---- types of graph inputs, outputs and value_info ---- */

typedef struct decl_type {
    bool has_type;
    ingot_dtype dtype;
    ig_shape shape;
    const char *dim_names[IG_MAX_RANK];
} decl_type;

static ingot_status parse_dim(ig_onnx_imp *im, ig_graph *g, ig_pb_msg *m, const char *tensor, int32_t k, ig_dim *out,
                              const char **name)
{
    ig_pb_field f;
    int r;
    bool has_value = false;
    int64_t value = 0;
    const char *param = NULL;
    PB_LOOP(m, f, r)
    {
        if (f.num == F_DIM_VALUE) {
            has_value = true; /* oneof: the last of dim_value / dim_param wins */
            value = (int64_t)f.u;
            param = NULL;
        } else if (f.num == F_DIM_PARAM) {
            ingot_status st = ig__onnx_str(im, &f, &param);
            if (st) return st;
            has_value = false;
        }
    }
    if (r < 0) return INGOT_ERR_MODEL_PARSE;
    *name = NULL;
    if (has_value) {
        if (value < 0)
            return ig__pb_errf(&im->pb, INGOT_ERR_MODEL_INVALID, NULL,
                               "tensor '%.200s': declared dim %d is negative (%" PRId64 ")", tensor, (int)k, value);
        *out = ig__dim_const(value);
        return INGOT_OK;
    }
    int32_t sym = ig__graph_symbol(g, param && param[0] ? param : NULL);
    if (sym < 0) return oom(im, "a symbolic dim");
    out->n = 1;
    out->sym = sym;
    if (param && param[0]) *name = g->syms[sym];
    return INGOT_OK;
}

static ingot_status parse_shape(ig_onnx_imp *im, ig_graph *g, ig_pb_msg *m, const char *tensor, decl_type *dt)
{
    ig_pb_field f;
    int r;
    int64_t rank = 0;
    PB_LOOP(m, f, r)
    {
        if (f.num != F_SHAPE_DIM) continue;
        if (rank >= IG_MAX_RANK)
            return ig__pb_errf(&im->pb, INGOT_ERR_MODEL_UNSUPPORTED_OP, NULL,
                               "tensor '%.200s' is declared with rank above %d, which ingot does not support", tensor,
                               IG_MAX_RANK);
        ig_pb_msg dm;
        ingot_status st = ig__pb_enter(m, &f, &ig__pb_dim, "dim", rank, &dm);
        if (st) return st;
        st = parse_dim(im, g, &dm, tensor, (int32_t)rank, &dt->shape.d[rank], &dt->dim_names[rank]);
        if (st) return st;
        ig__pb_leave(&im->pb);
        rank++;
    }
    if (r < 0) return INGOT_ERR_MODEL_PARSE;
    dt->shape.rank = (int32_t)rank;
    return INGOT_OK;
}

static ingot_status parse_type(ig_onnx_imp *im, ig_graph *g, ig_pb_msg *m, const char *tensor, decl_type *dt)
{
    ig_pb_field f;
    int r;
    ingot_status st;
    PB_LOOP(m, f, r)
    {
        const char *kind = NULL;
        switch (f.num) {
        case F_TYPE_TENSOR: {
            ig_pb_msg tm;
            if ((st = ig__pb_enter(m, &f, &ig__pb_type_tensor, "tensor_type", -1, &tm))) return st;
            ig_pb_field tf;
            int tr;
            dt->has_type = true;
            dt->dtype = INGOT_DTYPE_UNDEFINED;
            dt->shape.rank = -1;
            memset(dt->dim_names, 0, sizeof dt->dim_names);
            PB_LOOP(&tm, tf, tr)
            {
                if (tf.num == F_TT_ELEM) {
                    int64_t t = (int64_t)(int32_t)tf.u;
                    char tb[32];
                    if (t != INGOT_DTYPE_UNDEFINED && !ig__dtype_supported(t))
                        return ig__pb_errf(&im->pb, INGOT_ERR_MODEL_UNSUPPORTED_OP, NULL,
                                           "tensor '%.200s' is declared with element type %" PRId64
                                           " (%s), which ingot does not support",
                                           tensor, t, ig__onnx_dtype_name(t, tb, sizeof tb));
                    dt->dtype = (ingot_dtype)t;
                } else if (tf.num == F_TT_SHAPE) {
                    ig_pb_msg sm;
                    if ((st = ig__pb_enter(&tm, &tf, &ig__pb_shape, "shape", -1, &sm))) return st;
                    memset(dt->dim_names, 0, sizeof dt->dim_names);
                    if ((st = parse_shape(im, g, &sm, tensor, dt))) return st;
                    ig__pb_leave(&im->pb);
                }
            }
            if (tr < 0) return INGOT_ERR_MODEL_PARSE;
            ig__pb_leave(&im->pb);
            break;
        }
        case F_TYPE_SEQUENCE: kind = "a sequence"; break;
        case F_TYPE_MAP: kind = "a map"; break;
        case F_TYPE_OPTIONAL: kind = "an optional"; break;
        case F_TYPE_SPARSE: kind = "a sparse tensor"; break;
        case F_TYPE_OPAQUE: kind = "an opaque"; break;
        default: break;
        }
        if (kind)
            return ig__pb_errf(&im->pb, INGOT_ERR_MODEL_UNSUPPORTED_OP, NULL,
                               "tensor '%.200s' has %s type; ingot supports only tensor types", tensor, kind);
    }
    return r < 0 ? INGOT_ERR_MODEL_PARSE : INGOT_OK;
}

/* A ValueInfoProto: its name and (when it has one) its tensor type. */
static ingot_status parse_value_info(ig_onnx_imp *im, ig_graph *g, ig_pb_msg *m, const char **name, decl_type *dt)
{
    ig_pb_field f;
    int r;
    ingot_status st;
    *name = "";
    memset(dt, 0, sizeof *dt);
    dt->shape.rank = -1;
    /* the name may follow the type: read it first so type errors can name the tensor */
    PB_LOOP(m, f, r)
    {
        if (f.num == F_VI_NAME && (st = ig__onnx_str(im, &f, name))) return st;
    }
    if (r < 0) return INGOT_ERR_MODEL_PARSE;
    ig__pb_rewind(m);
    PB_LOOP(m, f, r)
    {
        if (f.num != F_VI_TYPE) continue;
        ig_pb_msg tm;
        if ((st = ig__pb_enter(m, &f, &ig__pb_type, "type", -1, &tm))) return st;
        if ((st = parse_type(im, g, &tm, (*name)[0] ? *name : "(unnamed)", dt))) return st;
        ig__pb_leave(&im->pb);
    }
    return r < 0 ? INGOT_ERR_MODEL_PARSE : INGOT_OK;
}

static void set_decl(ig_value *v, const decl_type *dt)
{
    v->flags |= IG_VAL_DECLARED;
    v->decl_dtype = dt->dtype;
    v->decl_shape = dt->shape;
    memcpy(v->decl_dim_names, dt->dim_names, sizeof v->decl_dim_names);
}

/* ---- attributes ---- */

/* AttributeType from the fields present, for files written before `type` existed. */
static ig_attr_type infer_attr_type(const bool *seen)
{
    static const struct {
        uint32_t field;
        ig_attr_type type;
    } order[] = {
        {F_ATTR_F, IG_ATTR_FLOAT},
        {F_ATTR_I, IG_ATTR_INT},
        {F_ATTR_S, IG_ATTR_STRING},
        {F_ATTR_T, IG_ATTR_TENSOR},
        {F_ATTR_G, IG_ATTR_GRAPH},
        {F_ATTR_FLOATS, IG_ATTR_FLOATS},
        {F_ATTR_INTS, IG_ATTR_INTS},
        {F_ATTR_STRINGS, IG_ATTR_STRINGS},
        {F_ATTR_TENSORS, IG_ATTR_TENSORS},
        {F_ATTR_GRAPHS, IG_ATTR_GRAPHS},
        {F_ATTR_SPARSE, IG_ATTR_SPARSE_TENSOR},
        {F_ATTR_SPARSES, IG_ATTR_SPARSE_TENSORS},
        {F_ATTR_TP, IG_ATTR_TYPE_PROTO},
        {F_ATTR_TYPE_PROTOS, IG_ATTR_TYPE_PROTOS},
    };
    for (size_t i = 0; i < sizeof order / sizeof order[0]; i++)
        if (seen[order[i].field]) return order[i].type;
    return IG_ATTR_UNDEFINED;
}

/* The field a list-kind attribute keeps its elements in. */
static uint32_t list_field(ig_attr_type t)
{
    switch (t) {
    case IG_ATTR_FLOATS: return F_ATTR_FLOATS;
    case IG_ATTR_INTS: return F_ATTR_INTS;
    case IG_ATTR_STRINGS: return F_ATTR_STRINGS;
    case IG_ATTR_TENSORS: return F_ATTR_TENSORS;
    case IG_ATTR_GRAPHS: return F_ATTR_GRAPHS;
    case IG_ATTR_SPARSE_TENSORS: return F_ATTR_SPARSES;
    case IG_ATTR_TYPE_PROTOS: return F_ATTR_TYPE_PROTOS;
    default: return 0;
    }
}

static ingot_status parse_attribute(ig_onnx_imp *im, ig_graph *g, ig_pb_msg *m, const char *node, ig_attr *a)
{
    ig_pb_ctx *c = &im->pb;
    ig_pb_field f;
    int r;
    ingot_status st;
    bool seen[32] = {false};
    int64_t counts[32] = {0};
    bool has_type = false;
    int64_t type = 0;
    ig_pb_field single_t = {0}, single_raw = {0};
    memset(a, 0, sizeof *a);
    a->name = "";
    a->s = ""; /* a STRING attribute without its s field reads as "" (protobuf default) */
    /* pass 1: scalars, counts, and validation of everything kept opaque */
    PB_LOOP(m, f, r)
    {
        if (f.num < 32) seen[f.num] = true;
        switch (f.num) {
        case F_ATTR_NAME:
            if ((st = ig__onnx_str(im, &f, &a->name))) return st;
            break;
        case F_ATTR_TYPE:
            has_type = true;
            type = (int64_t)f.u;
            break;
        case F_ATTR_F: {
            uint32_t bits = (uint32_t)f.u;
            memcpy(&a->f, &bits, 4);
            break;
        }
        case F_ATTR_I: a->i = (int64_t)f.u; break;
        case F_ATTR_S:
            a->s_len = f.len;
            /* s is bytes: may hold NULs; the copy is NUL-terminated for the common text case */
            if (!(a->s = ig__arena_strndup(im->arena, (const char *)c->buf + f.off, f.len))) return oom(im, "a string");
            break;
        case F_ATTR_T: single_t = f; break;
        case F_ATTR_FLOATS:
        case F_ATTR_INTS: {
            int64_t n = ig__pb_count(m, &f);
            if (n < 0) return INGOT_ERR_MODEL_PARSE;
            counts[f.num] += n;
            break;
        }
        case F_ATTR_STRINGS: counts[f.num]++; break;
        case F_ATTR_G:
        case F_ATTR_SPARSE:
        case F_ATTR_TP:
        case F_ATTR_GRAPHS:
        case F_ATTR_SPARSES:
        case F_ATTR_TYPE_PROTOS: {
            ig_pb_msg sub;
            bool list = f.num == F_ATTR_GRAPHS || f.num == F_ATTR_SPARSES || f.num == F_ATTR_TYPE_PROTOS;
            if ((st = ig__pb_enter(m, &f, f.desc->sub, f.desc->name, list ? counts[f.num] : -1, &sub))) return st;
            if ((st = ig__pb_validate(&sub))) return st;
            ig__pb_leave(c);
            if (list)
                counts[f.num]++;
            else
                single_raw = f;
            break;
        }
        case F_ATTR_TENSORS: counts[f.num]++; break;
        default: break;
        }
    }
    if (r < 0) return INGOT_ERR_MODEL_PARSE;
    const char *an = a->name[0] ? a->name : "(unnamed)";
    if (!a->name[0])
        return ig__pb_errf(c, INGOT_ERR_MODEL_INVALID, NULL, "node '%.200s' has an attribute without a name", node);
    if (has_type) {
        if (type < IG_ATTR_UNDEFINED || type > IG_ATTR_TYPE_PROTOS)
            return ig__pb_errf(c, INGOT_ERR_MODEL_INVALID, NULL,
                               "node '%.200s': attribute '%.200s' has unknown type %" PRId64, node, an, type);
        a->type = (ig_attr_type)type;
    }
    if (a->type == IG_ATTR_UNDEFINED) a->type = infer_attr_type(seen);

    switch (a->type) {
    case IG_ATTR_FLOAT:
    case IG_ATTR_INT:
    case IG_ATTR_STRING:
    case IG_ATTR_UNDEFINED: return INGOT_OK;
    case IG_ATTR_TENSOR: {
        if (!seen[F_ATTR_T])
            return ig__pb_errf(c, INGOT_ERR_MODEL_INVALID, NULL,
                               "node '%.200s': attribute '%.200s' has type TENSOR but no tensor", node, an);
        ig_pb_msg tm;
        a->t = ig__arena_alloc(im->arena, sizeof *a->t);
        if (!a->t) return oom(im, "an attribute");
        if ((st = ig__pb_enter(m, &single_t, &ig__pb_tensor, "t", -1, &tm))) return st;
        if ((st = ig__onnx_tensor(im, &tm, "attribute tensor", a->t, NULL))) return st;
        ig__pb_leave(c);
        a->n = 1;
        return INGOT_OK;
    }
    case IG_ATTR_GRAPH:
    case IG_ATTR_SPARSE_TENSOR:
    case IG_ATTR_TYPE_PROTO:
        /* the message itself, kept opaque (validated above) */
        a->raw = single_raw.len ? c->buf + single_raw.off : NULL;
        a->raw_len = single_raw.len;
        a->n = seen[a->type == IG_ATTR_GRAPH ? F_ATTR_G : a->type == IG_ATTR_SPARSE_TENSOR ? F_ATTR_SPARSE : F_ATTR_TP];
        return INGOT_OK;
    case IG_ATTR_GRAPHS:
    case IG_ATTR_SPARSE_TENSORS:
    case IG_ATTR_TYPE_PROTOS:
        /* the whole AttributeProto, kept opaque: its repeated field holds the n messages */
        a->raw = c->buf + m->start;
        a->raw_len = m->end - m->start;
        a->n = counts[list_field(a->type)];
        return INGOT_OK;
    default: break;
    }

    /* list kinds decoded into the arena */
    uint32_t lf = list_field(a->type);
    int64_t n = counts[lf];
    a->n = n;
    void *arr = NULL;
    size_t es = a->type == IG_ATTR_FLOATS    ? sizeof(float)
                : a->type == IG_ATTR_INTS    ? sizeof(int64_t)
                : a->type == IG_ATTR_STRINGS ? sizeof(char *)
                                             : sizeof(ig_const);
    /* an empty list still gets an array, so consumers may memcpy/index it with n == 0 */
    if (!(arr = ig__arena_array(im->arena, n ? (size_t)n : 1, es))) return oom(im, "an attribute list");
    int64_t k = 0;
    ig__pb_rewind(m);
    PB_LOOP(m, f, r)
    {
        if (f.num != lf) continue;
        if (a->type == IG_ATTR_FLOATS || a->type == IG_ATTR_INTS) {
            ig_pb_iter it;
            uint64_t v;
            ig__pb_iter_init(&it, m, &f);
            while (ig__pb_iter_next(&it, &v)) {
                if (a->type == IG_ATTR_INTS) {
                    ((int64_t *)arr)[k++] = (int64_t)v;
                } else {
                    uint32_t bits = (uint32_t)v;
                    memcpy(&((float *)arr)[k++], &bits, 4);
                }
            }
        } else if (a->type == IG_ATTR_STRINGS) {
            char *s = ig__arena_strndup(im->arena, (const char *)c->buf + f.off, f.len);
            if (!s) return oom(im, "an attribute string");
            ((const char **)arr)[k++] = s;
        } else {
            ig_pb_msg tm;
            if ((st = ig__pb_enter(m, &f, &ig__pb_tensor, "tensors", k, &tm))) return st;
            if ((st = ig__onnx_tensor(im, &tm, "attribute tensor", &((ig_const *)arr)[k], NULL))) return st;
            ig__pb_leave(c);
            k++;
        }
    }
    if (r < 0) return INGOT_ERR_MODEL_PARSE;
    IG_ASSERT(k == n);
    if (a->type == IG_ATTR_FLOATS)
        a->floats = arr;
    else if (a->type == IG_ATTR_INTS)
        a->ints = arr;
    else if (a->type == IG_ATTR_STRINGS)
        a->strings = arr;
    else
        a->t = arr;
    return INGOT_OK;
}

/* ---- nodes ---- */

static const char *attr_type_name(int t)
{
    static const char *names[] = {"UNDEFINED",      "FLOAT",      "INT",        "STRING",  "TENSOR", "GRAPH",
                                  "FLOATS",         "INTS",       "STRINGS",    "TENSORS", "GRAPHS", "SPARSE_TENSOR",
                                  "SPARSE_TENSORS", "TYPE_PROTO", "TYPE_PROTOS"};
    return t >= 0 && t < (int)(sizeof names / sizeof names[0]) ? names[t] : "unknown";
}

/* The types ONNX allows for attribute `attr` of default-domain op `op`; 0 when ONNX defines no such
 * attribute (an unknown one is left to the op, which ignores it). */
static uint32_t schema_types(const char *op, const char *attr)
{
    int32_t lo = 0, hi = ig__onnx_attr_schema_count - 1;
    while (lo <= hi) {
        int32_t mid = lo + (hi - lo) / 2;
        const ig_onnx_attr_schema *e = &ig__onnx_attr_schema[mid];
        int c = strcmp(e->op, op);
        if (!c) c = strcmp(e->attr, attr);
        if (!c) return e->types;
        if (c < 0)
            lo = mid + 1;
        else
            hi = mid - 1;
    }
    return 0;
}

/* Every attribute of a default-domain node has a type ONNX allows for it, as ONNX Runtime's checker
 * requires: ops read attributes through typed accessors that fall back to the default on any other
 * type, so an attribute of the wrong type (Softmax's axis as a float) would otherwise be ignored and
 * the model run with a wrong answer. */
static ingot_status check_attr_types(ig_pb_ctx *c, const ig_node *n, const char *label)
{
    if (n->domain[0] && strcmp(n->domain, "ai.onnx") != 0) return INGOT_OK;
    for (int32_t i = 0; i < n->n_attrs; i++) {
        const ig_attr *a = &n->attrs[i];
        uint32_t ok = schema_types(n->op_type, a->name);
        if (!ok || ((unsigned)a->type < 32 && (ok & (1u << a->type)))) continue;
        char want[96];
        size_t off = 0;
        want[0] = '\0';
        for (int t = 0; t < 32 && off < sizeof want; t++)
            if (ok & (1u << t))
                off += (size_t)snprintf(want + off, sizeof want - off, "%s%s", off ? " or " : "", attr_type_name(t));
        if (a->type == IG_ATTR_UNDEFINED)
            return ig__pb_errf(c, INGOT_ERR_MODEL_INVALID, NULL,
                               "node '%.200s' (%.200s): attribute '%.200s' has no value (ONNX defines it as %s)", label,
                               n->op_type, a->name, want);
        return ig__pb_errf(c, INGOT_ERR_MODEL_INVALID, NULL,
                           "node '%.200s' (%.200s): attribute '%.200s' has type %s; ONNX defines it as %s", label,
                           n->op_type, a->name, attr_type_name((int)a->type), want);
    }
    return INGOT_OK;
}

static int cmp_name(const void *a, const void *b) { return strcmp(*(const char *const *)a, *(const char *const *)b); }

/* A name two of n's attributes share (*dup, NULL when none). Sorting the names keeps a node with very
 * many attributes linearithmic; small nodes compare pairwise, without allocating. */
static ingot_status duplicate_attr(const ig_node *n, const char **dup, ig_err *err)
{
    *dup = NULL;
    if (n->n_attrs <= 16) {
        for (int32_t i = 0; i < n->n_attrs && !*dup; i++)
            for (int32_t j = 0; j < i; j++)
                if (!strcmp(n->attrs[i].name, n->attrs[j].name)) {
                    *dup = n->attrs[i].name;
                    break;
                }
        return INGOT_OK;
    }
    const char **names = ig__malloc(sizeof(char *) * (size_t)n->n_attrs);
    if (!names)
        return ig__errf(err, INGOT_ERR_OUT_OF_MEMORY, "out of memory checking the attributes of node '%.200s'",
                        ig__node_label(n));
    for (int32_t i = 0; i < n->n_attrs; i++) names[i] = n->attrs[i].name;
    qsort(names, (size_t)n->n_attrs, sizeof *names, cmp_name);
    for (int32_t i = 1; i < n->n_attrs && !*dup; i++)
        if (!strcmp(names[i - 1], names[i])) *dup = names[i];
    ig__free(names);
    return INGOT_OK;
}

/* A node's input/output name for lookup: most names are short and already known, so they are read
 * through buf instead of being copied into the arena once per use (ig__graph_value copies new ones). */
static ingot_status name_of(ig_onnx_imp *im, const ig_pb_field *f, char *buf, size_t n, const char **out)
{
    if (f->len >= n) return ig__onnx_str(im, f, out);
    const char *s = (const char *)im->pb.buf + f->off;
    if (f->len && memchr(s, 0, f->len))
        return ig__pb_errf(&im->pb, INGOT_ERR_MODEL_PARSE, f, "string at byte %zu contains a NUL byte", f->off);
    memcpy(buf, s, f->len);
    buf[f->len] = '\0';
    *out = buf;
    return INGOT_OK;
}

/* ---- names inside an If branch ---- */

static uint32_t scope_hash(const char *s)
{
    uint32_t h = 2166136261u; /* FNV-1a */
    for (; *s; s++) h = (h ^ (uint8_t)*s) * 16777619u;
    return h;
}

int32_t ig__onnx_scope_find(const ig_onnx_scope *s, const char *name)
{
    if (!s->cap) return -1;
    for (uint32_t m = s->cap - 1, i = scope_hash(name) & m; s->names[i]; i = (i + 1) & m)
        if (!strcmp(s->names[i], name)) return s->ids[i];
    return -1;
}

static bool scope_put(ig_onnx_scope *s, const char *name, int32_t id)
{
    if ((uint32_t)(s->n + 1) * 2 > s->cap) { /* grow: the table stays at most half full */
        uint32_t cap = s->cap ? s->cap * 2 : 64;
        const char **names = ig__arena_array(s->arena, cap, sizeof(char *));
        int32_t *ids = ig__arena_array(s->arena, cap, sizeof(int32_t));
        if (!names || !ids || cap < s->cap) return false;
        memset(names, 0, sizeof(char *) * cap);
        for (uint32_t k = 0; k < s->cap; k++) {
            if (!s->names[k]) continue;
            uint32_t i = scope_hash(s->names[k]) & (cap - 1);
            while (names[i]) i = (i + 1) & (cap - 1);
            names[i] = s->names[k];
            ids[i] = s->ids[k];
        }
        s->names = names;
        s->ids = ids;
        s->cap = cap;
    }
    const char *copy = ig__arena_strdup(s->arena, name);
    if (!copy) return false;
    uint32_t i = scope_hash(name) & (s->cap - 1);
    while (s->names[i]) i = (i + 1) & (s->cap - 1);
    s->names[i] = copy;
    s->ids[i] = id;
    s->n++;
    return true;
}

/* A fresh value of g for the branch's own tensor `name` (an initializer or a node output). */
static ingot_status scope_define(ig_onnx_imp *im, ig_graph *g, const char *name, int32_t *id)
{
    if (ig__onnx_scope_find(im->scope, name) >= 0)
        return ig__pb_errf(&im->pb, INGOT_ERR_MODEL_INVALID, NULL, "tensor '%.200s' is defined twice in the branch",
                           name);
    if ((*id = ig__graph_new_value(g, name, im->pb.err)) < 0) return INGOT_ERR_OUT_OF_MEMORY;
    if (!scope_put(im->scope, name, *id)) return oom(im, "the names of an If branch");
    return INGOT_OK;
}

/* A name the branch reads: its own tensor, one of a branch around it, or one of the main graph. */
static ingot_status scope_resolve(ig_onnx_imp *im, const ig_graph *g, const char *name, const char *reader, int32_t *id)
{
    for (const ig_onnx_scope *s = im->scope; s; s = s->parent) {
        if ((*id = ig__onnx_scope_find(s, name)) >= 0) return INGOT_OK;
        if (!s->parent && (*id = ig__graph_find(g, name)) >= 0 && *id < s->n_outer) return INGOT_OK;
    }
    return ig__pb_errf(&im->pb, INGOT_ERR_MODEL_INVALID, NULL,
                       "%s reads tensor '%.200s', which neither the branch nor a graph around it defines", reader,
                       name);
}

/* The value of a node's input or output name: in the main graph the name itself (created when new), in
 * an If branch what the scope says (outputs were defined before the branch's nodes were read). */
static ingot_status node_value(ig_onnx_imp *im, ig_graph *g, const char *name, bool output, const char *label,
                               int32_t *id)
{
    if (!im->scope) return (*id = ig__graph_value(g, name, im->pb.err)) < 0 ? INGOT_ERR_OUT_OF_MEMORY : INGOT_OK;
    if (output) {
        *id = ig__onnx_scope_find(im->scope, name);
        return *id >= 0 ? INGOT_OK
                        : ig__errf(im->pb.err, INGOT_ERR_INTERNAL, "branch output '%.200s' not defined", name);
    }
    char reader[300];
    snprintf(reader, sizeof reader, "node '%.200s'", label);
    return scope_resolve(im, g, name, reader, id);
}

static ingot_status parse_node(ig_onnx_imp *im, ig_graph *g, ig_pb_msg *m, int64_t index)
{
    ig_pb_ctx *c = &im->pb;
    ig_pb_field f;
    int r;
    ingot_status st;
    int64_t n_in = 0, n_out = 0, n_attr = 0;
    const char *name = "", *op_type = "", *domain = "";
    PB_LOOP(m, f, r)
    {
        st = INGOT_OK;
        switch (f.num) {
        case F_NODE_INPUT: n_in++; break;
        case F_NODE_OUTPUT: n_out++; break;
        case F_NODE_ATTR: n_attr++; break;
        case F_NODE_NAME: st = ig__onnx_str(im, &f, &name); break;
        case F_NODE_OP_TYPE: st = ig__onnx_str(im, &f, &op_type); break;
        case F_NODE_DOMAIN: st = ig__onnx_str(im, &f, &domain); break;
        default: break;
        }
        if (st) return st;
    }
    if (r < 0) return INGOT_ERR_MODEL_PARSE;
    const char *label = name[0] ? name : op_type;
    if (!op_type[0])
        return ig__pb_errf(c, INGOT_ERR_MODEL_INVALID, NULL, "node %" PRId64 " ('%.200s') has an empty op_type", index,
                           name);
    if (n_in > INT32_MAX || n_out > INT32_MAX || n_attr > INT32_MAX)
        return ig__pb_errf(c, INGOT_ERR_MODEL_INVALID, NULL, "node '%.200s' has too many inputs, outputs or attributes",
                           label);
    int64_t opset = ig__graph_opset(g, domain);
    if (opset == 0 && (!domain[0] || !strcmp(domain, "ai.onnx")))
        return ig__pb_errf(c, INGOT_ERR_MODEL_INVALID, NULL,
                           "model imports no opset for domain 'ai.onnx', which node '%.200s' (%.200s) uses "
                           "(ModelProto.opset_import is missing it)",
                           label, op_type);
    int32_t id = ig__graph_add_node(g, name, op_type, domain, (int32_t)n_in, (int32_t)n_out, (int32_t)n_attr, c->err);
    if (id < 0) return INGOT_ERR_OUT_OF_MEMORY;
    g->nodes[id].opset = opset > INT32_MAX ? INT32_MAX : (int32_t)opset;
    label = ig__node_label(&g->nodes[id]);

    int32_t ki = 0, ko = 0, ka = 0;
    char namebuf[256];
    ig__pb_rewind(m);
    PB_LOOP(m, f, r)
    {
        if (f.num == F_NODE_INPUT) {
            const char *s;
            if ((st = name_of(im, &f, namebuf, sizeof namebuf, &s))) return st;
            int32_t v = -1;
            if (s[0] && (st = node_value(im, g, s, false, label, &v))) return st;
            g->nodes[id].inputs[ki++] = v;
        } else if (f.num == F_NODE_OUTPUT) {
            const char *s;
            if ((st = name_of(im, &f, namebuf, sizeof namebuf, &s))) return st;
            int32_t v = -1;
            if (s[0]) {
                if ((st = node_value(im, g, s, true, label, &v))) return st;
                ig_value *val = &g->values[v];
                if (val->producer == id)
                    return ig__pb_errf(c, INGOT_ERR_MODEL_INVALID, NULL,
                                       "node '%.200s' (%.200s) lists output '%.200s' twice", label, op_type, s);
                if (val->producer >= 0)
                    return ig__pb_errf(c, INGOT_ERR_MODEL_INVALID, NULL,
                                       "tensor '%.200s' is produced by node '%.200s' and again by node '%.200s'", s,
                                       ig__node_label(&g->nodes[val->producer]), label);
                if (val->flags & IG_VAL_INITIALIZER)
                    return ig__pb_errf(c, INGOT_ERR_MODEL_INVALID, NULL,
                                       "tensor '%.200s' is an initializer and also the output of node '%.200s'", s,
                                       label);
                if (val->flags & IG_VAL_INPUT)
                    return ig__pb_errf(c, INGOT_ERR_MODEL_INVALID, NULL,
                                       "tensor '%.200s' is a graph input and also the output of node '%.200s'", s,
                                       label);
                val->producer = id;
            }
            g->nodes[id].outputs[ko++] = v;
        } else if (f.num == F_NODE_ATTR) {
            ig_pb_msg am;
            if ((st = ig__pb_enter(m, &f, &ig__pb_attribute, "attribute", ka, &am))) return st;
            ig_attr *a = &g->nodes[id].attrs[ka];
            if ((st = parse_attribute(im, g, &am, label, a))) return st;
            ig__pb_leave(c);
            ka++;
        }
    }
    if (r < 0) return INGOT_ERR_MODEL_PARSE;
    const char *dup = NULL;
    if ((st = duplicate_attr(&g->nodes[id], &dup, c->err))) return st;
    if (dup)
        return ig__pb_errf(c, INGOT_ERR_MODEL_INVALID, NULL, "node '%.200s' (%.200s) has attribute '%.200s' twice",
                           label, op_type, dup);
    return check_attr_types(c, &g->nodes[id], label);
}

/* ---- graph ---- */

static ingot_status parse_initializer(ig_onnx_imp *im, ig_graph *g, ig_pb_msg *m, int64_t index)
{
    ig_const cst;
    bool loaded;
    ingot_status st = ig__onnx_tensor(im, m, "initializer", &cst, &loaded);
    if (st) return st;
    if (!cst.name[0])
        return ig__pb_errf(&im->pb, INGOT_ERR_MODEL_INVALID, NULL, "initializer %" PRId64 " has no name", index);
    int32_t id;
    if (im->scope) { /* an If branch's: a fresh name in the main graph */
        if ((st = scope_define(im, g, cst.name, &id))) return st;
    } else {
        if (ig__graph_find(g, cst.name) >= 0)
            return ig__pb_errf(&im->pb, INGOT_ERR_MODEL_INVALID, NULL,
                               "initializer '%.200s' appears twice in the graph", cst.name);
        if ((id = ig__graph_value(g, cst.name, im->pb.err)) < 0) return INGOT_ERR_OUT_OF_MEMORY;
    }
    ig_value *v = &g->values[id];
    cst.name = v->name;
    v->flags |= IG_VAL_INITIALIZER;
    v->dtype = cst.dtype;
    v->shape.rank = cst.rank;
    for (int32_t i = 0; i < cst.rank; i++) v->shape.d[i] = ig__dim_const(cst.dims[i]);
    v->c = cst;
    /* external data left unloaded: the shape is known, the values are not */
    if (loaded) v->flags |= IG_VAL_CONST;
    g->n_initializers++;
    return INGOT_OK;
}

static ingot_status parse_graph(ig_onnx_imp *im, ig_graph *g, ig_pb_msg *m)
{
    ig_pb_ctx *c = &im->pb;
    ig_pb_field f;
    int r;
    ingot_status st;
    int64_t n_init = 0, n_in = 0, n_out = 0, n_node = 0, n_vi = 0;

    /* pass 1: name, initializers (all of them before any input is classified) */
    PB_LOOP(m, f, r)
    {
        switch (f.num) {
        case F_GRAPH_NAME:
            if ((st = ig__onnx_str(im, &f, &g->name))) return st;
            break;
        case F_GRAPH_INIT: {
            ig_pb_msg tm;
            if ((st = ig__pb_enter(m, &f, &ig__pb_tensor, "initializer", n_init, &tm))) return st;
            if ((st = parse_initializer(im, g, &tm, n_init))) return st;
            ig__pb_leave(c);
            n_init++;
            break;
        }
        case F_GRAPH_SPARSE_INIT:
            return ig__pb_errf(c, INGOT_ERR_MODEL_UNSUPPORTED_OP, &f,
                               "sparse initializers (at byte %zu) are not supported; densify the model first "
                               "(e.g. onnx's sparse-to-dense conversion)",
                               f.tag_off);
        case F_GRAPH_INPUT: n_in++; break;
        case F_GRAPH_OUTPUT: n_out++; break;
        default: break;
        }
    }
    if (r < 0) return INGOT_ERR_MODEL_PARSE;
    if (n_in > INT32_MAX || n_out > INT32_MAX)
        return ig__pb_errf(c, INGOT_ERR_MODEL_INVALID, NULL, "graph has too many inputs or outputs");
    g->inputs = ig__arena_array(&g->arena, (size_t)n_in + 1, sizeof(int32_t));
    g->outputs = ig__arena_array(&g->arena, (size_t)n_out + 1, sizeof(int32_t));
    if (!g->inputs || !g->outputs) return oom(im, "graph inputs");

    /* pass 2: graph inputs */
    ig__pb_rewind(m);
    int64_t k = 0;
    PB_LOOP(m, f, r)
    {
        if (f.num != F_GRAPH_INPUT) continue;
        ig_pb_msg vm;
        const char *name;
        decl_type dt;
        if ((st = ig__pb_enter(m, &f, &ig__pb_value_info, "input", k, &vm))) return st;
        if ((st = parse_value_info(im, g, &vm, &name, &dt))) return st;
        if (!name[0]) return ig__pb_errf(c, INGOT_ERR_MODEL_INVALID, NULL, "graph input %" PRId64 " has no name", k);
        int32_t id = ig__graph_find(g, name);
        if (id >= 0 && (g->values[id].flags & IG_VAL_INITIALIZER)) {
            /* a weight listed as an input too (IR < 4 style, or an overridable initializer): its
             * declaration must agree with the initializer, which is what runs */
            const ig_value *w = &g->values[id];
            if (dt.has_type && dt.dtype != INGOT_DTYPE_UNDEFINED && dt.dtype != w->dtype)
                return ig__pb_errf(c, INGOT_ERR_MODEL_INVALID, NULL,
                                   "graph input '%.200s' is declared %s but its initializer is %s", name,
                                   ingot_dtype_name(dt.dtype), ingot_dtype_name(w->dtype));
            bool same = !dt.has_type || dt.shape.rank < 0 || dt.shape.rank == w->shape.rank;
            for (int32_t d = 0; same && dt.has_type && d < dt.shape.rank; d++)
                same = !ig__dim_known(dt.shape.d[d]) || dt.shape.d[d].n == w->shape.d[d].n;
            if (!same) {
                char sd[256], si[256];
                return ig__pb_errf(c, INGOT_ERR_MODEL_INVALID, NULL,
                                   "graph input '%.200s' is declared with shape %s but its initializer has shape %s",
                                   name, ig__shape_str(g, &dt.shape, sd, sizeof sd),
                                   ig__shape_str(g, &w->shape, si, sizeof si));
            }
            if (dt.has_type && !(g->values[id].flags & IG_VAL_DECLARED)) set_decl(&g->values[id], &dt);
        } else {
            if (id >= 0)
                return ig__pb_errf(c, INGOT_ERR_MODEL_INVALID, NULL, "graph input '%.200s' is listed twice", name);
            if (!dt.has_type)
                return ig__pb_errf(c, INGOT_ERR_MODEL_INVALID, NULL, "graph input '%.200s' declares no tensor type",
                                   name);
            if (dt.dtype == INGOT_DTYPE_UNDEFINED)
                return ig__pb_errf(c, INGOT_ERR_MODEL_INVALID, NULL, "graph input '%.200s' declares no element type",
                                   name);
            if ((id = ig__graph_value(g, name, c->err)) < 0) return INGOT_ERR_OUT_OF_MEMORY;
            ig_value *v = &g->values[id];
            v->flags |= IG_VAL_INPUT;
            set_decl(v, &dt);
            v->dtype = dt.dtype;
            v->shape = dt.shape;
            g->inputs[g->n_inputs++] = id;
        }
        ig__pb_leave(c);
        k++;
    }
    if (r < 0) return INGOT_ERR_MODEL_PARSE;

    /* pass 3: nodes */
    ig__pb_rewind(m);
    PB_LOOP(m, f, r)
    {
        if (f.num != F_GRAPH_NODE) continue;
        ig_pb_msg nm;
        if (n_node >= INT32_MAX) return ig__pb_errf(c, INGOT_ERR_MODEL_INVALID, NULL, "graph has too many nodes");
        if ((st = ig__pb_enter(m, &f, &ig__pb_node, "node", n_node, &nm))) return st;
        if ((st = parse_node(im, g, &nm, n_node))) return st;
        ig__pb_leave(c);
        n_node++;
    }
    if (r < 0) return INGOT_ERR_MODEL_PARSE;

    /* pass 4: outputs, then value_info (hints: the first declaration of a tensor wins) */
    ig__pb_rewind(m);
    k = 0;
    PB_LOOP(m, f, r)
    {
        if (f.num != F_GRAPH_OUTPUT && f.num != F_GRAPH_VALUE_INFO) continue;
        bool is_out = f.num == F_GRAPH_OUTPUT;
        ig_pb_msg vm;
        const char *name;
        decl_type dt;
        if ((st = ig__pb_enter(m, &f, &ig__pb_value_info, is_out ? "output" : "value_info", is_out ? k : n_vi, &vm)))
            return st;
        if ((st = parse_value_info(im, g, &vm, &name, &dt))) return st;
        int32_t id;
        if (is_out) {
            if (!name[0])
                return ig__pb_errf(c, INGOT_ERR_MODEL_INVALID, NULL, "graph output %" PRId64 " has no name", k);
            if ((id = ig__graph_value(g, name, c->err)) < 0) return INGOT_ERR_OUT_OF_MEMORY;
            g->values[id].flags |= IG_VAL_OUTPUT;
            g->outputs[g->n_outputs++] = id;
            k++;
        } else {
            id = name[0] ? ig__graph_find(g, name) : -1; /* a hint about a tensor no node uses is dropped */
            n_vi++;
        }
        if (id >= 0 && dt.has_type && !(g->values[id].flags & IG_VAL_DECLARED)) set_decl(&g->values[id], &dt);
        ig__pb_leave(c);
    }
    return r < 0 ? INGOT_ERR_MODEL_PARSE : INGOT_OK;
}

/* ---- an If branch ---- */

ingot_status ig__onnx_parse_branch(ig_onnx_file *file, ig_graph *g, const uint8_t *bytes, size_t len, const char *what,
                                   ig_onnx_scope *scope, int32_t *outs, int32_t n_outs, ig_err *err)
{
    static const uint8_t empty[1];
    ig_onnx_imp im;
    memset(&im, 0, sizeof im);
    ig__pb_init(&im.pb, len ? bytes : empty, len, what, err);
    im.arena = &g->arena;
    im.file = file;
    im.load_external = file->opt.load_external_data;
    im.scope = scope;
    ig_pb_ctx *c = &im.pb;
    ig_pb_msg m = ig__pb_root(c, &ig__pb_graph);
    ig_pb_field f;
    int r;
    ingot_status st;
    int64_t n_init = 0, n_node = 0, k = 0;
    char namebuf[256];

    /* pass 1: initializers, as constants with fresh names; a branch declares no inputs */
    PB_LOOP(&m, f, r)
    {
        if (f.num == F_GRAPH_INIT) {
            ig_pb_msg tm;
            if ((st = ig__pb_enter(&m, &f, &ig__pb_tensor, "initializer", n_init, &tm))) return st;
            if ((st = parse_initializer(&im, g, &tm, n_init))) return st;
            ig__pb_leave(c);
            n_init++;
        } else if (f.num == F_GRAPH_SPARSE_INIT) {
            return ig__pb_errf(c, INGOT_ERR_MODEL_UNSUPPORTED_OP, &f, "sparse initializers are not supported");
        } else if (f.num == F_GRAPH_INPUT) {
            return ig__pb_errf(c, INGOT_ERR_MODEL_INVALID, &f,
                               "an If branch takes no inputs, but this one declares one");
        } else if (f.num == F_GRAPH_OUTPUT) {
            k++;
        }
    }
    if (r < 0) return INGOT_ERR_MODEL_PARSE;
    if (k != n_outs)
        return ig__pb_errf(c, INGOT_ERR_MODEL_INVALID, NULL, "the branch has %" PRId64 " outputs; the If node has %d",
                           k, (int)n_outs);

    /* pass 2: every name the nodes write, so a node may read what a later one writes (as in the main graph) */
    ig__pb_rewind(&m);
    PB_LOOP(&m, f, r)
    {
        if (f.num != F_GRAPH_NODE) continue;
        ig_pb_msg nm;
        ig_pb_field nf;
        int nr;
        if ((st = ig__pb_enter(&m, &f, &ig__pb_node, "node", n_node, &nm))) return st;
        PB_LOOP(&nm, nf, nr)
        {
            const char *s;
            int32_t id;
            if (nf.num != F_NODE_OUTPUT) continue;
            if ((st = name_of(&im, &nf, namebuf, sizeof namebuf, &s))) return st;
            if (s[0] && (st = scope_define(&im, g, s, &id))) return st;
        }
        if (nr < 0) return INGOT_ERR_MODEL_PARSE;
        ig__pb_leave(c);
        n_node++;
    }
    if (r < 0) return INGOT_ERR_MODEL_PARSE;

    /* pass 3: the nodes, into g */
    ig__pb_rewind(&m);
    n_node = 0;
    PB_LOOP(&m, f, r)
    {
        if (f.num != F_GRAPH_NODE) continue;
        ig_pb_msg nm;
        if ((st = ig__pb_enter(&m, &f, &ig__pb_node, "node", n_node, &nm))) return st;
        if ((st = parse_node(&im, g, &nm, n_node))) return st;
        ig__pb_leave(c);
        n_node++;
    }
    if (r < 0) return INGOT_ERR_MODEL_PARSE;

    /* pass 4: the outputs, by position */
    ig__pb_rewind(&m);
    k = 0;
    PB_LOOP(&m, f, r)
    {
        if (f.num != F_GRAPH_OUTPUT) continue;
        ig_pb_msg vm;
        const char *name;
        decl_type dt;
        char reader[64];
        if ((st = ig__pb_enter(&m, &f, &ig__pb_value_info, "output", k, &vm))) return st;
        if ((st = parse_value_info(&im, g, &vm, &name, &dt))) return st;
        if (!name[0]) return ig__pb_errf(c, INGOT_ERR_MODEL_INVALID, NULL, "the output has no name");
        snprintf(reader, sizeof reader, "output %" PRId64 " of the branch", k);
        if ((st = scope_resolve(&im, g, name, reader, &outs[k]))) return st;
        ig__pb_leave(c);
        k++;
    }
    return r < 0 ? INGOT_ERR_MODEL_PARSE : INGOT_OK;
}

/* ---- model ---- */

static ingot_status parse_entry(ig_onnx_imp *im, ig_pb_msg *parent, const ig_pb_field *f, const char *name,
                                int64_t index, const char **key, const char **value)
{
    ig_pb_msg em;
    ingot_status st;
    if ((st = ig__pb_enter(parent, f, &ig__pb_string_entry, name, index, &em))) return st;
    *key = *value = "";
    ig_pb_field ef;
    int r;
    PB_LOOP(&em, ef, r)
    {
        if (ef.num == F_ENTRY_KEY && (st = ig__onnx_str(im, &ef, key))) return st;
        if (ef.num == F_ENTRY_VALUE && (st = ig__onnx_str(im, &ef, value))) return st;
    }
    if (r < 0) return INGOT_ERR_MODEL_PARSE;
    ig__pb_leave(&im->pb);
    return INGOT_OK;
}

static ingot_status parse_model(ig_onnx_imp *im, ig_graph *g)
{
    ig_pb_ctx *c = &im->pb;
    ig_pb_msg m = ig__pb_root(c, &ig__pb_model);
    ig_pb_field f, graph_f;
    int r;
    ingot_status st;
    int64_t n_opsets = 0, n_meta = 0, n_graph = 0;

    /* pass 1: counts; the graph's position */
    PB_LOOP(&m, f, r)
    {
        if (f.num == F_MODEL_OPSET)
            n_opsets++;
        else if (f.num == F_MODEL_META)
            n_meta++;
        else if (f.num == F_MODEL_GRAPH) {
            if (n_graph++)
                return ig__pb_errf(c, INGOT_ERR_MODEL_INVALID, &f,
                                   "a second graph at byte %zu (a model has one main graph)", f.tag_off);
            graph_f = f;
        }
    }
    if (r < 0) return INGOT_ERR_MODEL_PARSE;
    if (!n_graph) return ig__pb_errf(c, INGOT_ERR_MODEL_INVALID, NULL, "the model has no graph");
    if (n_opsets > INT32_MAX || n_meta > INT32_MAX)
        return ig__pb_errf(c, INGOT_ERR_MODEL_INVALID, NULL, "too many opset imports or metadata entries");
    g->opsets = ig__arena_array(&g->arena, (size_t)n_opsets + 1, sizeof(ig_opset));
    g->meta_keys = ig__arena_array(&g->arena, (size_t)n_meta + 1, sizeof(char *));
    g->meta_values = ig__arena_array(&g->arena, (size_t)n_meta + 1, sizeof(char *));
    if (!g->opsets || !g->meta_keys || !g->meta_values) return oom(im, "the model");

    /* pass 2: everything but the graph */
    ig__pb_rewind(&m);
    PB_LOOP(&m, f, r)
    {
        st = INGOT_OK;
        switch (f.num) {
        case F_MODEL_IR_VERSION: g->ir_version = (int64_t)f.u; break;
        case F_MODEL_PRODUCER_NAME: st = ig__onnx_str(im, &f, &g->producer_name); break;
        case F_MODEL_PRODUCER_VERSION: st = ig__onnx_str(im, &f, &g->producer_version); break;
        case F_MODEL_DOMAIN: st = ig__onnx_str(im, &f, &g->model_domain); break;
        case F_MODEL_VERSION: g->model_version = (int64_t)f.u; break;
        case F_MODEL_DOC: st = ig__onnx_str(im, &f, &g->doc); break;
        case F_MODEL_META: {
            int32_t i = g->n_meta;
            st = parse_entry(im, &m, &f, "metadata_props", i, &g->meta_keys[i], &g->meta_values[i]);
            if (!st) g->n_meta++;
            break;
        }
        case F_MODEL_OPSET: {
            ig_pb_msg om;
            int32_t i = g->n_opsets;
            if ((st = ig__pb_enter(&m, &f, &ig__pb_opset, "opset_import", i, &om))) return st;
            const char *domain = "";
            int64_t version = 0;
            ig_pb_field of;
            int orr;
            PB_LOOP(&om, of, orr)
            {
                if (of.num == F_OPSET_DOMAIN && (st = ig__onnx_str(im, &of, &domain))) return st;
                if (of.num == F_OPSET_VERSION) version = (int64_t)of.u;
            }
            if (orr < 0) return INGOT_ERR_MODEL_PARSE;
            int64_t prev = ig__graph_opset(g, domain);
            if (prev && prev != version)
                return ig__pb_errf(c, INGOT_ERR_MODEL_INVALID, NULL,
                                   "domain '%.200s' is imported twice, at versions %" PRId64 " and %" PRId64,
                                   domain[0] ? domain : "ai.onnx", prev, version);
            if (version <= 0 && (!domain[0] || !strcmp(domain, "ai.onnx")))
                return ig__pb_errf(c, INGOT_ERR_MODEL_INVALID, NULL, "domain '%.200s' is imported at version %" PRId64,
                                   domain[0] ? domain : "ai.onnx", version);
            /* a later opset may change what an op means: refused, as ONNX Runtime refuses opsets it
             * does not know, rather than run with the semantics of an older one */
            if (version > IG_ONNX_MAX_OPSET && (!domain[0] || !strcmp(domain, "ai.onnx")))
                return ig__pb_errf(c, INGOT_ERR_MODEL_UNSUPPORTED_OP, NULL,
                                   "the model imports opset %" PRId64
                                   " of domain 'ai.onnx'; ingot implements opsets 1 to %d (those of onnx %s)",
                                   version, IG_ONNX_MAX_OPSET, IG_ONNX_MAX_OPSET_RELEASE);
            ig__pb_leave(c);
            g->opsets[i].domain = domain;
            g->opsets[i].version = version;
            g->n_opsets++;
            break;
        }
        default: break;
        }
        if (st) return st;
    }
    if (r < 0) return INGOT_ERR_MODEL_PARSE;

    /* pass 3: the graph */
    ig_pb_msg gm;
    if ((st = ig__pb_enter(&m, &graph_f, &ig__pb_graph, "graph", -1, &gm))) return st;
    if ((st = parse_graph(im, g, &gm))) return st;
    ig__pb_leave(c);
    return INGOT_OK;
}

/* ---- entry points ---- */

static ig_onnx_options default_options(const ig_onnx_options *opt)
{
    if (opt) return *opt;
    ig_onnx_options d = {true, true};
    return d;
}

/* A hint for the commonest wrong input: a text file (onnx's printable form, JSON, an HTML error page). */
static void hint_text(const ig_onnx_file *file, ig_err *err)
{
    size_t n = file->model.size < 64 ? file->model.size : 64;
    if (!err || err->status != INGOT_ERR_MODEL_PARSE || n == 0) return;
    for (size_t i = 0; i < n; i++) {
        uint8_t b = file->model.data[i];
        if (!((b >= 0x20 && b < 0x7f) || b == '\n' || b == '\r' || b == '\t')) return;
    }
    size_t len = strlen(err->msg);
    snprintf(err->msg + len, sizeof err->msg - len, " (the file starts with text; an ONNX model is binary protobuf)");
}

/* Parse the ModelProto at pb[0 .. n) (file's model, or a graph embedded in it) into g. */
static ingot_status import(ig_onnx_file *file, const uint8_t *pb, size_t n, ig_graph *g, ig_err *err)
{
    ig_onnx_imp im;
    memset(&im, 0, sizeof im);
    ig__pb_init(&im.pb, pb, n, "ModelProto", err);
    im.arena = &g->arena;
    im.file = file;
    im.load_external = file->opt.load_external_data;
    if (n == 0) return ig__errf(err, INGOT_ERR_MODEL_PARSE, "ModelProto: the model is empty (0 bytes)");
    ingot_status st = parse_model(&im, g);
    if (st) {
        hint_text(file, err);
        return st;
    }
    if ((st = ig__graph_toposort(g, err))) return st;
    return ig__graph_verify(g, err);
}

ig_onnx_file *ig__onnx_retain(ig_onnx_file *file)
{
    if (file) atomic_fetch_add_explicit(&file->refs, 1, memory_order_relaxed);
    return file;
}

void ig__onnx_close(ig_onnx_file *file)
{
    if (!file) return;
    /* acq_rel: every holder's reads of the mapping happen before the unmap by the last one */
    if (atomic_fetch_sub_explicit(&file->refs, 1, memory_order_acq_rel) > 1) return;
    ig__onnx_blob_close(&file->model);
    for (int32_t i = 0; i < file->n_ext; i++) ig__onnx_blob_close(&file->ext[i]);
    ig__free(file->ext);
    free(file->dir); /* from realpath() */
    ig__free(file);
}

ingot_status ig__onnx_load_file(const char *path, const ig_onnx_options *opt, ig_graph *g, ig_onnx_file **out,
                                ig_err *err)
{
    *out = NULL;
    ig_onnx_file *file = ig__calloc(1, sizeof *file);
    if (!file) return ig__errf(err, INGOT_ERR_OUT_OF_MEMORY, "out of memory opening '%s'", path);
    atomic_init(&file->refs, 1);
    file->opt = default_options(opt);
    ingot_status st = ig__onnx_blob_open(path, file->opt.use_mmap, "model file", &file->model, err);
    if (st) goto fail;
    /* External data lies next to the path given (as onnx resolves it), even when that is a symlink
     * to a file elsewhere; the folder's real path is what locations must stay inside. */
    size_t dl = strrchr(path, '/') ? (size_t)(strrchr(path, '/') - path) : 0;
    char *dir = ig__malloc(dl + 2);
    if (!dir) {
        st = ig__errf(err, INGOT_ERR_OUT_OF_MEMORY, "out of memory opening '%s'", path);
        goto fail;
    }
    if (!strchr(path, '/')) {
        strcpy(dir, ".");
    } else if (dl == 0) {
        strcpy(dir, "/");
    } else {
        memcpy(dir, path, dl);
        dir[dl] = '\0';
    }
    file->dir = realpath(dir, NULL);
    ig__free(dir);
    if (!file->dir) {
        st = ig__errf(err, INGOT_ERR_IO, "cannot resolve the folder of model file '%s'", path);
        goto fail;
    }
    if ((st = import(file, file->model.data, file->model.size, g, err))) goto fail;
    *out = file;
    return INGOT_OK;
fail:
    ig__onnx_close(file);
    return st;
}

ingot_status ig__onnx_load_buffer(const void *data, size_t n, const char *base_dir, const ig_onnx_options *opt,
                                  ig_graph *g, ig_onnx_file **out, ig_err *err)
{
    *out = NULL;
    ig_onnx_file *file = ig__calloc(1, sizeof *file);
    ingot_status st = INGOT_OK;
    if (!file) return ig__errf(err, INGOT_ERR_OUT_OF_MEMORY, "out of memory loading a %zu-byte model", n);
    atomic_init(&file->refs, 1);
    file->opt = default_options(opt);
    if (n) {
        file->model.heap = ig__malloc(n);
        if (!file->model.heap) {
            st = ig__errf(err, INGOT_ERR_OUT_OF_MEMORY, "out of memory copying a %zu-byte model", n);
            goto fail;
        }
        memcpy(file->model.heap, data, n);
        file->model.data = file->model.heap;
        file->model.size = n;
    }
    if (base_dir && !(file->dir = realpath(base_dir, NULL))) {
        st = ig__errf(err, INGOT_ERR_IO, "cannot resolve the external data folder '%s'", base_dir);
        goto fail;
    }
    if ((st = import(file, file->model.data, file->model.size, g, err))) goto fail;
    *out = file;
    return INGOT_OK;
fail:
    ig__onnx_close(file);
    return st;
}

ingot_status ig__onnx_open_container(const char *path, const void *buf, size_t n, bool use_mmap, ig_onnx_file **out,
                                     const uint8_t **data, size_t *size, ig_err *err)
{
    *out = NULL;
    ig_onnx_file *file = ig__calloc(1, sizeof *file);
    if (!file) return ig__errf(err, INGOT_ERR_OUT_OF_MEMORY, "out of memory opening an engine file");
    atomic_init(&file->refs, 1);
    file->opt = (ig_onnx_options){use_mmap, true};
    ingot_status st = INGOT_OK;
    if (path) {
        st = ig__onnx_blob_open(path, use_mmap, "engine file", &file->model, err);
    } else if (n) {
        if (!(file->model.heap = ig__malloc(n))) {
            st = ig__errf(err, INGOT_ERR_OUT_OF_MEMORY, "out of memory copying a %zu-byte engine file", n);
        } else {
            memcpy(file->model.heap, buf, n);
            file->model.data = file->model.heap;
            file->model.size = n;
        }
    }
    if (st != INGOT_OK) {
        ig__onnx_close(file);
        return st;
    }
    *out = file;
    *data = file->model.data;
    *size = file->model.size;
    return INGOT_OK;
}

ingot_status ig__onnx_import_embedded(ig_onnx_file *file, const uint8_t *pb, size_t pb_len, const uint8_t *weights,
                                      size_t weights_len, ig_graph *g, ig_err *err)
{
    file->embedded = true;
    file->weights = weights;
    file->weights_size = weights_len;
    ingot_status st = import(file, pb, pb_len, g, err);
    if (st == INGOT_ERR_MODEL_PARSE || st == INGOT_ERR_MODEL_INVALID || st == INGOT_ERR_MODEL_UNSUPPORTED_OP)
        err->status = st = INGOT_ERR_ENGINE_FILE; /* what ingot wrote, it reads: anything else is damage */
    if (st != INGOT_OK) ig__err_prefix(err, "engine file, section GRPH");
    return st;
}
