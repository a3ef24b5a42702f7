/* engine_info.c -- an engine's inputs and outputs through the public API (what a program that loaded an
 * engine file, and has no model, asks). */
#include "api_internal.h"

#include <inttypes.h>

#include <string.h>

static ingot_status info(const ingot_engine *e, int32_t id, ingot_tensor_info *out)
{
    const ig_graph *g = &e->graph;
    const ig_value *v = &g->values[id];
    memset(out, 0, sizeof *out);
    out->name = v->name;
    /* as declared: the engine's graph is inferred at the declared shapes */
    out->dtype = v->dtype != INGOT_DTYPE_UNDEFINED ? v->dtype : v->decl_dtype;
    const ig_shape *s = v->shape.rank >= 0 ? &v->shape : &v->decl_shape;
    out->rank = s->rank;
    bool concrete = s->rank >= 0;
    for (int32_t k = 0; k < s->rank; k++) {
        out->dims[k].value = s->d[k].n;
        out->dims[k].symbol = ig__dim_known(s->d[k]) ? NULL : g->syms[s->d[k].sym];
        concrete = concrete && ig__dim_known(s->d[k]);
    }
    out->is_constant = (v->flags & IG_VAL_CONST) != 0;
    out->bytes = concrete ? ig__value_bytes(v) : 0;
    return INGOT_OK;
}

/* INGOT_ERR_INVALID_ARG with a message on e's runtime (a NULL e has no runtime to say it on): the NULL
 * argument `what`, or index i outside [0, n). */
static ingot_status bad_arg(const ingot_engine *e, const char *call, const char *what, int64_t i, int64_t n)
{
    if (!e) return INGOT_ERR_INVALID_ARG;
    ig_err err = {0};
    if (what)
        ig__errf(&err, INGOT_ERR_INVALID_ARG, "%s: %s is NULL", call, what);
    else
        ig__errf(&err, INGOT_ERR_INVALID_ARG, "%s: index %" PRId64 " is outside [0, %" PRId64 ")", call, i, n);
    return ig__api_fail(e->rt, &err);
}

int64_t ingot_engine_input_count(const ingot_engine *e) { return e ? e->graph.n_inputs : 0; }
int64_t ingot_engine_output_count(const ingot_engine *e) { return e ? e->graph.n_outputs : 0; }

ingot_status ingot_engine_input_info(const ingot_engine *e, int64_t i, ingot_tensor_info *out)
{
    if (!e || !out) return bad_arg(e, "ingot_engine_input_info", "out", 0, 0);
    if (i < 0 || i >= e->graph.n_inputs) return bad_arg(e, "ingot_engine_input_info", NULL, i, e->graph.n_inputs);
    return info(e, e->graph.inputs[i], out);
}

ingot_status ingot_engine_output_info(const ingot_engine *e, int64_t i, ingot_tensor_info *out)
{
    if (!e || !out) return bad_arg(e, "ingot_engine_output_info", "out", 0, 0);
    if (i < 0 || i >= e->graph.n_outputs) return bad_arg(e, "ingot_engine_output_info", NULL, i, e->graph.n_outputs);
    return info(e, e->graph.outputs[i], out);
}

ingot_status ingot_engine_input_default_shape(const ingot_engine *e, int64_t i, int32_t *rank,
                                              int64_t dims[INGOT_MAX_RANK])
{
    if (!e || !rank || !dims) return bad_arg(e, "ingot_engine_input_default_shape", !rank ? "rank" : "dims", 0, 0);
    if (i < 0 || i >= e->n_inputs) return bad_arg(e, "ingot_engine_input_default_shape", NULL, i, e->n_inputs);
    const ig_shape *s = &e->default_shapes[i];
    *rank = s->rank;
    for (int32_t k = 0; k < s->rank; k++) dims[k] = s->d[k].n;
    return INGOT_OK;
}
