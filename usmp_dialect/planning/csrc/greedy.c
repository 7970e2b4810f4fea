/* Greedy placement: the native twin of greedy.py's `place` (same offsets, bit for bit).
 *
 * A placement needs the free gaps left, over the buffer's lifetime, by the buffers already
 * placed in the pool that overlap it in time: the complement of the union of their byte
 * ranges. On the largest networks a query overlaps thousands of placed buffers while their
 * union has a few tens of segments (memory is packed), so the pool keeps unions, not buffers:
 * a segment tree over the elementary time sections whose node N holds
 *
 *   covering[N]: the union of the ranges of the intervals that have N in their canonical
 *                decomposition (they cover N's whole span), and
 *   inside[N]:   the union of the ranges of every interval stored at N or below it.
 *
 * An interval P overlaps a query Q exactly when a canonical node of P and a canonical node M
 * of Q intersect; nodes are nested or disjoint, so either P's node lies inside M (P is in
 * inside[M]) or it is an ancestor-or-self of M (P is in covering[] of that node). A query
 * therefore reads inside[] of its canonical nodes and covering[] of their ancestors: about
 * 4 log2(sections) short lists, independent of how many buffers are placed. */
#include <stdlib.h>
#include <string.h>

#include "native.h"

#define UNBOUNDED ((int64_t)1 << 62)

typedef struct {
    int64_t low;
    int64_t high;
} Range;

/* The union of byte ranges as sorted, disjoint, non-touching segments. The ranges a query
 * gathers number in the thousands on large networks but their union in the tens (memory is
 * packed), so merging each range into the union costs a binary search over a short list, far
 * less than sorting the ranges (which took 85 % of the placement time). */
typedef struct {
    Range *segments;
    int64_t count;
    int64_t capacity;
} Union;

/* Adds [low, high) (non-empty) to the union; 0 when out of memory. */
static int union_add(Union *set, int64_t low, int64_t high) {
    Range *segments = set->segments;
    /* First segment that ends at or after `low` (it may touch or overlap the range). */
    int64_t first = 0, last = set->count;
    while (first < last) {
        int64_t middle = first + (last - first) / 2;
        if (segments[middle].high < low)
            first = middle + 1;
        else
            last = middle;
    }
    int64_t end = first;
    while (end < set->count && segments[end].low <= high) end++;
    if (end > first) {
        /* Merge the range with segments [first, end). */
        if (segments[first].low < low) low = segments[first].low;
        if (segments[end - 1].high > high) high = segments[end - 1].high;
        segments[first].low = low;
        segments[first].high = high;
        memmove(segments + first + 1, segments + end, sizeof(Range) * (size_t)(set->count - end));
        set->count -= end - first - 1;
        return 1;
    }
    if (set->count == set->capacity) {
        int64_t grown = set->capacity ? 2 * set->capacity : 256;
        Range *more = realloc(set->segments, sizeof(Range) * (size_t)grown);
        if (!more) return 0;
        set->segments = segments = more;
        set->capacity = grown;
    }
    memmove(segments + first + 1, segments + first, sizeof(Range) * (size_t)(set->count - first));
    segments[first].low = low;
    segments[first].high = high;
    set->count++;
    return 1;
}

typedef struct {
    int64_t leaves; /* a power of two >= the number of sections; node 1 is the root */
    Union *covering;
    Union *inside;
} Tree;

static void tree_free(Tree *tree) {
    if (!tree->covering) return;
    for (int64_t node = 0; node < 2 * tree->leaves; node++) {
        free(tree->covering[node].segments);
        free(tree->inside[node].segments);
    }
    free(tree->covering);
    free(tree->inside);
    tree->covering = tree->inside = NULL;
}

static int tree_init(Tree *tree, int64_t sections) {
    tree->leaves = 1;
    while (tree->leaves < sections) tree->leaves *= 2;
    tree->covering = calloc((size_t)(2 * tree->leaves), sizeof(Union));
    tree->inside = calloc((size_t)(2 * tree->leaves), sizeof(Union));
    return tree->covering && tree->inside;
}

/* The canonical nodes of sections [first, end): at most 2 log2(leaves) of them. */
static int64_t canonical_nodes(const Tree *tree, int64_t first, int64_t end, int64_t *nodes) {
    int64_t count = 0;
    for (int64_t low = first + tree->leaves, high = end + tree->leaves; low < high;
         low >>= 1, high >>= 1) {
        if (low & 1) nodes[count++] = low++;
        if (high & 1) nodes[count++] = --high;
    }
    return count;
}

/* Calls `visit` on each strict ancestor of the given nodes once (marking them in `stamp`). */
#define FOR_EACH_ANCESTOR(nodes, count, stamp, mark, ancestor, body)       \
    for (int64_t at_ = 0; at_ < (count); at_++) {                            \
        for (int64_t ancestor = (nodes)[at_] >> 1; ancestor >= 1 &&          \
                                                   (stamp)[ancestor] != (mark); \
             ancestor >>= 1) {                                               \
            (stamp)[ancestor] = (mark);                                      \
            body                                                             \
        }                                                                    \
    }

/* Records the range [low, high) over sections [first, end). */
static int tree_insert(Tree *tree, int64_t first, int64_t end, int64_t low, int64_t high,
                       int64_t *nodes, int64_t *stamp, int64_t mark) {
    int64_t count = canonical_nodes(tree, first, end, nodes);
    for (int64_t at = 0; at < count; at++) {
        if (!union_add(&tree->covering[nodes[at]], low, high)) return 0;
        if (!union_add(&tree->inside[nodes[at]], low, high)) return 0;
    }
    FOR_EACH_ANCESTOR(nodes, count, stamp, mark, ancestor, {
        if (!union_add(&tree->inside[ancestor], low, high)) return 0;
    })
    return 1;
}

static int union_add_all(Union *set, const Union *more) {
    for (int64_t at = 0; at < more->count; at++)
        if (!union_add(set, more->segments[at].low, more->segments[at].high)) return 0;
    return 1;
}

/* Adds to `found` the ranges recorded over any section of [first, end). */
static int tree_query(const Tree *tree, int64_t first, int64_t end, Union *found,
                      int64_t *nodes, int64_t *stamp, int64_t mark) {
    int64_t count = canonical_nodes(tree, first, end, nodes);
    for (int64_t at = 0; at < count; at++)
        if (!union_add_all(found, &tree->inside[nodes[at]])) return 0;
    FOR_EACH_ANCESTOR(nodes, count, stamp, mark, ancestor, {
        if (!union_add_all(found, &tree->covering[ancestor])) return 0;
    })
    return 1;
}

static int compare_int64(const void *a, const void *b) {
    int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
    return (x > y) - (x < y);
}

/* First position of `value` in the sorted `values`. */
static int64_t position_of(const int64_t *values, int64_t count, int64_t value) {
    int64_t low = 0, high = count;
    while (low < high) {
        int64_t middle = low + (high - low) / 2;
        if (values[middle] < value)
            low = middle + 1;
        else
            high = middle;
    }
    return low;
}

static int64_t align_up(int64_t value, int64_t alignment) {
    return alignment <= 1 ? value : ((value + alignment - 1) / alignment) * alignment;
}

/* _core.py's find_offset over the union of the occupied ranges (sorted, disjoint segments):
 * -1 when nothing fits under `capacity`. */
static int64_t find_offset(const Range *ranges, int64_t count, int64_t size, int64_t alignment,
                           int64_t capacity, int best_fit) {
    if (count == 0) return size <= capacity ? 0 : -1;
    int64_t gap_low = 0;
    int64_t first = -1;
    int64_t best = -1, best_room = UNBOUNDED;
    for (int64_t i = 0; i <= count; i++) {
        int64_t gap_high = i < count ? ranges[i].low : UNBOUNDED;
        int64_t placed = align_up(gap_low, alignment);
        int64_t top = placed + size;
        if (top <= gap_high && top <= capacity) {
            if (!best_fit) return placed;
            if (first < 0) first = placed;
            if (i < count && gap_high - gap_low < best_room) {
                best_room = gap_high - gap_low;
                best = placed;
            }
        }
        if (i < count && ranges[i].high > gap_low) gap_low = ranges[i].high;
    }
    return best >= 0 ? best : first;
}

int64_t usmp_greedy_place(int64_t count, const int64_t *sizes, const int64_t *alignments,
                          const int64_t *candidate_indptr, const int64_t *candidate_pools,
                          int64_t pool_count, const int64_t *capacities, int64_t item_count,
                          const int64_t *item_start, const int64_t *item_end,
                          const int64_t *buffer_item_indptr,
                          const int64_t *buffer_items, const int64_t *explicit_indptr,
                          const int64_t *explicit_indices, const int64_t *order,
                          int64_t order_count, int32_t best_fit, int64_t *placed_pool,
                          int64_t *offsets) {
    int64_t failed = -2; /* out of memory, until the loop below finishes */
    Union found = {0};
    Tree *trees = calloc((size_t)(pool_count > 0 ? pool_count : 1), sizeof(Tree));
    int64_t *bounds = malloc(sizeof(int64_t) * (size_t)(2 * item_count + 1));
    int64_t *item_first = malloc(sizeof(int64_t) * (size_t)(item_count + 1));
    int64_t *item_last = malloc(sizeof(int64_t) * (size_t)(item_count + 1));
    int64_t *nodes = malloc(sizeof(int64_t) * 256);
    int64_t *stamp = NULL;
    int64_t mark = 0;
    if (!trees || !bounds || !item_first || !item_last || !nodes) goto done;
    /* Elementary sections: between consecutive distinct interval ends. */
    for (int64_t item = 0; item < item_count; item++) {
        bounds[2 * item] = item_start[item];
        bounds[2 * item + 1] = item_end[item];
    }
    qsort(bounds, (size_t)(2 * item_count), sizeof(int64_t), compare_int64);
    int64_t distinct = 0;
    for (int64_t at = 0; at < 2 * item_count; at++)
        if (distinct == 0 || bounds[at] != bounds[distinct - 1]) bounds[distinct++] = bounds[at];
    int64_t sections = distinct > 1 ? distinct - 1 : 1;
    for (int64_t item = 0; item < item_count; item++) {
        item_first[item] = position_of(bounds, distinct, item_start[item]);
        item_last[item] = position_of(bounds, distinct, item_end[item]);
    }
    for (int64_t pool = 0; pool < pool_count; pool++)
        if (!tree_init(&trees[pool], sections)) goto done;
    stamp = calloc((size_t)(2 * trees[0].leaves), sizeof(int64_t));
    if (pool_count && !stamp) goto done;
    /* The buffers placed beforehand. */
    for (int64_t buffer = 0; buffer < count; buffer++) {
        int64_t pool = placed_pool[buffer];
        if (pool < 0 || sizes[buffer] == 0) continue;
        for (int64_t k = buffer_item_indptr[buffer]; k < buffer_item_indptr[buffer + 1]; k++) {
            int64_t item = buffer_items[k];
            if (!tree_insert(&trees[pool], item_first[item], item_last[item], offsets[buffer],
                             offsets[buffer] + sizes[buffer], nodes, stamp, ++mark))
                goto done;
        }
    }
    failed = -1;
    for (int64_t step = 0; step < order_count && failed == -1; step++) {
        int64_t buffer = order[step];
        int64_t size = sizes[buffer];
        const int64_t *pools = candidate_pools + candidate_indptr[buffer];
        int64_t pool_choices = candidate_indptr[buffer + 1] - candidate_indptr[buffer];
        if (size == 0) {
            placed_pool[buffer] = pools[0];
            continue;
        }
        int placed = 0;
        for (int64_t choice = 0; choice < pool_choices && !placed; choice++) {
            int64_t pool = pools[choice];
            found.count = 0;
            for (int64_t k = buffer_item_indptr[buffer]; k < buffer_item_indptr[buffer + 1];
                 k++) {
                int64_t item = buffer_items[k];
                if (!tree_query(&trees[pool], item_first[item], item_last[item], &found, nodes,
                                stamp, ++mark)) {
                    failed = -2;
                    goto done;
                }
            }
            for (int64_t k = explicit_indptr[buffer]; k < explicit_indptr[buffer + 1]; k++) {
                int64_t other = explicit_indices[k];
                /* A zero-size buffer occupies no bytes. */
                if (placed_pool[other] == pool && sizes[other] > 0 &&
                    !union_add(&found, offsets[other], offsets[other] + sizes[other])) {
                    failed = -2;
                    goto done;
                }
            }
            int64_t offset = find_offset(found.segments, found.count, size, alignments[buffer],
                                         capacities[pool], best_fit);
            if (offset < 0) continue;
            placed_pool[buffer] = pool;
            offsets[buffer] = offset;
            placed = 1;
            for (int64_t k = buffer_item_indptr[buffer]; k < buffer_item_indptr[buffer + 1];
                 k++) {
                int64_t item = buffer_items[k];
                if (!tree_insert(&trees[pool], item_first[item], item_last[item], offset,
                                 offset + size, nodes, stamp, ++mark)) {
                    failed = -2;
                    goto done;
                }
            }
        }
        if (!placed) failed = buffer;
    }
done:
    if (trees)
        for (int64_t pool = 0; pool < pool_count; pool++) tree_free(&trees[pool]);
    free(trees);
    free(bounds);
    free(item_first);
    free(item_last);
    free(nodes);
    free(stamp);
    free(found.segments);
    return failed;
}
