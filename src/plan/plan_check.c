/*
 * plan_check.c -- verify a plan against its graph without trusting how it was made: the live range
 * of every value is recomputed from the graph and the plan's order, the sharing rules are checked
 * value by value, and the packed buffers go through ig__pack_check.
 */
#include "plan.h"

#include <inttypes.h>
#include <stdlib.h>

#define FAIL(...) ig__errf(err, INGOT_ERR_INTERNAL, "plan check: " __VA_ARGS__)

/* A planned tensor in its buffer group: the group's root and the step it is written at. */
typedef struct member {
    int32_t root, first, v;
} member;

static int cmp_member(const void *a, const void *b)
{
    const member *x = a, *y = b;
    if (x->root != y->root) return x->root < y->root ? -1 : 1;
    if (x->first != y->first) return x->first < y->first ? -1 : 1;
    return x->v < y->v ? -1 : x->v > y->v;
}

ingot_status ig__plan_check(const ig_graph *g, const ig_plan *p, ig_err *err)
{
    if (p->n_values != g->n_values || p->n_nodes != g->n_nodes)
        return FAIL("plan is for %d values and %d nodes, graph has %d and %d", (int)p->n_values, (int)p->n_nodes,
                    (int)g->n_values, (int)g->n_nodes);
    uint64_t al = p->align;
    if (!al || (al & (al - 1))) return FAIL("alignment %" PRIu64 " is not a power of two", al);
    if (p->arena_bytes % al)
        return FAIL("arena %" PRIu64 " is not a multiple of the alignment %" PRIu64, p->arena_bytes, al);
    ingot_status st = INGOT_OK;
    int32_t ns = p->n_steps;
    size_t nv = (size_t)g->n_values + 1, nn = (size_t)g->n_nodes + 1;
    int32_t *step = ig__malloc(sizeof(int32_t) * nn);
    int32_t *first = ig__malloc(sizeof(int32_t) * nv), *last = ig__malloc(sizeof(int32_t) * nv);
    int32_t *gfirst = ig__malloc(sizeof(int32_t) * nv), *glast = ig__malloc(sizeof(int32_t) * nv);
    uint8_t *is_out = ig__calloc(nv, 1);
    ig_pack_buf *bufs = ig__malloc(sizeof(ig_pack_buf) * (nv + nn));
    uint64_t *offs = ig__malloc(sizeof(uint64_t) * (nv + nn));
    member *members = ig__malloc(sizeof(member) * nv);
    if (!step || !first || !last || !gfirst || !glast || !is_out || !bufs || !offs || !members) {
        st = ig__errf(err, INGOT_ERR_OUT_OF_MEMORY, "out of memory checking a plan");
        goto out;
    }
    for (int32_t k = 0; k < g->n_outputs; k++)
        if (g->outputs[k] >= 0) is_out[g->outputs[k]] = 1;
    /* the order: every node that runs exactly once, none that was folded */
    for (int32_t k = 0; k < g->n_nodes; k++) step[k] = -1;
    for (int32_t s = 0; s < ns; s++) {
        int32_t id = p->order[s];
        if (id < 0 || id >= g->n_nodes) {
            st = FAIL("step %d runs node id %d of %d", (int)s, (int)id, (int)g->n_nodes);
            goto out;
        }
        if (step[id] >= 0 || g->nodes[id].folded) {
            st = FAIL("node '%s' is %s", ig__node_label(&g->nodes[id]),
                      g->nodes[id].folded ? "folded but scheduled" : "scheduled twice");
            goto out;
        }
        step[id] = s;
        if (p->step_of_node[id] != s) {
            st = FAIL("node '%s' runs at step %d but step_of_node says %d", ig__node_label(&g->nodes[id]), (int)s,
                      (int)p->step_of_node[id]);
            goto out;
        }
    }
    for (int32_t k = 0; k < g->n_nodes; k++)
        if (!g->nodes[k].folded && step[k] < 0) {
            st = FAIL("node '%s' (%s) is never run", ig__node_label(&g->nodes[k]), g->nodes[k].op_type);
            goto out;
        }
    /* which values must be planned, and their live ranges from scratch */
    for (int32_t v = 0; v < g->n_values; v++) {
        const ig_value *val = &g->values[v];
        const ig_plan_value *pv = &p->values[v];
        first[v] = last[v] = -1;
        bool must = val->producer >= 0 && step[val->producer] >= 0 && !(val->flags & (IG_VAL_CONST | IG_VAL_INPUT));
        if (must != (pv->kind != IG_PLAN_NONE)) {
            st = FAIL("tensor '%s' %s", val->name,
                      must ? "is computed at run time but has no place in the arena"
                           : "is a graph input, a constant or never computed, yet has a place in the arena");
            goto out;
        }
        if (must) first[v] = last[v] = step[val->producer];
    }
    for (int32_t s = 0; s < ns; s++) {
        const ig_node *n = &g->nodes[p->order[s]];
        for (int32_t j = 0; j < n->n_inputs; j++) {
            int32_t v = n->inputs[j];
            if (v < 0 || first[v] < 0) continue;
            if (first[v] > s) {
                st = FAIL("node '%s' at step %d reads '%s', produced later at step %d", ig__node_label(n), (int)s,
                          g->values[v].name, (int)first[v]);
                goto out;
            }
            if (s > last[v]) last[v] = s;
        }
    }
    for (int32_t v = 0; v < g->n_values; v++) {
        if (first[v] < 0) continue;
        if (is_out[v] && ns > 0) last[v] = ns - 1;
        const ig_plan_value *pv = &p->values[v];
        if (pv->first != first[v] || pv->last != last[v]) {
            st = FAIL("tensor '%s' lives on steps %d..%d, the plan says %d..%d", g->values[v].name, (int)first[v],
                      (int)last[v], (int)pv->first, (int)pv->last);
            goto out;
        }
    }
    /* sharing rules, value by value */
    for (int32_t v = 0; v < g->n_values; v++) {
        const ig_plan_value *pv = &p->values[v];
        if (pv->kind == IG_PLAN_NONE) continue;
        const char *name = g->values[v].name;
        int32_t r = pv->root;
        if (r < 0 || r >= g->n_values || p->values[r].kind != IG_PLAN_OWN || p->values[r].root != r) {
            st = FAIL("tensor '%s' has root %d, which does not own a buffer", name, (int)r);
            goto out;
        }
        if ((pv->kind == IG_PLAN_OWN) != (r == v)) {
            st = FAIL("tensor '%s' is '%s' but its root is %s", name, ig__plan_kind_name((ig_plan_kind)pv->kind),
                      r == v ? "itself" : g->values[r].name);
            goto out;
        }
        if (pv->bytes != ig__value_bytes(&g->values[v])) {
            st = FAIL("tensor '%s' has %" PRIu64 " bytes in the plan, %zu in the graph", name, pv->bytes,
                      ig__value_bytes(&g->values[v]));
            goto out;
        }
        if (pv->offset != p->values[r].offset || (r != v && pv->bytes != p->values[r].bytes)) {
            st = FAIL("tensor '%s' shares the buffer of '%s' at a different offset or size", name, g->values[r].name);
            goto out;
        }
        if (pv->kind == IG_PLAN_OWN) continue;
        if (is_out[v]) {
            st = FAIL("graph output '%s' is an %s: outputs must own their bytes", name,
                      ig__plan_kind_name((ig_plan_kind)pv->kind));
            goto out;
        }
        const ig_node *n = &g->nodes[g->values[v].producer];
        int32_t in0 = n->n_inputs > 0 ? n->inputs[0] : -1;
        if (n->n_outputs < 1 || n->outputs[0] != v || in0 < 0 || p->values[in0].kind == IG_PLAN_NONE ||
            p->values[in0].root != r) {
            st = FAIL("tensor '%s' (%s) shares bytes but is not output 0 of a node over its input 0's buffer", name,
                      ig__plan_kind_name((ig_plan_kind)pv->kind));
            goto out;
        }
    }
    /* groups: union of the members' ranges; an in-place write at step s needs every older member
     * of the group to be dead after s */
    for (int32_t v = 0; v < g->n_values; v++) gfirst[v] = INT32_MAX, glast[v] = -1;
    for (int32_t v = 0; v < g->n_values; v++) {
        if (p->values[v].kind == IG_PLAN_NONE) continue;
        int32_t r = p->values[v].root;
        if (first[v] < gfirst[r]) gfirst[r] = first[v];
        if (last[v] > glast[r]) glast[r] = last[v];
    }
    /* Members sorted by (root, first step): walking a group in that order, the older members of an
     * in-place write at step s are those before it with first < s, and it is safe when the latest
     * last step among them is <= s. A running maximum per group makes it O(n log n), however long
     * an in-place chain is (a pairwise check is quadratic in it). */
    int32_t nm = 0;
    for (int32_t v = 0; v < g->n_values; v++)
        if (p->values[v].kind != IG_PLAN_NONE) members[nm++] = (member){p->values[v].root, first[v], v};
    qsort(members, (size_t)nm, sizeof *members, cmp_member);
    for (int32_t a = 0; a < nm;) {
        int32_t r = members[a].root, b = a;
        int32_t older_last = -1, older = -1; /* the latest-dying member of those started earlier */
        int32_t pend_last = -1, pend = -1;   /* the same over members started at the current step */
        for (; b < nm && members[b].root == r; b++) {
            int32_t v = members[b].v, s = members[b].first;
            if (b > a && s != members[b - 1].first) { /* a new step: the previous ones are older now */
                if (pend_last > older_last) older_last = pend_last, older = pend;
                pend_last = -1;
            }
            if (p->values[v].kind == IG_PLAN_INPLACE && older_last > s) {
                st = FAIL("'%s' is written in place at step %d over '%s', which is still read at step %d",
                          g->values[v].name, (int)s, g->values[older].name, (int)older_last);
                goto out;
            }
            if (last[v] > pend_last) pend_last = last[v], pend = v;
        }
        a = b;
    }
    /* packing: groups and scratch */
    int32_t nb = 0;
    for (int32_t v = 0; v < g->n_values; v++) {
        if (p->values[v].kind != IG_PLAN_OWN) continue;
        bufs[nb] = (ig_pack_buf){p->values[v].bytes + p->guard, gfirst[v], glast[v]};
        offs[nb++] = p->values[v].offset;
    }
    for (int32_t k = 0; k < g->n_nodes; k++) {
        if (!p->scratch_bytes[k]) continue;
        if (step[k] < 0) {
            st = FAIL("folded node '%s' has scratch", ig__node_label(&g->nodes[k]));
            goto out;
        }
        bufs[nb] = (ig_pack_buf){p->scratch_bytes[k] + p->guard, step[k], step[k]};
        offs[nb++] = p->scratch_offset[k];
    }
    st = ig__pack_check(bufs, nb, offs, al, p->arena_bytes, err);
    if (st != INGOT_OK) {
        ig__err_prefix(err, "plan check");
        goto out;
    }
    uint64_t lb = ig__pack_lower_bound(bufs, nb, al, NULL);
    if (lb != p->lower_bound) {
        st = FAIL("lower bound is %" PRIu64 ", the plan reports %" PRIu64, lb, p->lower_bound);
        goto out;
    }
out:
    ig__free(step);
    ig__free(first);
    ig__free(last);
    ig__free(gfirst);
    ig__free(glast);
    ig__free(is_out);
    ig__free(bufs);
    ig__free(offs);
    ig__free(members);
    return st;
}
