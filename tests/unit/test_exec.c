/*
 * test_exec.c -- the CPU executor inside the planned arena, on thousands of random DAGs of real ops
 * (elementwise, broadcasting, zero-copy aliases, in-place candidates, Concat, Transpose, MatMul,
 * Softmax): for every graph the plan verifies, and the outputs of the planned run, of the run with
 * debug canaries and of a run with no reuse at all are bit-identical.
 */
#include "cpu/exec.h"
#include "test.h"

static uint64_t rng = 0x243F6A8885A308D3ull;
static uint32_t rnd(void)
{
    rng ^= rng << 13;
    rng ^= rng >> 7;
    rng ^= rng << 17;
    return (uint32_t)(rng >> 11);
}

typedef struct dag {
    ig_graph g;
    int32_t vals[256]; /* float values nodes may read */
    int32_t n_vals;
    int n_names;
} dag;

static int32_t new_value(dag *d)
{
    char name[32];
    snprintf(name, sizeof name, "v%d", d->n_names++);
    return ig__graph_value(&d->g, name, NULL);
}

static void set_shape(ig_value *v, int64_t a, int64_t b)
{
    v->dtype = INGOT_DTYPE_FLOAT;
    v->shape.rank = 2;
    v->shape.d[0] = ig__dim_const(a);
    v->shape.d[1] = ig__dim_const(b);
}

static int32_t add_node(dag *d, const char *op, int n_in, const int32_t *ins, int n_attrs)
{
    char name[32];
    snprintf(name, sizeof name, "n%d", d->g.n_nodes);
    int32_t id = ig__graph_add_node(&d->g, name, op, "", n_in, 1, n_attrs, NULL);
    ig_node *n = &d->g.nodes[id];
    n->opset = 17;
    for (int i = 0; i < n_in; i++) n->inputs[i] = ins[i];
    int32_t out = new_value(d);
    n = &d->g.nodes[id];
    n->outputs[0] = out;
    d->g.values[out].producer = id;
    d->vals[d->n_vals++] = out;
    return id;
}

/* A value with the same shape as v, or -1. */
static int32_t same_shape(dag *d, int32_t v)
{
    int32_t cand[256], nc = 0;
    for (int32_t i = 0; i < d->n_vals; i++) {
        const ig_shape *a = &d->g.values[d->vals[i]].shape, *b = &d->g.values[v].shape;
        if (a->rank == 2 && b->rank == 2 && a->d[0].n == b->d[0].n && a->d[1].n == b->d[1].n) cand[nc++] = d->vals[i];
    }
    return nc ? cand[rnd() % (uint32_t)nc] : -1;
}

/* Build a random graph; returns false when a step failed (then the test fails). */
static bool build_dag(dag *d, int n_nodes)
{
    memset(d, 0, sizeof *d);
    ig__graph_init(&d->g, NULL);
    ig_graph *g = &d->g;
    g->opsets = ig__arena_alloc(&g->arena, sizeof(ig_opset));
    g->opsets[0] = (ig_opset){"", 17};
    g->n_opsets = 1;
    int n_inputs = 1 + (int)(rnd() % 2);
    g->inputs = ig__arena_array(&g->arena, 2, sizeof(int32_t));
    int64_t rows = 1 + rnd() % 4, cols = 2 + rnd() % 6;
    for (int i = 0; i < n_inputs; i++) {
        int32_t v = new_value(d);
        set_shape(&g->values[v], rows, cols);
        g->values[v].flags |= IG_VAL_INPUT | IG_VAL_DECLARED;
        g->values[v].decl_dtype = INGOT_DTYPE_FLOAT;
        g->values[v].decl_shape = g->values[v].shape;
        g->inputs[g->n_inputs++] = v;
        d->vals[d->n_vals++] = v;
    }
    /* shapes set here only steer the choice of operands; inference recomputes and checks them */
    for (int k = 0; k < n_nodes && d->n_vals < 250; k++) {
        int32_t a = d->vals[rnd() % (uint32_t)d->n_vals];
        const ig_shape sa = g->values[a].shape;
        int64_t r = sa.d[0].n, c = sa.d[1].n;
        int32_t id;
        switch (rnd() % 10) {
        case 0:
            id = add_node(d, "Relu", 1, &a, 0);
            set_shape(&g->values[g->nodes[id].outputs[0]], r, c);
            break;
        case 1:
            id = add_node(d, "Sigmoid", 1, &a, 0);
            set_shape(&g->values[g->nodes[id].outputs[0]], r, c);
            break;
        case 2:
            id = add_node(d, "Identity", 1, &a, 0);
            set_shape(&g->values[g->nodes[id].outputs[0]], r, c);
            break;
        case 3:
        case 4: { /* binary elementwise, maybe broadcasting a row */
            int32_t ins[2] = {a, same_shape(d, a)};
            const char *ops[3] = {"Add", "Mul", "Sub"};
            id = add_node(d, ops[rnd() % 3], 2, ins, 0);
            set_shape(&g->values[g->nodes[id].outputs[0]], r, c);
            break;
        }
        case 5: { /* Concat along axis 1 */
            int32_t ins[2] = {a, same_shape(d, a)};
            id = add_node(d, "Concat", 2, ins, 1);
            g->nodes[id].attrs[0] = (ig_attr){.name = "axis", .type = IG_ATTR_INT, .i = 1};
            set_shape(&g->values[g->nodes[id].outputs[0]], r, 2 * c);
            break;
        }
        case 6:
            id = add_node(d, "Transpose", 1, &a, 0);
            set_shape(&g->values[g->nodes[id].outputs[0]], c, r);
            break;
        case 7: { /* Reshape [r, c] -> [c, r] through a shape initializer (a zero-copy alias) */
            int32_t s = new_value(d);
            int64_t *dims = ig__arena_alloc_aligned(&g->arena, 2 * sizeof(int64_t), 64);
            dims[0] = c;
            dims[1] = r;
            ig_value *sv = &g->values[s];
            sv->dtype = INGOT_DTYPE_INT64;
            sv->shape.rank = 1;
            sv->shape.d[0] = ig__dim_const(2);
            sv->flags |= IG_VAL_INITIALIZER | IG_VAL_CONST;
            sv->c = (ig_const){.dtype = INGOT_DTYPE_INT64, .rank = 1, .dims = {2}, .data = dims, .n_bytes = 16};
            int32_t ins[2] = {a, s};
            id = add_node(d, "Reshape", 2, ins, 0);
            set_shape(&g->values[g->nodes[id].outputs[0]], c, r);
            break;
        }
        case 8: { /* MatMul [r, c] x [c, r] */
            int32_t b = -1;
            for (int32_t i = 0; i < d->n_vals && b < 0; i++) {
                const ig_shape *sb = &g->values[d->vals[i]].shape;
                if (sb->d[0].n == c && sb->d[1].n == r) b = d->vals[i];
            }
            if (b < 0) {
                k--;
                continue;
            }
            int32_t ins[2] = {a, b};
            id = add_node(d, "MatMul", 2, ins, 0);
            set_shape(&g->values[g->nodes[id].outputs[0]], r, r);
            break;
        }
        default:
            id = add_node(d, "Softmax", 1, &a, 0);
            set_shape(&g->values[g->nodes[id].outputs[0]], r, c);
            break;
        }
    }
    /* outputs: the last value and a few others (never a graph input) */
    g->outputs = ig__arena_array(&g->arena, 4, sizeof(int32_t));
    for (int i = 0; i < 4; i++) {
        int32_t v = i == 0 ? d->vals[d->n_vals - 1] : d->vals[rnd() % (uint32_t)d->n_vals];
        bool dup = (g->values[v].flags & (IG_VAL_INPUT | IG_VAL_OUTPUT)) != 0;
        if (dup) continue;
        g->values[v].flags |= IG_VAL_OUTPUT;
        g->outputs[g->n_outputs++] = v;
    }
    ig_err err = {0};
    if (ig__graph_toposort(g, &err) || ig__graph_verify(g, &err)) {
        fprintf(stderr, "  build: %s\n", err.msg);
        return false;
    }
    return true;
}

/* Run g with the given layout; outputs concatenated into *out (malloc'd). */
static bool run_once(const ig_graph *g, const ig_plan *plan, const ig_cpu_weights *w, bool canaries, const float *in,
                     unsigned char **out, size_t *out_bytes)
{
    ig_cpu_exec x = {0};
    ig_err err = {0};
    if (ig__cpu_prepare(&x, g, plan, w, NULL, canaries, NULL, &err)) {
        fprintf(stderr, "  prepare: %s\n", err.msg);
        return false;
    }
    for (int32_t i = 0; i < g->n_inputs; i++) ig__cpu_set_input(&x, i, in, ig__value_bytes(&g->values[g->inputs[i]]));
    if (ig__cpu_run(&x, &err)) {
        fprintf(stderr, "  run: %s\n", err.msg);
        ig__cpu_release(&x);
        return false;
    }
    size_t total = 0;
    for (int32_t i = 0; i < g->n_outputs; i++) total += ig__value_bytes(&g->values[g->outputs[i]]);
    *out = malloc(total + 1);
    *out_bytes = total;
    size_t off = 0;
    for (int32_t i = 0; i < g->n_outputs; i++) {
        size_t b = ig__value_bytes(&g->values[g->outputs[i]]);
        memcpy(*out + off, x.t[g->outputs[i]].data, b);
        off += b;
    }
    ig__cpu_release(&x);
    return true;
}

TEST(random_dags_planned_equals_no_reuse)
{
    float in[64];
    for (int i = 0; i < 64; i++) in[i] = (float)((int)(rnd() % 17) - 8) / 4.0f;
    int graphs = 0;
    for (int it = 0; it < 2000; it++) {
        dag d;
        ASSERT(build_dag(&d, 3 + (int)(rnd() % 30)));
        ig_arena fold;
        ig__arena_init(&fold);
        ig_err err = {0};
        ig_infer_options io = {.fold_max_bytes = 64 * 1024};
        if (ig__graph_infer(&d.g, &io, &fold, &err)) {
            fprintf(stderr, "  graph %d: infer: %s\n", it, err.msg);
            ASSERT(0);
        }
        ig_plan plan = {0}, guarded = {0};
        ig_plan_options po = ig__plan_options_default();
        ASSERT_EQ(ig__plan_graph(&d.g, &po, &plan, &err), INGOT_OK);
        ASSERT_EQ(ig__plan_check(&d.g, &plan, &err), INGOT_OK);
        ASSERT(plan.arena_bytes >= plan.lower_bound);
        po.guard = 64;
        ASSERT_EQ(ig__plan_graph(&d.g, &po, &guarded, &err), INGOT_OK);
        ig_cpu_weights w;
        ASSERT_EQ(ig__cpu_weights_make(&w, &d.g, &err), INGOT_OK);
        unsigned char *a = NULL, *b = NULL, *c = NULL;
        size_t na = 0, nb = 0, nc = 0;
        ASSERT(run_once(&d.g, NULL, &w, false, in, &a, &na));
        ASSERT(run_once(&d.g, &plan, &w, false, in, &b, &nb));
        ASSERT(run_once(&d.g, &guarded, &w, true, in, &c, &nc));
        ASSERT(na == nb && na == nc);
        ASSERT(!memcmp(a, b, na));
        ASSERT(!memcmp(a, c, na));
        free(a);
        free(b);
        free(c);
        ig__cpu_weights_free(&w);
        ig__plan_free(&plan);
        ig__plan_free(&guarded);
        ig__arena_free(&fold);
        ig__graph_free(&d.g);
        graphs++;
    }
    ASSERT_EQ(graphs, 2000);
}

TEST_MAIN(RUN(random_dags_planned_equals_no_reuse))
