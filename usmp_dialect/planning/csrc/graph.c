/* The conflict graph of buffers with one live interval each (_core.py's adjacency, the
 * common case): two buffers conflict when their intervals overlap. Sorting the intervals by
 * start makes the later-starting partners of each interval one contiguous run, so the graph
 * costs one pass per edge instead of one query per buffer. */
#include <stdlib.h>

#include "native.h"

int32_t usmp_native_abi(void) { return USMP_NATIVE_ABI; }

static void sort_int64(int64_t *values, int64_t count) {
    while (count > 16) {
        int64_t a = values[0], b = values[count / 2], c = values[count - 1];
        int64_t pivot = a < b ? (b < c ? b : (a < c ? c : a)) : (a < c ? a : (b < c ? c : b));
        int64_t i = 0, j = count - 1;
        while (i <= j) {
            while (values[i] < pivot) i++;
            while (values[j] > pivot) j--;
            if (i <= j) {
                int64_t swap = values[i];
                values[i] = values[j];
                values[j] = swap;
                i++;
                j--;
            }
        }
        /* Recurse into the smaller side, loop on the larger: the stack stays logarithmic. */
        if (j + 1 < count - i) {
            sort_int64(values, j + 1);
            values += i;
            count -= i;
        } else {
            sort_int64(values + i, count - i);
            count = j + 1;
        }
    }
    for (int64_t i = 1; i < count; i++) {
        int64_t value = values[i], j = i;
        while (j > 0 && values[j - 1] > value) {
            values[j] = values[j - 1];
            j--;
        }
        values[j] = value;
    }
}

int64_t usmp_interval_graph(int64_t count, int64_t item_count, const int64_t *item_owner,
                            const int64_t *by_start, const int64_t *item_start,
                            const int64_t *item_end, int64_t *indptr, int64_t *indices) {
    /* Pass 1 (indices == NULL): degrees into indptr as offsets. Pass 2: fill, sort rows. */
    int64_t *fill = NULL;
    if (indices == NULL) {
        for (int64_t buffer = 0; buffer <= count; buffer++) indptr[buffer] = 0;
    } else {
        fill = malloc(sizeof(int64_t) * (size_t)(count > 0 ? count : 1));
        if (!fill) return -1;
        for (int64_t buffer = 0; buffer < count; buffer++) fill[buffer] = indptr[buffer];
    }
    for (int64_t at = 0; at < item_count; at++) {
        int64_t item = by_start[at];
        int64_t owner = item_owner[item], end = item_end[item];
        for (int64_t next = at + 1; next < item_count && item_start[by_start[next]] < end;
             next++) {
            int64_t other = item_owner[by_start[next]];
            if (indices == NULL) {
                indptr[owner + 1]++;
                indptr[other + 1]++;
            } else {
                indices[fill[owner]++] = other;
                indices[fill[other]++] = owner;
            }
        }
    }
    if (indices == NULL) {
        for (int64_t buffer = 0; buffer < count; buffer++) indptr[buffer + 1] += indptr[buffer];
        return indptr[count];
    }
    free(fill);
    for (int64_t buffer = 0; buffer < count; buffer++)
        sort_int64(indices + indptr[buffer], indptr[buffer + 1] - indptr[buffer]);
    return indptr[count];
}
