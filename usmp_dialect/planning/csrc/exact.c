/* The exact decision search: the native twin of exact.py's `Search.run` (same nodes, in the
 * same order, same node count, same offsets).
 *
 * The Python search works on masks over the whole component at every node; this one keeps
 * incremental state instead, without changing which nodes are visited:
 *
 * - A node's unplaced buffers are one segment of a shared array (`order`, with `pos` its
 *   inverse). Placing a candidate swaps it to the end of the segment, so the child's segment is
 *   the prefix; a split into parts permutes the prefix into one sub-segment per part. Children
 *   only permute their own segments, so a segment always holds the node's set of buffers.
 * - Candidates are not sorted up front: the next one is the eligible buffer of smallest key
 *   above the last tried (the state is restored between siblings, so the keys do not move).
 *   Keys are unique (offset x count + a rank permutation), so this is exactly argsort's order.
 * - Section inference: the check of a section is a pure function of its unplaced buffers'
 *   minimum offsets and sizes, and every section in a node's range passed at its parent (by
 *   induction from the root, which checks them all). So a child only re-checks what can have
 *   changed: below THRESHOLD_LIMIT, where the threshold form subsumes the basic one and taking
 *   a buffer out only shrinks sums, the sections of the raised buffers and, in them, only the
 *   thresholds the raises crossed; above it, the sections of the placed and raised buffers.
 *   Python re-checks the hull of those runs (or everything), with the same verdict.
 * - Checks scan a section's whole member list and skip the placed buffers: keeping the
 *   unplaced ones first instead cost a few cache misses per section of every placed buffer,
 *   more than the skipping (sections are checked far less often than placed buffers cross them).
 * - A segment tree over the section totals gives their maximum over a run in log time: the T
 *   of re-ranked buffers and a node's fullest section, which scans cost per section.
 * - Re-ranking a part of a split writes the part's buffers' ranks over the parent's, after
 *   saving them on a stack that `unplace` pops: the parent's next candidates see its own ranks.
 * - The recursion runs on an explicit stack of frames, so deep components cannot overflow the
 *   C stack; every array is allocated once per call (but the rank stack, which grows). */
#define _POSIX_C_SOURCE 199309L

#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "native.h"

#define THRESHOLD_LIMIT ((int64_t)1 << 41)
#define UNBOUNDED ((int64_t)1 << 62)

typedef struct {
    int64_t seg_off;  /* the node's unplaced buffers: order[seg_off, seg_off + seg_len) */
    int64_t seg_len;
    int64_t first;    /* the node's sections: [first, end) */
    int64_t end;
    int64_t last_key; /* canonical order: candidates need a key above this */
    int64_t limit;    /* candidates need a minimum offset below this */
    int64_t cur;      /* the candidate placed now (-1: none yet) */
    int64_t cur_key;
    int64_t saved_base; /* the raised neighbours of `cur`: saved[saved_base, saved_top) */
    int64_t saved_top;
    int64_t parts_base; /* the parts below `cur`: parts[parts_base, + parts_count) */
    int64_t parts_count;
    int64_t part;       /* the part being searched */
    int64_t cut_low;    /* cuts[cut_low, cut_high) were decremented for `cur` */
    int64_t cut_high;
    int64_t rank_base;  /* saved ranks of re-ranked parts: [rank_base, saved_rank_top) */
    int32_t hatless;
    int32_t split;
} Frame;

typedef struct {
    int64_t first;
    int64_t end;
    int64_t off;
    int64_t len;
} Part;

typedef struct {
    int64_t count;
    int64_t capacity;
    const int64_t *sizes;
    const int64_t *alignments;
    const int64_t *indptr;
    const int64_t *indices;
    int64_t *rank;         /* a copy: re-ranked parts write to it */
    const int64_t *width;  /* the preorder's W and A columns, per buffer */
    const int64_t *area;
    const char *preorder;
    int64_t *column_t;     /* per buffer of the part being re-ranked, its current T */
    int64_t *saved_rank_buffer;
    int64_t *saved_rank;
    int64_t saved_rank_top;
    int64_t saved_rank_capacity;
    int64_t section_count; /* local sections: those of the component, renumbered in order */
    int64_t *sec_ptr;      /* per local section, its buffers */
    int64_t *sec_own;
    int64_t *msec_ptr;     /* per buffer, its local sections */
    int64_t *msec;
    int64_t *total;        /* per section, the unplaced bytes */
    int64_t *peak;         /* segment tree over `total` (node v: children 2v, 2v + 1): the */
    int64_t *lift;         /* max of v's range is peak[v], lift[v] the add applied to all of it */
    int64_t *cuts;         /* per boundary s|s+1, the unplaced buffers crossing it */
    int64_t *stamp;        /* per section, the node that last checked it */
    int64_t *first_section;
    int64_t *end_section;
    int decompose;
    unsigned char *unplaced;
    int64_t *mvo;
    int64_t *solution;
    int64_t *order;
    int64_t *pos;
    int64_t *saved_buffer;
    int64_t *saved_mvo;
    int64_t saved_top;
    Part *parts;
    int64_t parts_top;
    int64_t *part_of;   /* scratch for splitting a segment into parts */
    int64_t *scratch;
    int64_t *values;    /* scratch for the threshold check: one section's (mvo, size) */
    int64_t *value_sizes;
    Frame *frames;
} Ctx;

static double now_s(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

static void sort_descending(int64_t *values, int64_t *sizes, int64_t n) {
    /* Insertion sort: sections hold at most ~100 unplaced buffers. */
    for (int64_t i = 1; i < n; i++) {
        int64_t v = values[i], s = sizes[i], j = i - 1;
        while (j >= 0 && values[j] < v) {
            values[j + 1] = values[j];
            sizes[j + 1] = sizes[j];
            j--;
        }
        values[j + 1] = v;
        sizes[j + 1] = s;
    }
}

/* Adds `delta` to the totals of sections [l, r) in the tree of node v over [lo, hi). */
static void tree_add(Ctx *x, int64_t v, int64_t lo, int64_t hi, int64_t l, int64_t r,
                     int64_t delta) {
    if (r <= lo || hi <= l) return;
    if (l <= lo && hi <= r) {
        x->peak[v] += delta;
        x->lift[v] += delta;
        return;
    }
    int64_t mid = lo + (hi - lo) / 2;
    tree_add(x, 2 * v, lo, mid, l, r, delta);
    tree_add(x, 2 * v + 1, mid, hi, l, r, delta);
    int64_t a = x->peak[2 * v], b = x->peak[2 * v + 1];
    x->peak[v] = x->lift[v] + (a > b ? a : b);
}

/* The largest total over sections [l, r) (r > l) in the tree of node v over [lo, hi). */
static int64_t tree_max(const Ctx *x, int64_t v, int64_t lo, int64_t hi, int64_t l, int64_t r) {
    if (l <= lo && hi <= r) return x->peak[v];
    int64_t mid = lo + (hi - lo) / 2, best = -UNBOUNDED;
    if (l < mid) best = tree_max(x, 2 * v, lo, mid, l, r);
    if (r > mid) {
        int64_t other = tree_max(x, 2 * v + 1, mid, hi, l, r);
        if (other > best) best = other;
    }
    return x->lift[v] + best;
}

/* Rank-time T and a node's fullest section are range maxima of the totals, which placements
 * change by runs (or single sections): a tree answers both in log time, not per section. */
static void add_totals(Ctx *x, int64_t l, int64_t r, int64_t delta) {
    tree_add(x, 1, 0, x->section_count, l, r, delta);
}

static int64_t largest_total(const Ctx *x, int64_t l, int64_t r) {
    return tree_max(x, 1, 0, x->section_count, l, r);
}

/* Fills the tree of node v over [lo, hi) from `total`. */
static void tree_build(Ctx *x, int64_t v, int64_t lo, int64_t hi) {
    if (hi - lo == 1) {
        x->peak[v] = x->lift[v] = x->total[lo];
        return;
    }
    int64_t mid = lo + (hi - lo) / 2;
    tree_build(x, 2 * v, lo, mid);
    tree_build(x, 2 * v + 1, mid, hi);
    int64_t a = x->peak[2 * v], b = x->peak[2 * v + 1];
    x->lift[v] = 0;
    x->peak[v] = a > b ? a : b;
}

/* Section inference for one section: exact.py's basic check and, below THRESHOLD_LIMIT,
 * `_thresholds_fit` (for every t, the unplaced buffers of minimum offset >= t fit in
 * [t, capacity)). */
static int section_fits(Ctx *x, int64_t s) {
    const int64_t capacity = x->capacity;
    const int64_t total = x->total[s];
    const int64_t *own = x->sec_own + x->sec_ptr[s];
    const int64_t members = x->sec_ptr[s + 1] - x->sec_ptr[s];
    int64_t lowest = UNBOUNDED, highest = -1, open = 0;
    for (int64_t i = 0; i < members; i++) {
        if (!x->unplaced[own[i]]) continue;
        int64_t v = x->mvo[own[i]];
        open++;
        if (v < lowest) lowest = v;
        if (v > highest) highest = v;
    }
    if ((lowest < capacity ? lowest : capacity) + total > capacity) return 0;
    /* One buffer: its threshold is the basic check. All thresholds pass when even the highest
     * minimum offset has room for every unplaced byte. */
    if (capacity >= THRESHOLD_LIMIT || open < 2 || highest + total <= capacity) return 1;
    /* Only a threshold t > capacity - total can fail (the bytes at or above t are at most
     * `total`), and the bytes at or above such a t all belong to buffers above that line. */
    const int64_t line = capacity - total;
    int64_t n = 0;
    for (int64_t i = 0; i < members; i++) {
        int64_t b = own[i];
        if (!x->unplaced[b] || x->mvo[b] <= line) continue;
        x->values[n] = x->mvo[b];
        x->value_sizes[n] = x->sizes[b];
        n++;
    }
    sort_descending(x->values, x->value_sizes, n);
    int64_t sum = 0;
    for (int64_t i = 0; i < n; i++) {
        sum += x->value_sizes[i];
        if (x->values[i] + sum > capacity) return 0;
    }
    return 1;
}

/* The threshold check of section s after some of its buffers were raised from minimum offsets
 * >= low to offsets <= high, the section having passed before: only the thresholds in
 * (low, high] saw the bytes above them grow (those at or below low already counted the raised
 * buffers, those above high still do not; the placed buffer's removal only shrinks sums). */
static int section_window_fits(Ctx *x, int64_t s, int64_t low, int64_t high) {
    const int64_t capacity = x->capacity;
    const int64_t line = capacity - x->total[s]; /* thresholds at or below it always fit */
    const int64_t floor = low > line ? low : line;
    if (high <= floor) return 1;
    const int64_t *own = x->sec_own + x->sec_ptr[s];
    const int64_t members = x->sec_ptr[s + 1] - x->sec_ptr[s];
    int64_t above = 0, n = 0;
    for (int64_t i = 0; i < members; i++) {
        int64_t b = own[i], v = x->mvo[b];
        if (!x->unplaced[b]) continue;
        if (v > high) {
            above += x->sizes[b];
        } else if (v > floor) {
            x->values[n] = v;
            x->value_sizes[n] = x->sizes[b];
            n++;
        }
    }
    sort_descending(x->values, x->value_sizes, n);
    for (int64_t i = 0; i < n; i++) {
        above += x->value_sizes[i];
        if (x->values[i] + above > capacity) return 0;
    }
    return 1;
}

static int sections_of_fit(Ctx *x, int64_t b, int64_t first, int64_t end, int64_t node) {
    for (int64_t p = x->msec_ptr[b]; p < x->msec_ptr[b + 1]; p++) {
        int64_t s = x->msec[p];
        if (s < first || s >= end || x->stamp[s] == node) continue;
        x->stamp[s] = node;
        if (!section_fits(x, s)) return 0;
    }
    return 1;
}

static void swap_to(Ctx *x, int64_t b, int64_t target) {
    int64_t from = x->pos[b], other = x->order[target];
    x->order[from] = other;
    x->pos[other] = from;
    x->order[target] = b;
    x->pos[b] = target;
}

/* Whether buffer a goes before b in the preorder (columns descending, then index). */
static int preorder_before(const Ctx *x, int64_t a, int64_t b) {
    for (const char *letter = x->preorder; *letter; letter++) {
        int64_t va, vb;
        switch (*letter) {
        case 'W': va = x->width[a]; vb = x->width[b]; break;
        case 'A': va = x->area[a]; vb = x->area[b]; break;
        case 'T': va = x->column_t[a]; vb = x->column_t[b]; break;
        case 'Z': va = x->sizes[a]; vb = x->sizes[b]; break;
        case 'C':
            va = x->msec_ptr[a + 1] - x->msec_ptr[a];
            vb = x->msec_ptr[b + 1] - x->msec_ptr[b];
            break;
        default: continue;
        }
        if (va != vb) return va > vb;
    }
    return a < b;
}

/* Sorts values[0, n) into preorder, using temp (n entries): a merge sort, as the first parts
 * of a large component can hold thousands of buffers. */
static void sort_preorder(const Ctx *x, int64_t *values, int64_t *temp, int64_t n) {
    int64_t *from = values, *to = temp;
    for (int64_t width = 1; width < n; width *= 2) {
        for (int64_t low = 0; low < n; low += 2 * width) {
            int64_t mid = low + width < n ? low + width : n;
            int64_t high = low + 2 * width < n ? low + 2 * width : n;
            int64_t i = low, j = mid, k = low;
            while (i < mid && j < high)
                to[k++] = preorder_before(x, from[j], from[i]) ? from[j++] : from[i++];
            while (i < mid) to[k++] = from[i++];
            while (j < high) to[k++] = from[j++];
        }
        int64_t *swap = from;
        from = to;
        to = swap;
    }
    if (from != values) memcpy(values, from, sizeof(int64_t) * (size_t)n);
}

/* Re-ranks the buffers order[off, off + len) by the preorder with T from the current totals
 * (saving the old ranks for `unplace`), as MiniMalloc's SubSolve does for each part. Uses
 * `scratch` and `part_of`. 0 when out of memory. */
static int rerank(Ctx *x, int64_t off, int64_t len) {
    if (!len) return 1;
    if (x->saved_rank_top + len > x->saved_rank_capacity) {
        int64_t capacity = 2 * (x->saved_rank_top + len);
        int64_t *buffers = realloc(x->saved_rank_buffer, sizeof(int64_t) * (size_t)capacity);
        if (buffers) x->saved_rank_buffer = buffers;
        int64_t *ranks = realloc(x->saved_rank, sizeof(int64_t) * (size_t)capacity);
        if (ranks) x->saved_rank = ranks;
        if (!buffers || !ranks) return 0;
        x->saved_rank_capacity = capacity;
    }
    int64_t *sorted = x->scratch;
    for (int64_t i = 0; i < len; i++) {
        /* Splits imply decomposition, so each buffer's sections are one nonempty run. */
        int64_t b = x->order[off + i];
        x->column_t[b] = largest_total(x, x->first_section[b], x->end_section[b]);
        sorted[i] = b;
    }
    sort_preorder(x, sorted, x->part_of, len);
    for (int64_t i = 0; i < len; i++) {
        int64_t b = sorted[i];
        x->saved_rank_buffer[x->saved_rank_top] = b;
        x->saved_rank[x->saved_rank_top++] = x->rank[b];
        x->rank[b] = i;
    }
    return 1;
}

/* Places `f->cur` and lays out the parts to search below it (exact.py's loop body up to
 * `_place_rest`). 0 when out of memory. */
static int place(Ctx *x, Frame *f) {
    const int64_t c = f->cur;
    const int64_t offset = x->mvo[c];
    const int64_t size = x->sizes[c];
    const int64_t height = offset + size;
    swap_to(x, c, f->seg_off + f->seg_len - 1);
    x->unplaced[c] = 0;
    x->solution[c] = offset;
    f->saved_base = x->saved_top;
    for (int64_t p = x->indptr[c]; p < x->indptr[c + 1]; p++) {
        int64_t n = x->indices[p];
        if (!x->unplaced[n]) continue;
        int64_t a = x->alignments[n];
        int64_t raised = a > 1 ? (height + a - 1) / a * a : height;
        if (raised > x->mvo[n]) {
            x->saved_buffer[x->saved_top] = n;
            x->saved_mvo[x->saved_top] = x->mvo[n];
            x->saved_top++;
            x->mvo[n] = raised;
        }
    }
    f->saved_top = x->saved_top;
    f->hatless = f->saved_top == f->saved_base;
    for (int64_t p = x->msec_ptr[c]; p < x->msec_ptr[c + 1]; p++) {
        x->total[x->msec[p]] -= size;
        if (!x->decompose) add_totals(x, x->msec[p], x->msec[p] + 1, -size);
    }
    if (x->decompose) add_totals(x, x->first_section[c], x->end_section[c], -size);

    f->parts_base = x->parts_top;
    f->rank_base = x->saved_rank_top;
    f->part = 0;
    f->split = 0;
    f->cut_low = f->cut_high = 0;
    const int64_t rest_off = f->seg_off, rest_len = f->seg_len - 1;
    int64_t freed = 0;
    if (x->decompose) {
        int64_t low = x->first_section[c], high = x->end_section[c] - 1;
        if (high > low) {
            f->cut_low = low;
            f->cut_high = high;
            for (int64_t s = low; s < high; s++)
                if (--x->cuts[s] == 0) freed++;
        }
    }
    if (!freed) {
        Part *part = &x->parts[x->parts_top++];
        part->first = f->first;
        part->end = f->end;
        part->off = rest_off;
        part->len = rest_len;
        f->parts_count = 1;
        return 1;
    }
    /* Split at every boundary no unplaced buffer crosses any more: parts [points[i],
     * points[i+1]) in section order; each unplaced buffer lies inside exactly one. */
    f->split = 1;
    Part *parts = &x->parts[x->parts_top];
    int64_t n = 0, start = f->first;
    for (int64_t s = f->cut_low; s < f->cut_high; s++) {
        if (x->cuts[s]) continue;
        parts[n].first = start;
        parts[n].end = s + 1;
        parts[n].len = 0;
        start = s + 1;
        n++;
    }
    parts[n].first = start;
    parts[n].end = f->end;
    parts[n].len = 0;
    n++;
    for (int64_t i = 0; i < rest_len; i++) {
        int64_t b = x->order[rest_off + i], fs = x->first_section[b];
        int64_t lo = 0, hi = n - 1; /* the last part whose first section is <= fs */
        while (lo < hi) {
            int64_t mid = (lo + hi + 1) / 2;
            if (parts[mid].first <= fs) lo = mid;
            else hi = mid - 1;
        }
        x->part_of[i] = lo;
        parts[lo].len++;
    }
    int64_t off = rest_off;
    for (int64_t j = 0; j < n; j++) {
        parts[j].off = off;
        off += parts[j].len;
        parts[j].len = 0;
    }
    for (int64_t i = 0; i < rest_len; i++) x->scratch[i] = x->order[rest_off + i];
    for (int64_t i = 0; i < rest_len; i++) {
        Part *part = &parts[x->part_of[i]];
        int64_t at = part->off + part->len++, b = x->scratch[i];
        x->order[at] = b;
        x->pos[b] = at;
    }
    x->parts_top += n;
    f->parts_count = n;
    for (int64_t j = 0; j < n; j++)
        if (!rerank(x, parts[j].off, parts[j].len)) return 0;
    return 1;
}

static void unplace(Ctx *x, Frame *f) {
    const int64_t c = f->cur, size = x->sizes[c];
    for (int64_t s = f->cut_low; s < f->cut_high; s++) x->cuts[s]++;
    for (int64_t p = x->msec_ptr[c]; p < x->msec_ptr[c + 1]; p++) {
        x->total[x->msec[p]] += size;
        if (!x->decompose) add_totals(x, x->msec[p], x->msec[p] + 1, size);
    }
    if (x->decompose) add_totals(x, x->first_section[c], x->end_section[c], size);
    for (int64_t i = f->saved_top - 1; i >= f->saved_base; i--)
        x->mvo[x->saved_buffer[i]] = x->saved_mvo[i];
    x->saved_top = f->saved_base;
    x->parts_top = f->parts_base;
    while (x->saved_rank_top > f->rank_base) {
        x->saved_rank_top--;
        x->rank[x->saved_rank_buffer[x->saved_rank_top]] = x->saved_rank[x->saved_rank_top];
    }
    x->unplaced[c] = 1;
}

/* Keys order candidates by minimum offset first, so those below a limit on it are a prefix of
 * the key order: the candidate after `above` is the smallest key above it, if under the limit.
 * Sets f->cur (-1: none) and f->cur_key. */
static void take_candidate(Ctx *x, Frame *f, int64_t best, int64_t best_key) {
    f->cur = best >= 0 && x->mvo[best] < f->limit ? best : -1;
    f->cur_key = best_key;
}

/* The node's checks before branching; sets f->limit and the first candidate. 0 when the node
 * fails. */
static int node_fits(Ctx *x, Frame *f, const Frame *parent, int64_t node) {
    const int64_t capacity = x->capacity, count = x->count, above = f->last_key;
    int64_t lowest_top = UNBOUNDED, highest_top = -1, best = -1, best_key = 0;
    /* One pass over the segment for the dominance limit and the first candidate. */
    for (int64_t i = f->seg_off; i < f->seg_off + f->seg_len; i++) {
        int64_t b = x->order[i], v = x->mvo[b];
        int64_t top = v + x->sizes[b], key = v * count + x->rank[b];
        if (top < lowest_top) lowest_top = top;
        if (top > highest_top) highest_top = top;
        if (key > above && (best < 0 || key < best_key)) {
            best = b;
            best_key = key;
        }
    }
    if (highest_top > capacity) return 0;
    if (!parent) {
        for (int64_t s = f->first; s < f->end; s++)
            if (!section_fits(x, s)) return 0;
    } else if (capacity >= THRESHOLD_LIMIT) {
        if (!sections_of_fit(x, parent->cur, f->first, f->end, node)) return 0;
        for (int64_t i = parent->saved_base; i < parent->saved_top; i++)
            if (!sections_of_fit(x, x->saved_buffer[i], f->first, f->end, node)) return 0;
    } else {
        /* Thresholds subsume the basic check, and taking the placed buffer out of its
         * sections only removes terms from them: only the raised buffers' sections can fail
         * now, and in each only the thresholds the raises crossed, in (low, high] (checking
         * more thresholds or sections than that changes nothing: they passed at the parent). */
        int64_t low = UNBOUNDED, high = -1, sec_low = f->end, sec_high = f->first;
        for (int64_t i = parent->saved_base; i < parent->saved_top; i++) {
            int64_t b = x->saved_buffer[i], old = x->saved_mvo[i], raised = x->mvo[b];
            if (old < low) low = old;
            if (raised > high) high = raised;
            if (x->decompose) {
                if (x->first_section[b] < sec_low) sec_low = x->first_section[b];
                if (x->end_section[b] > sec_high) sec_high = x->end_section[b];
            }
        }
        if (x->decompose) {
            if (sec_low < f->first) sec_low = f->first;
            if (sec_high > f->end) sec_high = f->end;
            for (int64_t sec = sec_low; sec < sec_high; sec++)
                if (high > capacity - x->total[sec] && !section_window_fits(x, sec, low, high))
                    return 0;
        } else {
            for (int64_t i = parent->saved_base; i < parent->saved_top; i++) {
                int64_t b = x->saved_buffer[i];
                for (int64_t p = x->msec_ptr[b]; p < x->msec_ptr[b + 1]; p++) {
                    int64_t sec = x->msec[p];
                    if (x->stamp[sec] == node) continue;
                    x->stamp[sec] = node;
                    if (high > capacity - x->total[sec] && !section_window_fits(x, sec, low, high))
                        return 0;
                }
            }
        }
    }
    const int64_t fullest = f->end > f->first ? largest_total(x, f->first, f->end) : 0;
    int64_t room = capacity - fullest + 1;
    f->limit = lowest_top < room ? lowest_top : room;
    take_candidate(x, f, best, best_key);
    return 1;
}

/* Moves f->cur to the next candidate (-1: none). */
static void next_candidate(Ctx *x, Frame *f) {
    const int64_t count = x->count, above = f->cur_key;
    int64_t best = -1, best_key = 0;
    for (int64_t i = f->seg_off; i < f->seg_off + f->seg_len; i++) {
        int64_t b = x->order[i];
        int64_t key = x->mvo[b] * count + x->rank[b];
        if (key > above && (best < 0 || key < best_key)) {
            best = b;
            best_key = key;
        }
    }
    take_candidate(x, f, best, best_key);
}

/* TRY branches on f->cur; NEXT first moves it on. */
enum { ENTER, TRY, NEXT, PART, RETURN };

static int32_t search(Ctx *x, int64_t member_count, int64_t node_limit, double deadline,
                      int64_t *nodes_out) {
    int64_t nodes = 0, depth = 0;
    int32_t result = 0, value = 0;
    Frame *f = &x->frames[0];
    f->seg_off = 0;
    f->seg_len = member_count;
    f->first = 0;
    f->end = x->section_count;
    f->last_key = -1;
    int state = ENTER;

    for (;;) {
        f = &x->frames[depth];
        if (state == ENTER) {
            nodes++;
            if (nodes > node_limit) {
                result = -1;
                break;
            }
            if (!(nodes & 255) && now_s() > deadline) {
                result = -2;
                break;
            }
            if (!f->seg_len) {
                value = 1;
                state = RETURN;
            } else if (!node_fits(x, f, depth ? &x->frames[depth - 1] : NULL, nodes)) {
                value = 0;
                state = RETURN;
            } else {
                state = TRY;
            }
        } else if (state == TRY || state == NEXT) {
            if (state == NEXT) next_candidate(x, f);
            if (f->cur < 0) {
                value = 0;
                state = RETURN;
            } else if (!place(x, f)) {
                result = -2; /* out of memory: report it as giving up */
                break;
            } else {
                state = PART;
            }
        } else if (state == PART) {
            /* Empty parts of a split are skipped; an unsplit rest is searched even when empty
             * (that node counts, as in Python). */
            const Part *part = NULL;
            while (f->part < f->parts_count) {
                part = &x->parts[f->parts_base + f->part];
                if (part->len || !f->split) break;
                f->part++;
            }
            if (f->part == f->parts_count) {
                unplace(x, f);
                value = 1;
                state = RETURN;
            } else {
                Frame *child = &x->frames[++depth];
                child->seg_off = part->off;
                child->seg_len = part->len;
                child->first = part->first;
                child->end = part->end;
                child->last_key = f->split ? -1 : f->cur_key;
                state = ENTER;
            }
        } else { /* RETURN: frames[depth] answered `value` */
            if (!depth) {
                result = value;
                break;
            }
            f = &x->frames[--depth];
            if (value) {
                f->part++;
                state = PART;
            } else {
                unplace(x, f);
                /* Hatless: nothing rests on the buffer, so placing others first cannot help. */
                state = f->hatless ? RETURN : NEXT;
            }
        }
    }
    *nodes_out = nodes;
    return result;
}

int32_t usmp_exact_search(int64_t count, const int64_t *sizes, const int64_t *alignments,
                          const int64_t *indptr, const int64_t *indices,
                          const int64_t *section_indptr, const int64_t *section_indices,
                          int64_t section_count, const int64_t *component,
                          int64_t component_count, const int64_t *rank, const int64_t *width,
                          const int64_t *area, const char *preorder, int64_t capacity,
                          int64_t node_limit, double time_limit_s, int64_t *offsets,
                          int64_t *nodes) {
    const double deadline = now_s() + time_limit_s;
    const int64_t m = component_count;
    *nodes = 0;
    Ctx x;
    memset(&x, 0, sizeof x);
    x.count = count;
    x.capacity = capacity;
    x.sizes = sizes;
    x.alignments = alignments;
    x.indptr = indptr;
    x.indices = indices;
    x.width = width;
    x.area = area;
    x.preorder = preorder;
    x.rank = malloc(sizeof(int64_t) * (size_t)(count + 1));
    x.column_t = calloc((size_t)count + 1, sizeof(int64_t));

    int64_t pairs = 0, edges = 0;
    for (int64_t i = 0; i < m; i++) {
        int64_t b = component[i];
        pairs += section_indptr[b + 1] - section_indptr[b];
        edges += indptr[b + 1] - indptr[b];
    }
    int64_t *local = malloc(sizeof(int64_t) * (size_t)(section_count + 1));
    x.msec_ptr = calloc((size_t)count + 1, sizeof(int64_t));
    x.msec = malloc(sizeof(int64_t) * (size_t)(pairs + 1));
    x.first_section = calloc((size_t)count + 1, sizeof(int64_t));
    x.end_section = calloc((size_t)count + 1, sizeof(int64_t));
    x.unplaced = calloc((size_t)count + 1, 1);
    x.mvo = calloc((size_t)count + 1, sizeof(int64_t));
    x.solution = calloc((size_t)count + 1, sizeof(int64_t));
    x.order = malloc(sizeof(int64_t) * (size_t)(m + 1));
    x.pos = calloc((size_t)count + 1, sizeof(int64_t));
    x.saved_buffer = malloc(sizeof(int64_t) * (size_t)(edges + 1));
    x.saved_mvo = malloc(sizeof(int64_t) * (size_t)(edges + 1));
    x.parts = malloc(sizeof(Part) * (size_t)(pairs + m + 1));
    x.part_of = malloc(sizeof(int64_t) * (size_t)(m + 1));
    x.scratch = malloc(sizeof(int64_t) * (size_t)(m + 1));
    x.saved_rank_capacity = m + 1;
    x.saved_rank_buffer = malloc(sizeof(int64_t) * (size_t)x.saved_rank_capacity);
    x.saved_rank = malloc(sizeof(int64_t) * (size_t)x.saved_rank_capacity);
    x.frames = malloc(sizeof(Frame) * (size_t)(m + 2));
    int32_t result = -2; /* out of memory: report it as giving up */
    if (!x.rank || !x.column_t || !local || !x.msec_ptr || !x.msec || !x.first_section ||
        !x.end_section || !x.unplaced || !x.mvo || !x.solution || !x.order || !x.pos ||
        !x.saved_buffer || !x.saved_mvo || !x.parts || !x.part_of || !x.scratch ||
        !x.saved_rank_buffer || !x.saved_rank || !x.frames)
        goto done;

    memcpy(x.rank, rank, sizeof(int64_t) * (size_t)count);
    /* Local sections: the component's, in increasing order (np.unique). */
    for (int64_t s = 0; s < section_count; s++) local[s] = -1;
    for (int64_t i = 0; i < m; i++) {
        int64_t b = component[i];
        for (int64_t p = section_indptr[b]; p < section_indptr[b + 1]; p++)
            local[section_indices[p]] = 0;
    }
    int64_t sections = 0;
    for (int64_t s = 0; s < section_count; s++)
        if (local[s] >= 0) local[s] = sections++;
    x.section_count = sections;
    for (int64_t i = 0; i < m; i++) {
        int64_t b = component[i];
        x.msec_ptr[b + 1] = section_indptr[b + 1] - section_indptr[b];
    }
    for (int64_t b = 0; b < count; b++) x.msec_ptr[b + 1] += x.msec_ptr[b];
    for (int64_t i = 0; i < m; i++) {
        int64_t b = component[i], at = x.msec_ptr[b];
        for (int64_t p = section_indptr[b]; p < section_indptr[b + 1]; p++)
            x.msec[at++] = local[section_indices[p]];
    }
    x.sec_ptr = calloc((size_t)sections + 1, sizeof(int64_t));
    x.sec_own = malloc(sizeof(int64_t) * (size_t)(pairs + 1));
    x.total = calloc((size_t)sections + 1, sizeof(int64_t));
    x.cuts = calloc((size_t)sections + 1, sizeof(int64_t));
    x.stamp = calloc((size_t)sections + 1, sizeof(int64_t));
    x.peak = malloc(sizeof(int64_t) * (size_t)(4 * sections + 4));
    x.lift = malloc(sizeof(int64_t) * (size_t)(4 * sections + 4));

    if (!x.sec_ptr || !x.sec_own || !x.total || !x.cuts || !x.stamp || !x.peak || !x.lift)
        goto done;
    for (int64_t p = 0; p < pairs; p++) x.sec_ptr[x.msec[p] + 1]++;
    int64_t population = 0;
    for (int64_t s = 0; s < sections; s++) {
        if (x.sec_ptr[s + 1] > population) population = x.sec_ptr[s + 1];
        x.sec_ptr[s + 1] += x.sec_ptr[s];
    }
    x.values = malloc(sizeof(int64_t) * (size_t)(population + 1));
    x.value_sizes = malloc(sizeof(int64_t) * (size_t)(population + 1));
    if (!x.values || !x.value_sizes) goto done;
    {
        int64_t *fill = local; /* reused: per section, the next free slot */
        for (int64_t s = 0; s < sections; s++) fill[s] = x.sec_ptr[s];
        for (int64_t i = 0; i < m; i++) {
            int64_t b = component[i];
            for (int64_t p = x.msec_ptr[b]; p < x.msec_ptr[b + 1]; p++)
                x.sec_own[fill[x.msec[p]]++] = b;
        }
    }

    /* Dynamic decomposition needs every buffer's sections to be one contiguous run. */
    x.decompose = 1;
    for (int64_t i = 0; i < m; i++) {
        int64_t b = component[i], lo = x.msec_ptr[b], hi = x.msec_ptr[b + 1];
        if (hi == lo || x.msec[hi - 1] - x.msec[lo] + 1 != hi - lo) {
            x.decompose = 0;
            break;
        }
        x.first_section[b] = x.msec[lo];
        x.end_section[b] = x.msec[hi - 1] + 1;
    }

    for (int64_t i = 0; i < m; i++) {
        int64_t b = component[i];
        for (int64_t p = x.msec_ptr[b]; p < x.msec_ptr[b + 1]; p++) x.total[x.msec[p]] += sizes[b];
        if (x.decompose)
            for (int64_t s = x.first_section[b]; s < x.end_section[b] - 1; s++) x.cuts[s]++;
        x.unplaced[b] = 1;
        x.order[i] = b;
        x.pos[b] = i;
    }
    result = 0;
    for (int64_t s = 0; s < sections; s++)
        if (x.total[s] > capacity) goto done;
    for (int64_t i = 0; i < m; i++)
        if (sizes[component[i]] > capacity) goto done;
    for (int64_t s = 0; s < sections; s++) x.stamp[s] = -1;
    if (sections) tree_build(&x, 1, 0, sections);

    result = search(&x, m, node_limit, deadline, nodes);
    if (result == 1)
        for (int64_t i = 0; i < m; i++) offsets[component[i]] = x.solution[component[i]];

done:
    free(local);
    free(x.msec_ptr);
    free(x.msec);
    free(x.first_section);
    free(x.end_section);
    free(x.unplaced);
    free(x.mvo);
    free(x.solution);
    free(x.order);
    free(x.pos);
    free(x.saved_buffer);
    free(x.saved_mvo);
    free(x.parts);
    free(x.part_of);
    free(x.scratch);
    free(x.frames);
    free(x.sec_ptr);
    free(x.sec_own);
    free(x.total);
    free(x.cuts);
    free(x.stamp);
    free(x.peak);
    free(x.lift);
    free(x.rank);
    free(x.column_t);
    free(x.saved_rank_buffer);
    free(x.saved_rank);
    free(x.values);
    free(x.value_sizes);
    return result;
}
