/*
 * test_plan.c -- the static memory planner: the packing core on thousands of random interval sets,
 * the graph layer on random DAGs (checked by the independent verifier and by simulating execution
 * in the planned arena), hand-made graphs whose plans are known, and the writers.
 */
#include "plan/plan.h"

#include "../../bench/plan/gen.h"
#include "../../bench/plan/graphs.h"
#include "test.h"

#define MiB (1ull << 20)

static uint64_t rnd_state = 42;
static uint64_t rnd(void) { return gen_rand(&rnd_state); }

/* ---- packing core ---- */

static int check_pack(const ig_pack_buf *b, int32_t n, uint64_t align, int effort, ig_pack_result *r, uint64_t *off)
{
    ig_pack_options o = ig__pack_options_default();
    o.align = align;
    o.effort = effort;
    ig_err err = {0};
    if (ig__pack(b, n, &o, off, r, &err) != INGOT_OK) {
        fprintf(stderr, "  pack: %s\n", err.msg);
        return 0;
    }
    if (ig__pack_check(b, n, off, align, r->arena, &err) != INGOT_OK) {
        fprintf(stderr, "  check: %s\n", err.msg);
        return 0;
    }
    return r->arena >= r->lower_bound && r->arena <= r->no_reuse &&
           r->lower_bound == ig__pack_lower_bound(b, n, align, NULL) && r->arena % align == 0;
}

TEST(pack_random_intervals)
{
    ig_pack_buf b[80];
    uint64_t off[80];
    static const uint64_t aligns[] = {1, 16, 256, 4096};
    for (int it = 0; it < 3000; it++) {
        int32_t n = (int32_t)(rnd() % 80), steps = 1 + (int32_t)(rnd() % 40);
        for (int32_t i = 0; i < n; i++) {
            int32_t f = (int32_t)(rnd() % (uint64_t)steps), len = (int32_t)(rnd() % (uint64_t)(steps - f));
            b[i].first = f;
            b[i].last = f + (rnd() % 3 ? len % 4 : len);
            b[i].size = rnd() % 10 == 0 ? 0 : 1 + rnd() % (rnd() % 2 ? 5000 : 1000000);
        }
        ig_pack_result r;
        ASSERT(check_pack(b, n, aligns[it % 4], it % 3 == 0 ? 0 : 1, &r, off));
    }
}

TEST(pack_edge_cases)
{
    ig_pack_buf b[4] = {{0, 0, 0}};
    uint64_t off[4] = {0};
    ig_pack_result r;
    ASSERT(check_pack(b, 0, 256, 1, &r, off));
    ASSERT_EQ(r.arena, 0);
    b[0] = (ig_pack_buf){0, 0, 5};
    ASSERT(check_pack(b, 1, 256, 1, &r, off));
    ASSERT_EQ(r.arena, 0);
    b[0] = (ig_pack_buf){1, 0, 0};
    b[1] = (ig_pack_buf){257, 0, 0};
    ASSERT(check_pack(b, 2, 256, 1, &r, off));
    ASSERT_EQ(r.arena, 256 + 512);
    /* negative steps are fine; first > last is not */
    b[0] = (ig_pack_buf){10, -5, -1};
    b[1] = (ig_pack_buf){10, 3, 2};
    ig_err err = {0};
    ASSERT_EQ(ig__pack(b, 2, NULL, off, &r, &err), INGOT_ERR_INVALID_ARG);
    ASSERT_CONTAINS(err.msg, "buffer 1");
    ig_pack_options o = ig__pack_options_default();
    o.align = 100;
    ASSERT_EQ(ig__pack(b, 1, &o, off, &r, &err), INGOT_ERR_INVALID_ARG);
    /* the checker catches an overlap and a misaligned offset */
    b[0] = (ig_pack_buf){512, 0, 3};
    b[1] = (ig_pack_buf){512, 2, 5};
    off[0] = 0;
    off[1] = 256;
    ig__err_clear(&err);
    ASSERT(ig__pack_check(b, 2, off, 256, 1024, &err) != INGOT_OK);
    ASSERT_CONTAINS(err.msg, "overlap");
    off[1] = 520;
    ig__err_clear(&err);
    ASSERT(ig__pack_check(b, 2, off, 256, 2048, &err) != INGOT_OK);
    ASSERT_CONTAINS(err.msg, "multiple");
}

/* MiniMalloc's README example packs exactly at its capacity of 12 */
TEST(pack_minimalloc_example)
{
    ig_pack_buf b[5] = {{4, 0, 2}, {4, 3, 8}, {4, 0, 8}, {4, 9, 20}, {4, 0, 20}};
    uint64_t off[5];
    ig_pack_result r;
    ASSERT(check_pack(b, 5, 1, 1, &r, off));
    ASSERT_EQ(r.lower_bound, 12);
    ASSERT_EQ(r.arena, 12);
}

/* small perfect instances (pieces of a cut rectangle) pack exactly at the lower bound */
TEST(pack_perfect_small)
{
    ig_pack_buf b[64];
    uint64_t off[64];
    int at_lb = 0;
    for (uint64_t seed = 1; seed <= 100; seed++) {
        int32_t n = gen_guillotine(seed, 24, 64, 1, b);
        ig_pack_result r;
        ASSERT(check_pack(b, n, 1, 1, &r, off));
        ASSERT_EQ(r.lower_bound, 64);
        at_lb += r.arena == r.lower_bound;
    }
    ASSERT_EQ(at_lb, 100);
}

/* deterministic: the same input gives the same offsets */
TEST(pack_deterministic)
{
    ig_pack_buf b[300];
    uint64_t o1[300], o2[300];
    int32_t n = gen_guillotine(7, 200, 1024, 1, b);
    ig_pack_result r1, r2;
    ASSERT(check_pack(b, n, 1, 1, &r1, o1));
    ASSERT(check_pack(b, n, 1, 1, &r2, o2));
    ASSERT_EQ(r1.arena, r2.arena);
    ASSERT(!memcmp(o1, o2, sizeof(uint64_t) * (size_t)n));
}

/* ---- graph layer ---- */

/* Execute the plan abstractly: every write tags the arena's cells (one per alignment unit) with the
 * writer; every read checks that the value's cells still hold the tag of whoever produced its data.
 * An overlap of two live tensors, an in-place write over a tensor still needed, or scratch over a
 * live tensor shows up as a wrong tag: the arena run equals a no-reuse run. */
static int simulate(const ig_graph *g, const ig_plan *p)
{
    uint64_t al = p->align, ncell = p->arena_bytes / al + 1;
    uint32_t *cell = calloc(ncell, sizeof(uint32_t));
    uint32_t *tag = calloc((size_t)g->n_values + 1, sizeof(uint32_t)); /* expected content of each value */
    int ok = 1;
#define CELLS(off, bytes) for (uint64_t c_ = (off) / al; c_ < ((off) + (bytes) + al - 1) / al; c_++)
    for (int32_t s = 0; s < p->n_steps && ok; s++) {
        const ig_node *n = &g->nodes[p->order[s]];
        int32_t inplace_in = -1;
        if (n->n_outputs > 0 && n->outputs[0] >= 0 && p->values[n->outputs[0]].kind == IG_PLAN_INPLACE)
            inplace_in = n->inputs[0];
        for (int pass = 0; pass < 2 && ok; pass++) {
            /* pass 0: before the node writes; pass 1: after (only inputs it may not overwrite) */
            for (int32_t j = 0; j < n->n_inputs && ok; j++) {
                int32_t v = n->inputs[j];
                if (v < 0 || p->values[v].kind == IG_PLAN_NONE) continue;
                if (pass == 1 && p->values[v].root == (inplace_in >= 0 ? p->values[inplace_in].root : -2)) continue;
                CELLS(p->values[v].offset, p->values[v].bytes)
                if (cell[c_] != tag[v]) {
                    fprintf(stderr, "  step %d (%s): input '%s' clobbered (%s)\n", (int)s, ig__node_label(n),
                            g->values[v].name, pass ? "by this node's writes" : "before this node");
                    ok = 0;
                    break;
                }
            }
            if (pass == 1) break;
            if (p->scratch_bytes[p->order[s]]) CELLS(p->scratch_offset[p->order[s]], p->scratch_bytes[p->order[s]])
            cell[c_] = 0x80000000u | (uint32_t)s;
            for (int32_t j = 0; j < n->n_outputs; j++) {
                int32_t v = n->outputs[j];
                if (v < 0 || p->values[v].kind == IG_PLAN_NONE) continue;
                if (p->values[v].kind == IG_PLAN_ALIAS) {
                    tag[v] = tag[n->inputs[0]];
                    continue;
                }
                tag[v] = (uint32_t)v + 1;
                CELLS(p->values[v].offset, p->values[v].bytes) cell[c_] = tag[v];
            }
        }
        for (int32_t j = 0; j < n->n_outputs && ok; j++) { /* outputs did not overwrite each other */
            int32_t v = n->outputs[j];
            if (v < 0 || p->values[v].kind == IG_PLAN_NONE) continue;
            CELLS(p->values[v].offset, p->values[v].bytes)
            if (cell[c_] != tag[v]) {
                fprintf(stderr, "  step %d: output '%s' overwritten\n", (int)s, g->values[v].name);
                ok = 0;
                break;
            }
        }
    }
    for (int32_t k = 0; k < g->n_outputs && ok; k++) {
        int32_t v = g->outputs[k];
        if (p->values[v].kind == IG_PLAN_NONE) continue;
        CELLS(p->values[v].offset, p->values[v].bytes)
        if (cell[c_] != tag[v]) {
            fprintf(stderr, "  graph output '%s' clobbered by the end\n", g->values[v].name);
            ok = 0;
            break;
        }
    }
#undef CELLS
    free(cell);
    free(tag);
    return ok;
}

static int plan_ok(gb *b, const ig_plan_options *o, ig_plan *p)
{
    ig_err err = {0};
    if (ig__plan_graph(&b->g, o, p, &err) != INGOT_OK) {
        fprintf(stderr, "  plan: %s\n", err.msg);
        return 0;
    }
    if (ig__plan_check(&b->g, p, &err) != INGOT_OK) {
        fprintf(stderr, "  %s\n", err.msg);
        return 0;
    }
    if (p->arena_bytes < p->lower_bound || p->arena_bytes > p->no_reuse_bytes) {
        fprintf(stderr, "  arena %llu, lower bound %llu, no reuse %llu\n", (unsigned long long)p->arena_bytes,
                (unsigned long long)p->lower_bound, (unsigned long long)p->no_reuse_bytes);
        return 0;
    }
    return simulate(&b->g, p);
}

TEST(plan_random_dags)
{
    ig_plan p;
    memset(&p, 0, sizeof p);
    int reordered = 0, inplace = 0, alias = 0;
    for (uint64_t seed = 1; seed <= 1000; seed++) {
        gb b;
        gb_init(&b);
        gb_random(&b, seed, 1 + (int32_t)(seed % 97), 10);
        ASSERT(b.ok);
        ig_plan_options o = gb_options(&b);
        o.align = seed % 3 == 0 ? 64 : 256;
        o.reorder = seed % 5 != 0;
        o.inplace = seed % 7 != 0;
        o.effort = (int32_t)(seed % 3 == 1 ? 0 : 1);
        o.guard = seed % 11 == 0 ? 64 : 0; /* canary room: checked by ig__plan_check's packing check */
        int ok = plan_ok(&b, &o, &p);      /* reuses p: the previous plan is freed first */
        if (!ok) fprintf(stderr, "  seed %llu\n", (unsigned long long)seed);
        reordered += p.reordered;
        for (int32_t v = 0; v < p.n_values; v++) {
            inplace += p.values[v].kind == IG_PLAN_INPLACE;
            alias += p.values[v].kind == IG_PLAN_ALIAS;
        }
        gb_free(&b);
        ASSERT(ok);
    }
    ig__plan_free(&p);
    /* the generator exercises every path */
    ASSERT(reordered > 0);
    ASSERT(inplace > 100);
    ASSERT(alias > 100);
}

/* in -> Conv -> a -> Conv -> b -> Conv -> c -> Conv -> d: two tensors live at a time */
TEST(plan_chain)
{
    gb b;
    gb_init(&b);
    int32_t x = gb_input(&b, "in", MiB);
    int32_t a = gb_op1(&b, "Conv", "a", x, MiB);
    int32_t c1 = gb_op1(&b, "Conv", "b", a, MiB);
    int32_t c2 = gb_op1(&b, "Conv", "c", c1, MiB);
    int32_t d = gb_op1(&b, "Conv", "d", c2, MiB);
    gb_output(&b, d);
    ASSERT(gb_finish(&b));
    ig_plan_options o = gb_options(&b);
    ig_plan p;
    memset(&p, 0, sizeof p);
    ASSERT(plan_ok(&b, &o, &p));
    ASSERT_EQ(p.lower_bound, 2 * MiB);
    ASSERT_EQ(p.arena_bytes, 2 * MiB);
    ASSERT_EQ(p.no_reuse_bytes, 4 * MiB);
    ASSERT_EQ(p.values[x].kind, IG_PLAN_NONE); /* graph inputs are the caller's */
    ASSERT_EQ(p.values[a].first, 0);
    ASSERT_EQ(p.values[a].last, 1);
    ASSERT_EQ(p.values[d].last, 3);
    ASSERT(p.values[a].offset != p.values[c1].offset);
    ASSERT_EQ(p.values[a].offset, p.values[c2].offset);
    /* a guard after every buffer: 1 MiB tensors now take 1 MiB + 256 */
    o.guard = 16;
    ASSERT(plan_ok(&b, &o, &p));
    ASSERT_EQ(p.arena_bytes, 2 * (MiB + 256));
    ASSERT_EQ(p.guard, 16);
    ig__plan_free(&p);
    gb_free(&b);
}

/* x -> (y1, y2) -> Add: the Add writes over y1 in place */
TEST(plan_diamond)
{
    gb b;
    gb_init(&b);
    int32_t in = gb_input(&b, "in", MiB);
    int32_t x = gb_op1(&b, "Conv", "x", in, MiB);
    int32_t y1 = gb_op1(&b, "Conv", "y1", x, MiB);
    int32_t y2 = gb_op1(&b, "Conv", "y2", x, MiB);
    int32_t z = gb_op2(&b, "Add", "z", y1, y2, MiB);
    int32_t out = gb_op1(&b, "Conv", "out", z, MiB);
    gb_output(&b, out);
    ASSERT(gb_finish(&b));
    ig_plan_options o = gb_options(&b);
    ig_plan p;
    memset(&p, 0, sizeof p);
    ASSERT(plan_ok(&b, &o, &p));
    ASSERT_EQ(p.values[z].kind, IG_PLAN_INPLACE);
    ASSERT_EQ(p.values[z].root, y1);
    ASSERT_EQ(p.values[z].offset, p.values[y1].offset);
    ASSERT_EQ(p.lower_bound, 3 * MiB);
    ASSERT_EQ(p.arena_bytes, 3 * MiB);
    /* without in-place the Add needs its own bytes at step 3 (y1, y2, z) */
    o.inplace = 0;
    ASSERT(plan_ok(&b, &o, &p));
    ASSERT_EQ(p.values[z].kind, IG_PLAN_OWN);
    ASSERT_EQ(p.arena_bytes, 3 * MiB);
    ig__plan_free(&p);
    gb_free(&b);
}

/* residual block: Relu may not run in place while its input is still needed by the Add */
TEST(plan_residual)
{
    gb b;
    gb_init(&b);
    int32_t in = gb_input(&b, "in", MiB);
    int32_t x = gb_op1(&b, "Conv", "x", in, MiB);
    int32_t y = gb_op1(&b, "Conv", "y", x, MiB);
    int32_t r = gb_op1(&b, "Relu", "r", y, MiB);
    int32_t r2 = gb_op1(&b, "Relu", "r2", x, MiB); /* x is read again by the Add below */
    int32_t z = gb_op2(&b, "Add", "z", r, x, MiB);
    int32_t w = gb_op2(&b, "Add", "w", z, r2, MiB);
    gb_output(&b, w);
    ASSERT(gb_finish(&b));
    ig_plan_options o = gb_options(&b);
    ig_plan p;
    memset(&p, 0, sizeof p);
    ASSERT(plan_ok(&b, &o, &p));
    ASSERT_EQ(p.values[r].kind, IG_PLAN_INPLACE); /* y dead after Relu */
    ASSERT_EQ(p.values[r2].kind, IG_PLAN_OWN);    /* x still read by z */
    ASSERT_EQ(p.values[z].kind, IG_PLAN_INPLACE); /* over r (root y); x is input 1 */
    ASSERT_EQ(p.values[z].root, y);
    ASSERT_EQ(p.values[w].kind, IG_PLAN_OWN); /* graph outputs own their bytes */
    ig__plan_free(&p);
    gb_free(&b);
}

TEST(plan_aliases)
{
    gb b;
    gb_init(&b);
    int32_t in = gb_input(&b, "in", MiB);
    int32_t rin = gb_op1(&b, "Reshape", "reshape_input", in, MiB); /* never onto a graph input */
    int32_t x = gb_op1(&b, "Conv", "x", rin, MiB);
    int32_t y = gb_op1(&b, "Reshape", "y", x, MiB);
    int32_t y2 = gb_op1(&b, "Flatten", "y2", y, MiB);
    int32_t big = gb_op1(&b, "Conv", "big", y2, 2 * MiB);
    int32_t z = gb_op2(&b, "Conv", "z", big, x, MiB);        /* keeps x (and its aliases' bytes) alive */
    int32_t out = gb_op1(&b, "Identity", "out", z, MiB);     /* a graph output is never an alias */
    int32_t diff = gb_op1(&b, "Reshape", "odd", z, MiB / 2); /* sizes differ: cannot alias */
    gb_output(&b, out);
    gb_output(&b, diff);
    ASSERT(gb_finish(&b));
    ig_plan_options o = gb_options(&b);
    ig_plan p;
    memset(&p, 0, sizeof p);
    ASSERT(plan_ok(&b, &o, &p));
    ASSERT_EQ(p.values[rin].kind, IG_PLAN_OWN);
    ASSERT_EQ(p.values[y].kind, IG_PLAN_ALIAS);
    ASSERT_EQ(p.values[y2].kind, IG_PLAN_ALIAS);
    ASSERT_EQ(p.values[y2].root, x);
    ASSERT_EQ(p.values[y2].offset, p.values[x].offset);
    ASSERT_EQ(p.values[out].kind, IG_PLAN_OWN);
    ASSERT_EQ(p.values[diff].kind, IG_PLAN_OWN);
    /* x's buffer lives until z reads x at step 5, although x's own last use is there too */
    ASSERT_EQ(p.buffers[p.values[x].buffer].last, 5);
    o.alias = 0;
    ASSERT(plan_ok(&b, &o, &p));
    ASSERT_EQ(p.values[y].kind, IG_PLAN_OWN);
    ig__plan_free(&p);
    gb_free(&b);
}

/* Inception-like block written breadth first: every branch's first conv, then every second conv,
 * then the third; the memory-aware order finishes one branch at a time and needs less memory */
TEST(plan_inception_reorder)
{
    gb b;
    gb_init(&b);
    int32_t in = gb_input(&b, "in", 4 * MiB);
    int32_t x = gb_op1(&b, "Conv", "stem", in, 4 * MiB);
    char nm[32];
    int32_t l1[4], l2[4], l3[4];
    for (int k = 0; k < 4; k++) {
        snprintf(nm, sizeof nm, "b%d_1", k);
        l1[k] = gb_op1(&b, "Conv", nm, x, 8 * MiB);
    }
    for (int k = 0; k < 4; k++) {
        snprintf(nm, sizeof nm, "b%d_2", k);
        l2[k] = gb_op1(&b, "Conv", nm, l1[k], 8 * MiB);
    }
    for (int k = 0; k < 4; k++) {
        snprintf(nm, sizeof nm, "b%d_3", k);
        l3[k] = gb_op1(&b, "Conv", nm, l2[k], MiB);
    }
    int32_t cat = gb_op(&b, "Concat", "concat", 4, l3, 4 * MiB);
    gb_output(&b, cat);
    ASSERT(gb_finish(&b));
    ig_plan_options o = gb_options(&b);
    ig_plan p;
    memset(&p, 0, sizeof p);
    o.reorder = 0;
    ASSERT(plan_ok(&b, &o, &p));
    ASSERT_EQ(p.reordered, 0);
    uint64_t orig = p.arena_bytes;
    ASSERT_EQ(p.lower_bound, 5 * 8 * MiB); /* all four b_1 and b0_2 at step 5 */
    o.reorder = 1;
    ASSERT(plan_ok(&b, &o, &p));
    ASSERT_EQ(p.reordered, 1);
    ASSERT_EQ(p.arena_original, orig);
    ASSERT(p.arena_reordered < orig);
    ASSERT_EQ(p.arena_bytes, p.arena_reordered);
    ASSERT(p.arena_bytes <= 4 * MiB + 2 * 8 * MiB + 3 * MiB);
    /* the stem still runs first and the concat last */
    ASSERT_EQ(p.order[0], b.g.values[x].producer);
    ASSERT_EQ(p.order[p.n_steps - 1], b.g.values[cat].producer);
    ig__plan_free(&p);
    gb_free(&b);
}

TEST(plan_scratch_and_budget)
{
    gb b;
    gb_init(&b);
    int32_t in = gb_input(&b, "in", MiB);
    int32_t x = gb_op1(&b, "Conv", "x", in, MiB);
    int32_t y = gb_op1(&b, "Conv", "conv_with_scratch", x, MiB);
    int32_t z = gb_op1(&b, "Conv", "z", y, MiB);
    gb_scratch(&b, y, 3 * MiB);
    gb_output(&b, z);
    ASSERT(gb_finish(&b));
    ig_plan_options o = gb_options(&b);
    ig_plan p;
    memset(&p, 0, sizeof p);
    ASSERT(plan_ok(&b, &o, &p));
    int32_t node = b.g.values[y].producer;
    ASSERT_EQ(p.scratch_bytes[node], 3 * MiB);
    ASSERT_EQ(p.workspace_max, 3 * MiB);
    ASSERT_EQ(p.lower_bound, 5 * MiB); /* x, y and the scratch at step 1 */
    ASSERT_EQ(p.arena_bytes, 5 * MiB);
    ig_err err = {0};
    o.workspace_limit = 2 * MiB;
    ASSERT_EQ(ig__plan_graph(&b.g, &o, &p, &err), INGOT_ERR_INVALID_ARG);
    ASSERT_CONTAINS(err.msg, "conv_with_scratch");
    ASSERT_CONTAINS(err.msg, "3145728");
    ASSERT_EQ(p.order, NULL); /* a failed plan leaves nothing behind */
    ig__plan_free(&p);
    gb_free(&b);
}

TEST(plan_folded_and_constants)
{
    gb b;
    gb_init(&b);
    int32_t in = gb_input(&b, "in", MiB);
    int32_t w = gb_const(&b, "w", MiB);
    int32_t f = gb_op1(&b, "Transpose", "folded", w, MiB); /* computed at build time */
    int32_t x = gb_op2(&b, "Conv", "x", in, f, MiB);
    gb_output(&b, x);
    ASSERT(gb_finish(&b));
    b.g.nodes[b.g.values[f].producer].folded = true;
    b.g.values[f].flags |= IG_VAL_CONST;
    ig_plan_options o = gb_options(&b);
    ig_plan p;
    memset(&p, 0, sizeof p);
    ASSERT(plan_ok(&b, &o, &p));
    ASSERT_EQ(p.n_steps, 1);
    ASSERT_EQ(p.values[w].kind, IG_PLAN_NONE);
    ASSERT_EQ(p.values[f].kind, IG_PLAN_NONE);
    ASSERT_EQ(p.step_of_node[b.g.values[f].producer], -1);
    ASSERT_EQ(p.arena_bytes, MiB);
    ig__plan_free(&p);
    gb_free(&b);
}

TEST(plan_symbolic_shape_fails)
{
    gb b;
    gb_init(&b);
    int32_t in = gb_input(&b, "in", MiB);
    int32_t x = gb_op1(&b, "Conv", "x", in, MiB);
    int32_t y = gb_op1(&b, "Conv", "y", x, MiB);
    gb_output(&b, y);
    ASSERT(gb_finish(&b));
    int32_t sym = ig__graph_symbol(&b.g, "batch");
    b.g.values[x].shape.d[0] = (ig_dim){4, sym};
    ig_plan_options o = gb_options(&b);
    ig_plan p;
    memset(&p, 0, sizeof p);
    ig_err err = {0};
    ASSERT_EQ(ig__plan_graph(&b.g, &o, &p, &err), INGOT_ERR_MODEL_SHAPE);
    ASSERT_CONTAINS(err.msg, "'x'");
    ASSERT_CONTAINS(err.msg, "4*batch");
    ig__plan_free(&p);
    gb_free(&b);
}

/* the check catches a plan that was tampered with */
TEST(plan_check_catches_errors)
{
    gb b;
    gb_init(&b);
    int32_t in = gb_input(&b, "in", MiB);
    int32_t x = gb_op1(&b, "Conv", "x", in, MiB);
    int32_t y = gb_op1(&b, "Conv", "y", x, MiB);
    int32_t z = gb_op2(&b, "Conv", "z", y, x, MiB);
    gb_output(&b, z);
    ASSERT(gb_finish(&b));
    ig_plan_options o = gb_options(&b);
    ig_plan p;
    memset(&p, 0, sizeof p);
    ASSERT(plan_ok(&b, &o, &p));
    ig_err err = {0};
    uint64_t save = p.values[y].offset;
    p.values[y].offset = p.values[x].offset; /* x and y live together */
    ASSERT(ig__plan_check(&b.g, &p, &err) != INGOT_OK);
    ASSERT_CONTAINS(err.msg, "overlap");
    p.values[y].offset = save;
    p.values[x].last = 1; /* x is read by z at step 2 */
    ig__err_clear(&err);
    ASSERT(ig__plan_check(&b.g, &p, &err) != INGOT_OK);
    ASSERT_CONTAINS(err.msg, "'x'");
    ig__plan_free(&p);
    gb_free(&b);
}

/* synthetic CNN and transformer with real sizes: within 5% of the lower bound */
TEST(plan_models_near_lower_bound)
{
    static const int blocks[4] = {3, 4, 6, 3};
    for (int64_t batch = 1; batch <= 32; batch *= 32) {
        gb b;
        gb_init(&b);
        gb_resnet(&b, batch, blocks, 4);
        ASSERT(b.ok);
        ig_plan_options o = gb_options(&b);
        ig_plan p;
        memset(&p, 0, sizeof p);
        ASSERT(plan_ok(&b, &o, &p));
        ASSERT((double)p.arena_bytes <= 1.05 * (double)p.lower_bound);
        ig__plan_free(&p);
        gb_free(&b);
        gb_init(&b);
        gb_transformer(&b, batch, 128, 768, 12, 4);
        ASSERT(b.ok);
        o = gb_options(&b);
        ASSERT(plan_ok(&b, &o, &p));
        ASSERT((double)p.arena_bytes <= 1.05 * (double)p.lower_bound);
        ig__plan_free(&p);
        gb_free(&b);
    }
}

static char *slurp(FILE *f)
{
    long n = ftell(f);
    rewind(f);
    char *s = malloc((size_t)n + 1);
    size_t got = fread(s, 1, (size_t)n, f);
    s[got] = 0;
    return s;
}

TEST(plan_writers)
{
    gb b;
    gb_init(&b);
    b.g.name = "tiny \"graph\" <1>";
    int32_t in = gb_input(&b, "in", MiB);
    int32_t x = gb_op1(&b, "Conv", "x<&>", in, MiB);
    int32_t y = gb_op1(&b, "Reshape", "y", x, MiB);
    int32_t z = gb_op1(&b, "Relu", "z", y, MiB);
    gb_scratch(&b, x, 4096);
    gb_output(&b, gb_op1(&b, "Conv", "out", z, MiB));
    ASSERT(gb_finish(&b));
    ig_plan_options o = gb_options(&b);
    ig_plan p;
    memset(&p, 0, sizeof p);
    ASSERT(plan_ok(&b, &o, &p));
    ig_err err = {0};
    FILE *f = tmpfile();
    ASSERT(f);
    ASSERT_EQ(ig__plan_write_json(&b.g, &p, f, &err), INGOT_OK);
    char *s = slurp(f);
    ASSERT_CONTAINS(s, "\"arena_bytes\": ");
    ASSERT_CONTAINS(s, "\"graph\": \"tiny \\\"graph\\\" <1>\"");
    ASSERT_CONTAINS(s, "\"kind\": \"alias\"");
    ASSERT_CONTAINS(s, "\"kind\": \"in-place\"");
    ASSERT_CONTAINS(s, "\"scratch_bytes\": 4096");
    free(s);
    fclose(f);
    f = tmpfile();
    ASSERT_EQ(ig__plan_write_svg(&b.g, &p, f, &err), INGOT_OK);
    s = slurp(f);
    ASSERT_CONTAINS(s, "<svg");
    ASSERT_CONTAINS(s, "</svg>");
    ASSERT_CONTAINS(s, "x&lt;&amp;&gt;");
    ASSERT_CONTAINS(s, "peak: step");
    ASSERT_CONTAINS(s, "scratch of");
    ASSERT(!strstr(s, "x<&>"));
    free(s);
    fclose(f);
    f = tmpfile();
    ASSERT_EQ(ig__plan_write_trace(&b.g, &p, f, &err), INGOT_OK);
    s = slurp(f);
    ASSERT_CONTAINS(s, "\"traceEvents\"");
    ASSERT_CONTAINS(s, "\"ph\": \"C\"");
    ASSERT_CONTAINS(s, "\"cat\": \"tensor\"");
    ASSERT_CONTAINS(s, "\"cat\": \"node\"");
    free(s);
    fclose(f);
    ig__plan_free(&p);
    gb_free(&b);
}

TEST_MAIN(RUN(pack_random_intervals); RUN(pack_edge_cases); RUN(pack_minimalloc_example); RUN(pack_perfect_small);
          RUN(pack_deterministic); RUN(plan_random_dags); RUN(plan_chain); RUN(plan_diamond); RUN(plan_residual);
          RUN(plan_aliases); RUN(plan_inception_reorder); RUN(plan_scratch_and_budget); RUN(plan_folded_and_constants);
          RUN(plan_symbolic_shape_fails); RUN(plan_check_catches_errors); RUN(plan_models_near_lower_bound);
          RUN(plan_writers))
