/* graphs.h -- synthetic graphs for the planner benchmark (filled in with the graph layer). */
#ifndef INGOT_BENCH_PLAN_GRAPHS_H
#define INGOT_BENCH_PLAN_GRAPHS_H
static int bench_graphs(uint64_t seed) { (void)seed; return 0; }
#endif
