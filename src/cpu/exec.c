/* exec.c -- the CPU executor: one planned arena, then every executed node in the plan's order. */
#define _POSIX_C_SOURCE 200809L
#include "exec.h"

#include <inttypes.h>
#include <stdint.h>
#include <time.h>

#define CANARY 0xA5u
#define POISON 0xFFu /* all-ones: NaN in every float type, -1 in every signed int */

static size_t align_up(size_t n) { return (n + IG_CPU_ALIGN - 1) & ~(size_t)(IG_CPU_ALIGN - 1); }

/* ---- weights ------------------------------------------------------------------------------------ */

void ig__cpu_weights_free(ig_cpu_weights *w)
{
    if (!w) return;
    ig__free(w->ptr);
    ig__free(w->read);
    ig__free_aligned(w->block);
    memset(w, 0, sizeof *w);
}

/* Initializers a node (or the graph's outputs) reads: after the optimizer folded BatchNormalization into
 * a filter, say, the original filter is read by nothing and gets no copy. */
static bool *read_values(const ig_graph *g)
{
    bool *r = ig__calloc((size_t)g->n_values + 1, sizeof(bool));
    if (!r) return NULL;
    for (int32_t k = 0; k < g->n_nodes; k++)
        for (int32_t i = 0; i < g->nodes[k].n_inputs; i++)
            if (g->nodes[k].inputs[i] >= 0) r[g->nodes[k].inputs[i]] = true;
    for (int32_t j = 0; j < g->n_outputs; j++) r[g->outputs[j]] = true;
    return r;
}

ingot_status ig__cpu_weights_make(ig_cpu_weights *w, const ig_graph *g, ig_err *err)
{
    memset(w, 0, sizeof *w);
    bool *read = read_values(g);
    if (!read) return ig__errf(err, INGOT_ERR_OUT_OF_MEMORY, "out of memory");
    size_t total = 0;
    for (int32_t i = 0; i < g->n_values; i++) {
        const ig_value *v = &g->values[i];
        if ((v->flags & IG_VAL_INITIALIZER) && read[i] && v->c.n_bytes && (uintptr_t)v->c.data % IG_CPU_ALIGN)
            total += align_up(v->c.n_bytes);
    }
    w->n_values = g->n_values;
    w->ptr = ig__calloc((size_t)g->n_values + 1, sizeof(void *));
    w->block = ig__malloc_aligned(total ? total : IG_CPU_ALIGN, IG_CPU_ALIGN);
    if (!w->ptr || !w->block) {
        ig__free(read);
        ig__cpu_weights_free(w);
        return ig__errf(err, INGOT_ERR_OUT_OF_MEMORY, "out of memory copying %zu bytes of weights", total);
    }
    w->bytes = total;
    w->read = read;
    size_t off = 0;
    for (int32_t i = 0; i < g->n_values; i++) {
        const ig_value *v = &g->values[i];
        if (!(v->flags & IG_VAL_INITIALIZER) || !read[i] || !v->c.n_bytes || (uintptr_t)v->c.data % IG_CPU_ALIGN == 0)
            continue;
        w->ptr[i] = w->block + off;
        memcpy(w->ptr[i], v->c.data, v->c.n_bytes);
        off += align_up(v->c.n_bytes);
    }
    return INGOT_OK;
}

/* ---- layout ------------------------------------------------------------------------------------- */

void ig__cpu_release(ig_cpu_exec *x)
{
    if (!x) return;
    ig__free(x->t);
    ig__free(x->own_order);
    if (x->arena_owned) ig__free_aligned(x->arena);
    ig__free_aligned(x->inputs);
    ig__free(x->scratch_offset);
    ig__free(x->scratch_bytes);
    memset(x, 0, sizeof *x);
}

/* Values the executor computes: produced by a node that runs (not folded, not constant). */
static bool computed(const ig_graph *g, const ig_value *v)
{
    return v->producer >= 0 && !(v->flags & IG_VAL_CONST) && !g->nodes[v->producer].folded &&
           v->dtype != INGOT_DTYPE_UNDEFINED;
}

size_t ig__cpu_arena_bytes(const ig_graph *g, const ig_plan *plan)
{
    if (plan) return (size_t)plan->arena_bytes;
    size_t total = 0;
    for (int32_t i = 0; i < g->n_values; i++)
        if (computed(g, &g->values[i])) total += align_up(ig__value_bytes(&g->values[i]));
    for (int32_t k = 0; k < g->n_nodes; k++) {
        const ig_node *n = &g->nodes[k];
        const ig_op_def *d = n->op >= 0 ? ig__op_table[n->op] : NULL;
        if (!n->folded && d && d->cpu_scratch) total += align_up(d->cpu_scratch(g, n));
    }
    return total;
}

ingot_status ig__cpu_prepare(ig_cpu_exec *x, const ig_graph *g, const ig_plan *plan, const ig_cpu_weights *w,
                             void *arena, bool canaries, struct ig_pool *pool, ig_err *err)
{
    ig__cpu_release(x);
    x->g = g;
    x->plan = plan;
    x->pool = pool;
    x->canaries = canaries && plan && plan->guard > 0;
    x->t = ig__calloc((size_t)g->n_values + 1, sizeof(ig_tensor));
    x->scratch_offset = ig__calloc((size_t)g->n_nodes + 1, sizeof(size_t));
    x->scratch_bytes = ig__calloc((size_t)g->n_nodes + 1, sizeof(size_t));
    if (!x->t || !x->scratch_offset || !x->scratch_bytes) goto oom;

    size_t inputs = 0;
    for (int32_t i = 0; i < g->n_values; i++) {
        const ig_value *v = &g->values[i];
        if (v->dtype == INGOT_DTYPE_UNDEFINED) continue; /* a name no node uses */
        if (!ig__shape_known(&v->shape)) {
            if (!computed(g, v) && !(v->flags & IG_VAL_INPUT)) continue; /* unused by any executed node */
            char s[256];
            ig__cpu_release(x);
            return ig__errf(err, INGOT_ERR_MODEL_SHAPE,
                            "tensor '%s' has shape %s, which is not concrete; bind the inputs' shapes first", v->name,
                            ig__shape_str(g, &v->shape, s, sizeof s));
        }
        int64_t dims[IG_MAX_RANK];
        for (int32_t k = 0; k < v->shape.rank; k++) dims[k] = v->shape.d[k].n;
        ig__tensor_set_shape(&x->t[i], v->dtype, v->shape.rank, dims);
        if ((v->flags & IG_VAL_INPUT) && !(v->flags & IG_VAL_CONST)) inputs += align_up(ig__value_bytes(v));
    }

    /* the order: the plan's, or the graph's without folded nodes */
    if (plan) {
        x->order = plan->order;
        x->n_steps = plan->n_steps;
    } else {
        x->own_order = ig__malloc(sizeof(int32_t) * ((size_t)g->n_nodes + 1));
        if (!x->own_order) goto oom;
        for (int32_t k = 0; k < g->n_nodes; k++)
            if (!g->nodes[g->order[k]].folded) x->own_order[x->n_steps++] = g->order[k];
        x->order = x->own_order;
    }

    x->arena_bytes = ig__cpu_arena_bytes(g, plan);
    x->arena_owned = arena == NULL;
    x->arena = arena ? arena : ig__malloc_aligned(x->arena_bytes ? x->arena_bytes : IG_CPU_ALIGN, IG_CPU_ALIGN);
    x->inputs_bytes = inputs;
    x->inputs = ig__malloc_aligned(inputs ? inputs : IG_CPU_ALIGN, IG_CPU_ALIGN);
    if (!x->arena || !x->inputs) goto oom;

    size_t i_off = 0, a_off = 0;
    for (int32_t i = 0; i < g->n_values; i++) {
        const ig_value *v = &g->values[i];
        if (v->dtype == INGOT_DTYPE_UNDEFINED || !ig__shape_known(&v->shape)) continue;
        if (v->flags & IG_VAL_CONST) {
            if (w && w->read && i < w->n_values && !w->read[i]) continue; /* nothing reads it */
            x->t[i].data = w && i < w->n_values && w->ptr[i] ? w->ptr[i] : (void *)v->c.data;
            if ((uintptr_t)x->t[i].data % IG_CPU_ALIGN && v->c.n_bytes) {
                ig__cpu_release(x);
                return ig__errf(err, INGOT_ERR_INTERNAL, "constant '%s' is not aligned for the CPU kernels", v->name);
            }
        } else if (v->flags & IG_VAL_INPUT) {
            x->t[i].data = x->inputs + i_off;
            i_off += align_up(ig__value_bytes(v));
        } else if (!computed(g, v)) {
            continue;
        } else if (plan) {
            const ig_plan_value *pv = &plan->values[i];
            if (pv->kind == IG_PLAN_NONE) {
                ig__cpu_release(x);
                return ig__errf(err, INGOT_ERR_INTERNAL, "tensor '%s' has no place in the memory plan", v->name);
            }
            x->t[i].data = x->arena + pv->offset;
        } else {
            x->t[i].data = x->arena + a_off;
            a_off += align_up(ig__value_bytes(v));
        }
    }
    for (int32_t k = 0; k < g->n_nodes; k++) {
        const ig_node *n = &g->nodes[k];
        const ig_op_def *d = n->op >= 0 ? ig__op_table[n->op] : NULL;
        if (n->folded || !d) continue;
        if (plan) {
            x->scratch_offset[k] = (size_t)plan->scratch_offset[k];
            x->scratch_bytes[k] = (size_t)plan->scratch_bytes[k];
        } else if (d->cpu_scratch) {
            x->scratch_bytes[k] = d->cpu_scratch(g, n);
            x->scratch_offset[k] = a_off;
            a_off += align_up(x->scratch_bytes[k]);
        }
    }
    return INGOT_OK;
oom:
    ig__cpu_release(x);
    return ig__errf(err, INGOT_ERR_OUT_OF_MEMORY, "out of memory preparing the CPU executor");
}

void ig__cpu_set_input(ig_cpu_exec *x, int32_t input_index, const void *data, size_t bytes)
{
    int32_t v = x->g->inputs[input_index];
    if (bytes) memcpy(x->t[v].data, data, bytes);
}

/* ---- debug canaries ------------------------------------------------------------------------------ */

static const char *buffer_name(const ig_cpu_exec *x, const ig_plan_buffer *b)
{
    if (b->value >= 0) return x->g->values[b->value].name;
    return b->node >= 0 ? ig__node_label(&x->g->nodes[b->node]) : "?";
}

/* Before step s: buffers that become live get their guard written. */
static void canaries_arm(ig_cpu_exec *x, int32_t s)
{
    const ig_plan *p = x->plan;
    for (int32_t b = 0; b < p->n_buffers; b++)
        if (p->buffers[b].first == s) memset(x->arena + p->buffers[b].offset + p->buffers[b].bytes, CANARY, p->guard);
}

/* After step s: every live buffer's guard intact; buffers dead from now on are poisoned. */
static ingot_status canaries_check(ig_cpu_exec *x, int32_t s, ig_err *err)
{
    const ig_plan *p = x->plan;
    for (int32_t b = 0; b < p->n_buffers; b++) {
        const ig_plan_buffer *pb = &p->buffers[b];
        if (pb->first > s || pb->last < s) continue;
        const unsigned char *gd = x->arena + pb->offset + pb->bytes;
        for (uint64_t i = 0; i < p->guard; i++)
            if (gd[i] != CANARY) {
                const ig_node *n = &x->g->nodes[x->order[s]];
                return ig__errf(err, INGOT_ERR_INTERNAL,
                                "memory check: step %d, node '%s' (%s) wrote past the end of %s '%s' (%" PRIu64
                                " bytes at arena offset %" PRIu64 "; guard byte %" PRIu64 " changed)",
                                (int)s, ig__node_label(n), n->op_type, pb->value >= 0 ? "tensor" : "the scratch of",
                                buffer_name(x, pb), pb->bytes, pb->offset, i);
            }
        if (pb->last == s && !(pb->value >= 0 && (x->g->values[pb->value].flags & IG_VAL_OUTPUT)))
            memset(x->arena + pb->offset, POISON, pb->bytes + p->guard);
    }
    return INGOT_OK;
}

/* ---- run ---------------------------------------------------------------------------------------- */

ingot_status ig__cpu_run(ig_cpu_exec *x, ig_err *err)
{
    const ig_graph *g = x->g;
    const ig_tensor *in[64];
    ig_tensor *out[64];
    ingot_status st;
    if (x->canaries) memset(x->arena, POISON, x->arena_bytes);
    for (int32_t s = 0; s < x->n_steps; s++) {
        int32_t id = x->order[s];
        const ig_node *n = &g->nodes[id];
        const ig_op_def *d = ig__op_table[n->op];
        if (n->n_inputs > 64 || n->n_outputs > 64)
            return ig__errf(err, INGOT_ERR_MODEL_UNSUPPORTED_OP, "node '%s' (%s): more than 64 inputs or outputs",
                            ig__node_label(n), n->op_type);
        for (int32_t i = 0; i < n->n_inputs; i++) in[i] = n->inputs[i] >= 0 ? &x->t[n->inputs[i]] : NULL;
        for (int32_t i = 0; i < n->n_outputs; i++) out[i] = n->outputs[i] >= 0 ? &x->t[n->outputs[i]] : NULL;
        ig_exec ex = {.g = g,
                      .node = n,
                      .n_in = n->n_inputs,
                      .n_out = n->n_outputs,
                      .in = in,
                      .out = out,
                      .scratch = x->arena + x->scratch_offset[id],
                      .scratch_bytes = x->scratch_bytes[id],
                      .pool = x->pool,
                      .err = err};
        if (x->canaries) canaries_arm(x, s);
        struct timespec t0 = {0, 0}, t1;
        if (x->on_step) clock_gettime(CLOCK_MONOTONIC, &t0);
        if ((st = d->cpu(&ex)) != INGOT_OK) {
            if (err && err->status == INGOT_OK)
                ig__errf(err, st, "node '%s' (%s): kernel failed", ig__node_label(n), n->op_type);
            return st;
        }
        if (x->on_step) {
            clock_gettime(CLOCK_MONOTONIC, &t1);
            x->on_step(x->on_step_user, s, id, (double)(t1.tv_sec - t0.tv_sec) * 1e3 + (t1.tv_nsec - t0.tv_nsec) / 1e6);
        }
        if (x->canaries && (st = canaries_check(x, s, err)) != INGOT_OK) return st;
    }
    return INGOT_OK;
}
