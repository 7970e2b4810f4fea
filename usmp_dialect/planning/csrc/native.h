/* The planner's native core: plain C11 over int64 arrays, called through ctypes from
 * usmp_dialect/planning/native.py. Each function mirrors a pure-Python implementation that
 * stays the reference (and the fallback when no C compiler is available); tests compare the
 * two bit for bit. */
#ifndef USMP_NATIVE_H
#define USMP_NATIVE_H

#include <stdint.h>

/* Bumped whenever a signature or a contract below changes: native.py refuses a library built
 * from other sources (an editable install does not rebuild by itself) and falls back to
 * numpy, instead of calling it with the wrong arguments. */
#define USMP_NATIVE_ABI 3

int32_t usmp_native_abi(void);

/* Greedy placement (greedy.py's `place`): takes the buffers in `order`, puts each in the first
 * of its candidate pools where it fits, at the lowest aligned free offset among the placed
 * buffers it conflicts with (first fit) or in the smallest free gap that holds it (best fit).
 * `placed_pool` (-1 = not placed) and `offsets` hold the buffers placed beforehand and receive
 * the result. Returns -1 when every buffer was placed, else the buffer that fits nowhere. */
int64_t usmp_greedy_place(int64_t count, const int64_t *sizes, const int64_t *alignments,
                          const int64_t *candidate_indptr, const int64_t *candidate_pools,
                          int64_t pool_count, const int64_t *capacities, int64_t item_count,
                          const int64_t *item_start, const int64_t *item_end,
                          const int64_t *buffer_item_indptr,
                          const int64_t *buffer_items, const int64_t *explicit_indptr,
                          const int64_t *explicit_indices, const int64_t *order,
                          int64_t order_count, int32_t best_fit, int64_t *placed_pool,
                          int64_t *offsets);

/* The exact decision search of one connected component at one capacity (exact.py's
 * `Search.run`, visiting the same nodes in the same order). `rank` is the component's static
 * preorder; when the search splits into independent parts, each part is re-ranked by the
 * `preorder` letters (e.g. "WAT"; each column descending, ties by index): W `width`, A `area`,
 * T the buffer's largest current section total, Z its size, C its number of sections. Returns 1 when a placement
 * under `capacity` was found (the component's offsets written to `offsets`, indexed like
 * `sizes`), 0 when proven infeasible, -1 when more than `node_limit` nodes were needed, -2 when
 * `time_limit_s` seconds passed (or memory ran out). `nodes` receives the nodes visited. */
int32_t usmp_exact_search(int64_t count, const int64_t *sizes, const int64_t *alignments,
                          const int64_t *indptr, const int64_t *indices,
                          const int64_t *section_indptr, const int64_t *section_indices,
                          int64_t section_count, const int64_t *component,
                          int64_t component_count, const int64_t *rank, const int64_t *width,
                          const int64_t *area, const char *preorder, int64_t capacity,
                          int64_t node_limit, double time_limit_s, int64_t *offsets,
                          int64_t *nodes);

/* The conflict graph of buffers with at most one live interval each and no explicit conflicts
 * (_core.py's adjacency), as CSR: `by_start` lists the items by ascending start. Called twice:
 * with indices == NULL it writes the row offsets into `indptr` (count + 1 entries) and returns
 * the number of entries; then, with `indices` of that size, it fills and sorts the rows.
 * Returns -1 when out of memory. */
int64_t usmp_interval_graph(int64_t count, int64_t item_count, const int64_t *item_owner,
                            const int64_t *by_start, const int64_t *item_start,
                            const int64_t *item_end, int64_t *indptr, int64_t *indices);

#endif
