/* The BM25 search kernel: one query's top k over the term-major weights of goldeval/bm25.py.
 *
 * Why C: at 100,000 passages a typical query has ~170,000 postings (frequent terms have a
 * posting in most passages); the numpy/scipy path spends most of a query on temporaries and
 * extra passes over them, and numba (bm25s's fast backend) would put a ~210 MB dependency and
 * seconds of compile time into every CI job that installs goldeval. The module is optional:
 * without a compiler the install still works and BM25Index searches with numpy, with the same
 * results.
 *
 * Two paths: with only positive weights and ascending rows (every index BM25Index builds with
 * Lucene's IDF), run_pruned skips most postings of the frequent terms (see the comment above
 * it); otherwise every posting is read (accumulate) and the top k picked in one pass.
 *
 * The results are exactly the numpy path's (tested on random corpora in
 * tests/goldeval/test_bm25_kernel.py):
 *
 *   - scores are summed term at a time in query-term order from 0.0 in float64,
 *     `score[p] += weight * count`, the operations (in the same order) of the numpy path's
 *     scipy CSC matvec, so the sums are equal bit for bit (the pruned path sums its last
 *     candidates again so). The stored float32 weights are widened to float64 exactly before
 *     any arithmetic, and floating-point contraction (a fused multiply-add) would change the
 *     bits, so it is turned off below;
 *   - a passage is matched when it holds a query term: with only positive weights, exactly when
 *     its score is above zero; otherwise a byte per passage records it (Okapi's IDF floor can
 *     give a zero or negative weight, and such a passage is still a result);
 *   - `allowed` (one bool per passage, or None) is applied before the cut;
 *   - the top k go by score, best first, ties to the lower passage index.
 *
 * Each search borrows a scratch buffer (a float64 per passage) from its Postings object and
 * leaves it zeroed, so no query clears or allocates 800 KB; the work runs without the GIL, so
 * threads search queries at once (BM25Index.search_many), each with its own scratch. The long
 * rows (a 16th of the passages or more) get a bitmap when the Postings object is made, 12 bytes
 * per 64 passages each (about 3 MB beside a 69 MB index of 100,000 passages; a 32nd or a 64th
 * searched no faster).
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <pythread.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#ifdef __SSE2__
#include <emmintrin.h>
#endif

#if defined(__clang__)
#pragma clang fp contract(off)
#elif defined(__GNUC__)
#pragma GCC optimize("fp-contract=off")
#endif

/* Passages per block of the selection pass: a block none of whose scores can enter the top k
 * is only compared and cleared. */
#define BLOCK 64

typedef struct {
    double score;
    int64_t index;
} Hit;

/* a ranks below b: a lower score, or the same score and a higher index. */
static inline int ranks_below(const Hit *a, const Hit *b) {
    return a->score < b->score || (a->score == b->score && a->index > b->index);
}

/* A heap of the kept hits whose root is the lowest-ranked of them. */
static void heap_push(Hit *heap, Py_ssize_t *kept, Hit hit) {
    Py_ssize_t i = (*kept)++;
    while (i > 0) {
        Py_ssize_t parent = (i - 1) / 2;
        if (!ranks_below(&hit, &heap[parent])) break;
        heap[i] = heap[parent];
        i = parent;
    }
    heap[i] = hit;
}

static void heap_replace_root(Hit *heap, Py_ssize_t kept, Hit hit) {
    Py_ssize_t i = 0;
    for (;;) {
        Py_ssize_t child = 2 * i + 1;
        if (child >= kept) break;
        if (child + 1 < kept && ranks_below(&heap[child + 1], &heap[child])) child++;
        if (!ranks_below(&heap[child], &hit)) break;
        heap[i] = heap[child];
        i = child;
    }
    heap[i] = hit;
}

/* Passages are offered in ascending index order, so a new one ranks above the root of a full
 * heap exactly when its score is higher: callers offer only such passages. */
static inline void offer(Hit *heap, Py_ssize_t *kept, Py_ssize_t k, double score, int64_t index) {
    Hit hit = {score, index};
    if (*kept < k)
        heap_push(heap, kept, hit);
    else
        heap_replace_root(heap, *kept, hit);
}

/* The heap's hits, best first: the lowest-ranked is moved to the end, again and again (a
 * heapsort; qsort's comparisons through a function pointer cost more). */
static void heap_sort(Hit *heap, Py_ssize_t kept) {
    for (Py_ssize_t end = kept - 1; end > 0; end--) {
        Hit last = heap[end];
        heap[end] = heap[0];
        heap_replace_root(heap, end, last);
    }
}

/* One thread's working memory: zero between searches. */
typedef struct Scratch {
    double *scores;   /* a float64 per passage */
    uint8_t *matched; /* a byte per passage; NULL when every weight is positive */
    /* The pruned path's (NULL when it cannot run): a passage each. */
    int32_t *touched, *candidates, *slots;
    double *values, *sums;
    int64_t *found;
    uint64_t *bits; /* a bit each */
    double *table;  /* the candidates' weights of the terms read last */
    size_t table_size;
    struct Scratch *next;
} Scratch;

/* The long rows' bitmaps (see seek_all): for each term, its number among them or -1; for each
 * of them a bit per passage (words of 64) and, per word, how many of the row's passages come
 * before it. */
typedef struct {
    int32_t *number;
    uint64_t *words;
    uint32_t *before;
    Py_ssize_t n_words;
} Dense;

typedef struct {
    const int64_t *indptr;
    const int32_t *indices;
    const float *data;
    const double *largest; /* each term's largest weight */
    int sorted;            /* every row's passages ascend */
    Py_ssize_t size;
    const Dense *dense;
    const int64_t *rows; /* the query's terms, in query order */
    const double *counts;
    Py_ssize_t n_rows;
    const uint8_t *allowed; /* NULL: every passage */
    Scratch *scratch;
    Py_ssize_t k;
    Hit *heap; /* k entries */
} Query;

static void accumulate(const Query *q) {
    double *scores = q->scratch->scores;
    uint8_t *matched = q->scratch->matched;
    const int32_t *indices = q->indices;
    const float *data = q->data;
    for (Py_ssize_t t = 0; t < q->n_rows; t++) {
        int64_t lo = q->indptr[q->rows[t]], hi = q->indptr[q->rows[t] + 1];
        double count = q->counts[t];
        if (count == 1.0) { /* weight * 1.0 is the weight, exactly */
            for (int64_t j = lo; j < hi; j++) scores[indices[j]] += (double)data[j];
        } else {
            for (int64_t j = lo; j < hi; j++) scores[indices[j]] += (double)data[j] * count;
        }
        if (matched != NULL) {
            for (int64_t j = lo; j < hi; j++) matched[indices[j]] = 1;
        }
    }
}

/* Whether any of the n scores is above the floor. */
static inline int any_above(const double *scores, Py_ssize_t n, double floor) {
    Py_ssize_t i = 0;
#ifdef __SSE2__
    __m128d limit = _mm_set1_pd(floor), above = _mm_setzero_pd();
    for (; i + 8 <= n; i += 8) {
        above = _mm_or_pd(above, _mm_cmpgt_pd(_mm_loadu_pd(scores + i), limit));
        above = _mm_or_pd(above, _mm_cmpgt_pd(_mm_loadu_pd(scores + i + 2), limit));
        above = _mm_or_pd(above, _mm_cmpgt_pd(_mm_loadu_pd(scores + i + 4), limit));
        above = _mm_or_pd(above, _mm_cmpgt_pd(_mm_loadu_pd(scores + i + 6), limit));
    }
    if (_mm_movemask_pd(above)) return 1;
#endif
    int any = 0;
    for (; i < n; i++) any |= scores[i] > floor;
    return any;
}

/* Every weight positive: matched means a score above zero, so the floor starts at zero and is
 * then the k-th best kept. Every score is cleared on the way. */
static Py_ssize_t select_positive(const Query *q) {
    double *scores = q->scratch->scores;
    const uint8_t *allowed = q->allowed;
    Py_ssize_t kept = 0;
    double floor = 0.0;
    for (Py_ssize_t start = 0; start < q->size; start += BLOCK) {
        Py_ssize_t end = start + BLOCK < q->size ? start + BLOCK : q->size;
        if (any_above(scores + start, end - start, floor)) {
            for (Py_ssize_t i = start; i < end; i++) {
                if (scores[i] > floor && (allowed == NULL || allowed[i])) {
                    offer(q->heap, &kept, q->k, scores[i], i);
                    if (kept == q->k) floor = q->heap[0].score;
                }
            }
        }
        memset(scores + start, 0, (size_t)(end - start) * sizeof(double));
    }
    return kept;
}

/* Some weight zero or negative: the matched bytes say which passages are results. */
static Py_ssize_t select_matched(const Query *q) {
    double *scores = q->scratch->scores;
    uint8_t *matched = q->scratch->matched;
    const uint8_t *allowed = q->allowed;
    Py_ssize_t kept = 0;
    for (Py_ssize_t i = 0; i < q->size; i++) {
        if (!matched[i]) continue;
        double score = scores[i];
        matched[i] = 0;
        scores[i] = 0.0;
        if (allowed != NULL && !allowed[i]) continue;
        if (kept < q->k || score > q->heap[0].score) offer(q->heap, &kept, q->k, score, i);
    }
    return kept;
}

/* ---- The pruned path: every weight positive, every row ascending, up to 64 terms. ----
 *
 * Terms are read best first (the largest weight times count first: rare terms, short rows)
 * into the scores, noting each passage as it is first touched. Once the terms left could add at
 * most `rest` to any passage, and `rest` is below `floor` (the k-th best sum so far among the
 * allowed passages, a lower bound on the final k-th best), no untouched passage can reach the
 * top k; the touched ones whose sum plus `rest` reaches `floor` are the candidates. When finding
 * the candidates' weights in the rows left costs less than reading those rows, they are found in
 * each row (a long row answers from its bitmap, another by a search in the ascending row),
 * dropping candidates that fall behind as the floor rises and `rest` shrinks. The survivors' scores are then summed again term by term in query order, so
 * they are bit for bit the plain path's sums, and the top k picked from them.
 *
 * Bounds are sums in another order than the exact scores', so they differ from them by rounding
 * only: each comparison is widened by SLACK per term, far above that rounding, so a passage is
 * dropped only when its exact score is certainly below the k-th best (ties kept). */

#define MAX_PRUNED_TERMS 64
/* A touched passage costs about this many postings' reading to search for in one row. */
#define SEEK_COST 24.0
/* ... and this many in a row with a bitmap (its weight is still a cache miss). */
#define DENSE_SEEK_COST 12.0
/* The k-th best sum is taken among the first SAMPLE touched passages (the rarest terms'): the
 * k-th best of some passages is at most the k-th best of all, so it is a safe floor. */
#define SAMPLE 4096
/* The most weights (8 bytes each) the candidates' table may hold. */
#define MAX_TABLE ((size_t)1 << 21)
#define PREFETCH_AHEAD 8
/* A row of at least 1/DENSE_SHARE of the passages gets a bitmap (by default). */
#define DENSE_SHARE 16
#if defined(__GNUC__) || defined(__clang__)
#define PREFETCH(address) __builtin_prefetch(address)
#else
#define PREFETCH(address) ((void)0)
#endif

static inline int lowest_bit(uint64_t word) {
#if defined(__GNUC__) || defined(__clang__)
    return __builtin_ctzll(word);
#else
    int bit = 0;
    while (!((word >> bit) & 1)) bit++;
    return bit;
#endif
}

static double slack(Py_ssize_t n_rows) { return 4.0 * (double)(n_rows + 2) * 2.220446049250313e-16; }

/* The k-th largest of values[0..n), n >= k >= 1, by quickselect (reorders them). */
static double select_kth(double *values, Py_ssize_t n, Py_ssize_t k) {
    Py_ssize_t lo = 0, hi = n - 1, target = k - 1;
    while (lo < hi) {
        double a = values[lo], b = values[lo + (hi - lo) / 2], c = values[hi];
        double pivot = a > b ? (b > c ? b : (a > c ? c : a)) : (a > c ? a : (b > c ? c : b));
        Py_ssize_t i = lo, j = hi;
        while (i <= j) {
            while (values[i] > pivot) i++;
            while (values[j] < pivot) j--;
            if (i <= j) {
                double swap = values[i];
                values[i++] = values[j];
                values[j--] = swap;
            }
        }
        if (target <= j)
            hi = j;
        else if (target >= i)
            lo = i;
        else
            return values[target];
    }
    return values[target];
}

/* Buckets of the first pass of kth_largest. */
#define BUCKETS 256

/* The k-th largest of values[0..n), n >= k >= 1 (reorders them). Many values are first counted
 * into buckets of equal width between the least and the largest: the bucket that holds the k-th
 * largest is found from the counts, and only its values are selected from. A value's bucket
 * never decreases as the value grows (each step rounds monotonically), so every value of a
 * higher bucket is above every value of that one: the answer is exactly select_kth's, at a
 * fraction of its cost (its partitioning branches are mispredicted half the time). */
static double kth_largest(double *values, Py_ssize_t n, Py_ssize_t k) {
    if (n < 512 || n < 4 * k) return select_kth(values, n, k);
    double low = values[0], high = values[0];
    for (Py_ssize_t i = 1; i < n; i++) {
        low = values[i] < low ? values[i] : low;
        high = values[i] > high ? values[i] : high;
    }
    if (!(high > low)) return high;
    double scale = (BUCKETS - 1) / (high - low);
    Py_ssize_t counts[BUCKETS] = {0};
    for (Py_ssize_t i = 0; i < n; i++) counts[(int)((values[i] - low) * scale)]++;
    Py_ssize_t above = 0;
    int bucket = BUCKETS - 1;
    while (above + counts[bucket] < k) above += counts[bucket--];
    Py_ssize_t m = 0;
    for (Py_ssize_t i = 0; i < n; i++) {
        double value = values[i];
        values[m] = value;
        m += (int)((value - low) * scale) == bucket;
    }
    return select_kth(values, m, k - above);
}

static double touched_floor(const Query *q, Py_ssize_t n_touched) {
    const Scratch *s = q->scratch;
    Py_ssize_t n = 0, m = n_touched < SAMPLE ? n_touched : SAMPLE;
    for (Py_ssize_t i = 0; i < m; i++) {
        int32_t p = s->touched[i];
        s->values[n] = s->scores[p];
        n += q->allowed == NULL || q->allowed[p];
    }
    return n < q->k ? -1.0 : kth_largest(s->values, n, q->k);
}

/* The set bits of a word, in a few arithmetic steps: the builtin is a library call on CPUs
 * the build cannot assume have a popcount instruction. */
static inline int64_t bit_count(uint64_t word) {
    word -= (word >> 1) & 0x5555555555555555ULL;
    word = (word & 0x3333333333333333ULL) + ((word >> 2) & 0x3333333333333333ULL);
    word = (word + (word >> 4)) & 0x0F0F0F0F0F0F0F0FULL;
    return (int64_t)((word * 0x0101010101010101ULL) >> 56);
}

/* The position of each (ascending) candidate in term t's row, or -1. A long row (one with a
 * bitmap) answers from its bit and the count of the row's passages before it, with no search in
 * the row; another row is searched from where the candidate would be were the row's passages
 * evenly spread (fetched ahead), widening from there. The weights found are fetched ahead for
 * the caller. */
static void seek_all(const Query *q, Py_ssize_t t, const int32_t *candidates, Py_ssize_t n,
                     int64_t *found) {
    const int32_t *indices = q->indices;
    int64_t lo = q->indptr[q->rows[t]], hi = q->indptr[q->rows[t] + 1];
    int32_t number = q->dense->number[q->rows[t]];
    if (number >= 0) {
        const uint64_t *words = q->dense->words + (size_t)number * (size_t)q->dense->n_words;
        const uint32_t *before = q->dense->before + (size_t)number * (size_t)q->dense->n_words;
        for (Py_ssize_t i = 0; i < n; i++) {
            int32_t p = candidates[i];
            uint64_t word = words[p >> 6], below = word & (((uint64_t)1 << (p & 63)) - 1);
            int64_t at = lo + before[p >> 6] + bit_count(below);
            found[i] = (word >> (p & 63)) & 1 ? at : -1;
            PREFETCH(q->data + at);
        }
        return;
    }
    if (lo >= hi) {
        for (Py_ssize_t i = 0; i < n; i++) found[i] = -1;
        return;
    }
    int32_t first = indices[lo], last = indices[hi - 1];
    double scale = (double)(hi - lo) / ((double)last - (double)first + 1.0);
    for (Py_ssize_t i = 0; i < n; i++) {
        if (i + PREFETCH_AHEAD < n) {
            int32_t ahead = candidates[i + PREFETCH_AHEAD];
            if (ahead >= first && ahead <= last) {
                int64_t at = lo + (int64_t)((double)(ahead - first) * scale);
                PREFETCH(indices + (at < hi ? at : hi - 1));
            }
        }
        int32_t target = candidates[i];
        if (target < first || target > last) {
            found[i] = -1;
            continue;
        }
        int64_t guess = lo + (int64_t)((double)(target - first) * scale);
        if (guess >= hi) guess = hi - 1;
        /* Bracket: indices[below] < target <= indices[above] (below may be lo - 1). */
        int64_t below, above, step = 1;
        if (indices[guess] >= target) {
            above = guess;
            below = guess - 1;
            while (below >= lo && indices[below] >= target) {
                above = below;
                step <<= 1;
                below = above - step >= lo ? above - step : lo - 1;
            }
        } else {
            below = guess;
            above = guess + 1; /* indices[hi - 1] = last >= target, so above stays < hi */
            while (indices[above] < target) {
                below = above;
                step <<= 1;
                above = below + step < hi ? below + step : hi - 1;
            }
        }
        while (above - below > 1) {
            int64_t mid = below + (above - below) / 2;
            if (indices[mid] < target)
                below = mid;
            else
                above = mid;
        }
        found[i] = indices[above] == target ? above : -1;
    }
}

static Py_ssize_t run_pruned(const Query *q) {
    Scratch *s = q->scratch;
    double *scores = s->scores;
    int32_t *touched = s->touched, *candidates = s->candidates;
    const int32_t *indices = q->indices;
    const float *data = q->data;
    Py_ssize_t n = q->n_rows, order[MAX_PRUNED_TERMS];
    double bound[MAX_PRUNED_TERMS], rest_after[MAX_PRUNED_TERMS + 1];
    int in_query_order = 1;
    for (Py_ssize_t t = 0; t < n; t++) {
        bound[t] = q->largest[q->rows[t]] * q->counts[t];
        Py_ssize_t i = t; /* insertion sort: largest bound first, then query order */
        while (i > 0 && bound[order[i - 1]] < bound[t]) {
            order[i] = order[i - 1];
            i--;
        }
        order[i] = t;
        in_query_order &= i == t;
    }
    double widen = slack(n);
    rest_after[n] = 0.0;
    for (Py_ssize_t i = n - 1; i >= 0; i--) rest_after[i] = rest_after[i + 1] + bound[order[i]];
    /* What finding a passage in every row left costs, in postings read. */
    double seek_after[MAX_PRUNED_TERMS + 1];
    seek_after[n] = 0.0;
    for (Py_ssize_t i = n - 1; i >= 0; i--)
        seek_after[i] = seek_after[i + 1] +
                        (q->dense->number[q->rows[order[i]]] >= 0 ? DENSE_SEEK_COST : SEEK_COST);
    int64_t postings_left = 0;
    for (Py_ssize_t t = 0; t < n; t++)
        postings_left += q->indptr[q->rows[t] + 1] - q->indptr[q->rows[t]];

    Py_ssize_t n_touched = 0, read = 0, n_candidates = -1;
    double read_bound = 0.0; /* what the terms read could add to a passage, at most */
    while (read < n) {
        Py_ssize_t t = order[read];
        int64_t lo = q->indptr[q->rows[t]], hi = q->indptr[q->rows[t] + 1];
        double count = q->counts[t];
        if (read == 0) { /* every passage of the first row is new: 0.0 + weight is the weight */
            memcpy(touched, indices + lo, (size_t)(hi - lo) * sizeof(int32_t));
            n_touched = hi - lo;
            for (int64_t j = lo; j < hi; j++)
                scores[indices[j]] = count == 1.0 ? (double)data[j] : (double)data[j] * count;
        } else {
            for (int64_t j = lo; j < hi; j++) {
                int32_t p = indices[j];
                touched[n_touched] = p;
                n_touched += scores[p] == 0.0;
                scores[p] += count == 1.0 ? (double)data[j] : (double)data[j] * count;
            }
        }
        read_bound += bound[t];
        read++;
        postings_left -= hi - lo;
        /* The floor (the k-th best sum) is at most read_bound: below `rest`, it cannot stop. */
        if (read < n && n_touched >= q->k && postings_left > n_touched &&
            rest_after[read] < read_bound) {
            double floor = touched_floor(q, n_touched), rest = rest_after[read];
            if (floor >= 0 && rest * (1 + widen) < floor * (1 - widen)) {
                double reach = floor * (1 - widen);
                Py_ssize_t c = 0;
                for (Py_ssize_t i = 0; i < n_touched; i++) {
                    int32_t p = touched[i];
                    candidates[c] = p;
                    c += (q->allowed == NULL || q->allowed[p]) &&
                         (scores[p] + rest) * (1 + widen) >= reach;
                }
                if ((double)c * seek_after[read] < (double)postings_left) {
                    n_candidates = c;
                    break;
                }
            }
        }
    }
    Py_ssize_t kept = 0;
    if (read == n && in_query_order) {
        /* Every term read, in query order: the sums are the exact scores. */
        for (Py_ssize_t i = 0; i < n_touched; i++) {
            int32_t p = touched[i];
            if (q->allowed == NULL || q->allowed[p]) {
                Hit hit = {scores[p], p};
                if (kept < q->k)
                    heap_push(q->heap, &kept, hit);
                else if (ranks_below(&q->heap[0], &hit))
                    heap_replace_root(q->heap, kept, hit);
            }
            scores[p] = 0.0;
        }
        return kept;
    }
    if (n_candidates < 0) { /* every term read: the candidates are those that reach the floor */
        double floor = touched_floor(q, n_touched), reach = floor * (1 - widen);
        n_candidates = 0;
        for (Py_ssize_t i = 0; i < n_touched; i++) {
            int32_t p = touched[i];
            candidates[n_candidates] = p;
            n_candidates += (q->allowed == NULL || q->allowed[p]) &&
                            (floor < 0 || scores[p] * (1 + widen) >= reach);
        }
    }
    /* The candidates in ascending order (by their bits), with their sums so far. */
    uint64_t *bits = s->bits;
    for (Py_ssize_t i = 0; i < n_candidates; i++)
        bits[candidates[i] >> 6] |= (uint64_t)1 << (candidates[i] & 63);
    n_candidates = 0;
    for (Py_ssize_t w = 0, words = (q->size + 63) / 64; w < words; w++) {
        uint64_t word = bits[w];
        bits[w] = 0;
        while (word) {
            candidates[n_candidates++] = (int32_t)(w * 64 + lowest_bit(word));
            word &= word - 1;
        }
    }
    double *sums = s->sums;
    for (Py_ssize_t i = 0; i < n_candidates; i++) sums[i] = scores[candidates[i]];
    if (n_touched > q->size / 8)
        memset(scores, 0, (size_t)q->size * sizeof(double));
    else
        for (Py_ssize_t i = 0; i < n_touched; i++) scores[touched[i]] = 0.0;

    /* The rows left, on the candidates only; their weights kept by slot for the exact sums. */
    Py_ssize_t first_left = read, n_left = n - read;
    int32_t *slots = s->slots;
    int64_t *found = s->found;
    double *table = NULL;
    size_t cells = (size_t)n_candidates * (size_t)n_left;
    if (n_left > 0 && cells <= MAX_TABLE) {
        if (cells > s->table_size) {
            double *grown = PyMem_RawRealloc(s->table, cells * sizeof(double));
            if (grown != NULL) {
                s->table = grown;
                s->table_size = cells;
            }
        }
        if (cells <= s->table_size) table = s->table;
    }
    for (Py_ssize_t i = 0; i < n_candidates; i++) slots[i] = (int32_t)i;
    while (read < n) {
        Py_ssize_t t = order[read], column = read - first_left;
        double count = q->counts[t];
        seek_all(q, t, candidates, n_candidates, found);
        for (Py_ssize_t i = 0; i < n_candidates; i++) {
            double weight = 0.0;
            if (found[i] >= 0)
                weight = count == 1.0 ? (double)data[found[i]] : (double)data[found[i]] * count;
            sums[i] += weight;
            if (table != NULL) table[(size_t)slots[i] * n_left + column] = weight;
        }
        read++;
        if (n_candidates > q->k) {
            double rest = rest_after[read], *values = s->values;
            memcpy(values, sums, (size_t)n_candidates * sizeof(double));
            double reach = kth_largest(values, n_candidates, q->k) * (1 - widen);
            Py_ssize_t m = 0;
            for (Py_ssize_t i = 0; i < n_candidates; i++) {
                candidates[m] = candidates[i];
                slots[m] = slots[i];
                sums[m] = sums[i];
                m += (sums[i] + rest) * (1 + widen) >= reach;
            }
            n_candidates = m;
        }
    }

    /* The exact scores, term by term in query order. */
    memset(sums, 0, (size_t)n_candidates * sizeof(double));
    Py_ssize_t column_of[MAX_PRUNED_TERMS];
    for (Py_ssize_t i = 0; i < n; i++) column_of[order[i]] = i - first_left;
    for (Py_ssize_t t = 0; t < n; t++) {
        if (table != NULL && column_of[t] >= 0) {
            for (Py_ssize_t i = 0; i < n_candidates; i++)
                sums[i] += table[(size_t)slots[i] * n_left + column_of[t]];
        } else {
            double count = q->counts[t];
            seek_all(q, t, candidates, n_candidates, found);
            for (Py_ssize_t i = 0; i < n_candidates; i++) {
                if (found[i] >= 0)
                    sums[i] += count == 1.0 ? (double)data[found[i]] : (double)data[found[i]] * count;
            }
        }
    }
    for (Py_ssize_t i = 0; i < n_candidates; i++) {
        if (kept < q->k || sums[i] > q->heap[0].score)
            offer(q->heap, &kept, q->k, sums[i], candidates[i]);
    }
    return kept;
}

static Py_ssize_t run_query(const Query *q) {
    Py_ssize_t kept;
    if (q->scratch->touched != NULL && q->sorted && q->n_rows <= MAX_PRUNED_TERMS) {
        kept = run_pruned(q);
    } else {
        accumulate(q);
        kept = q->scratch->matched == NULL ? select_positive(q) : select_matched(q);
    }
    heap_sort(q->heap, kept);
    return kept;
}

/* A contiguous buffer of `count` items (any number when count < 0) of `itemsize` bytes and one
 * of the struct `formats`. */
static int get_array(PyObject *object, Py_buffer *view, const char *formats, Py_ssize_t itemsize,
                     Py_ssize_t count, const char *name) {
    if (PyObject_GetBuffer(object, view, PyBUF_C_CONTIGUOUS | PyBUF_FORMAT) < 0) return -1;
    const char *format = view->format;
    if (format[0] == '<' || format[0] == '=' || format[0] == '@') format++;
    if (view->itemsize != itemsize || strlen(format) != 1 || strchr(formats, format[0]) == NULL ||
        (count >= 0 && view->len != count * itemsize)) {
        PyErr_Format(PyExc_ValueError, "%s has the wrong type or length", name);
        PyBuffer_Release(view);
        return -1;
    }
    return 0;
}

/* The index's postings, held for its searches. */
typedef struct {
    PyObject_HEAD
    Py_buffer indptr, indices, data;
    Py_ssize_t size, n_terms;
    int positive; /* every weight above zero */
    int sorted;   /* every row's passages ascend */
    double *largest;
    Dense dense;
    /* Scratch not in use: one per thread that searched at the same time as others. */
    Scratch *idle;
    PyThread_type_lock lock;
} Postings;

static void scratch_free(Scratch *s) {
    PyMem_RawFree(s->scores);
    PyMem_RawFree(s->matched);
    PyMem_RawFree(s->touched);
    PyMem_RawFree(s->candidates);
    PyMem_RawFree(s->slots);
    PyMem_RawFree(s->values);
    PyMem_RawFree(s->sums);
    PyMem_RawFree(s->found);
    PyMem_RawFree(s->bits);
    PyMem_RawFree(s->table);
    PyMem_RawFree(s);
}

static Scratch *scratch_new(Py_ssize_t size, int positive) {
    size_t n = size ? (size_t)size : 1;
    Scratch *s = PyMem_RawCalloc(1, sizeof(Scratch));
    if (s == NULL) return NULL;
    s->scores = PyMem_RawCalloc(n, sizeof(double));
    if (!positive) s->matched = PyMem_RawCalloc(n, 1);
    if (positive) {
        /* One more than the passages: the branch-free loops write one past the last kept. */
        s->touched = PyMem_RawMalloc((n + 1) * sizeof(int32_t));
        s->candidates = PyMem_RawMalloc((n + 1) * sizeof(int32_t));
        s->slots = PyMem_RawMalloc(n * sizeof(int32_t));
        s->values = PyMem_RawMalloc(n * sizeof(double));
        s->sums = PyMem_RawMalloc(n * sizeof(double));
        s->found = PyMem_RawMalloc(n * sizeof(int64_t));
        s->bits = PyMem_RawCalloc((n + 63) / 64, sizeof(uint64_t));
    }
    if (s->scores == NULL || (!positive && s->matched == NULL) ||
        (positive && (s->touched == NULL || s->candidates == NULL || s->slots == NULL ||
                      s->values == NULL || s->sums == NULL || s->found == NULL ||
                      s->bits == NULL))) {
        scratch_free(s);
        return NULL;
    }
    return s;
}

/* One of `self`'s idle scratches, or a new one (NULL without memory). */
static Scratch *scratch_take(Postings *self) {
    PyThread_acquire_lock(self->lock, WAIT_LOCK);
    Scratch *s = self->idle;
    if (s != NULL) self->idle = s->next;
    PyThread_release_lock(self->lock);
    return s != NULL ? s : scratch_new(self->size, self->positive);
}

/* `s` back among `self`'s idle scratches, for a later search. */
static void scratch_give(Postings *self, Scratch *s) {
    PyThread_acquire_lock(self->lock, WAIT_LOCK);
    s->next = self->idle;
    self->idle = s;
    PyThread_release_lock(self->lock);
}

/* -1 with an exception set unless `self` is initialised and *k at least 1; *k is cut to the
 * number of passages. */
static int check_search(Postings *self, Py_ssize_t *k) {
    if (self->indptr.obj == NULL) {
        PyErr_SetString(PyExc_TypeError, "Postings was not initialised");
        return -1;
    }
    if (*k < 1) {
        PyErr_SetString(PyExc_ValueError, "k must be at least 1");
        return -1;
    }
    if (*k > self->size) *k = self->size;
    return 0;
}

/* A query of `self`'s postings for the top k, its terms, mask, scratch and heap still unset. */
static Query query_of(Postings *self, Py_ssize_t k) {
    return (Query){.indptr = self->indptr.buf,
                   .indices = self->indices.buf,
                   .data = self->data.buf,
                   .largest = self->largest,
                   .sorted = self->sorted,
                   .dense = &self->dense,
                   .size = self->size,
                   .k = k};
}

static void Postings_dealloc(Postings *self) {
    if (self->indptr.obj != NULL) PyBuffer_Release(&self->indptr);
    if (self->indices.obj != NULL) PyBuffer_Release(&self->indices);
    if (self->data.obj != NULL) PyBuffer_Release(&self->data);
    while (self->idle != NULL) {
        Scratch *next = self->idle->next;
        scratch_free(self->idle);
        self->idle = next;
    }
    if (self->lock != NULL) PyThread_free_lock(self->lock);
    PyMem_RawFree(self->largest);
    PyMem_RawFree(self->dense.number);
    PyMem_RawFree(self->dense.words);
    PyMem_RawFree(self->dense.before);
    Py_TYPE(self)->tp_free((PyObject *)self);
}

/* The bitmaps of the rows of at least `dense_from` passages (ascending), for seek_all. */
static int make_dense(Dense *dense, const int64_t *pointers, const int32_t *passages,
                      Py_ssize_t n_terms, Py_ssize_t size, Py_ssize_t dense_from) {
    Py_ssize_t n_words = (size + 63) / 64, n_dense = 0;
    dense->n_words = n_words;
    dense->number = PyMem_RawMalloc((size_t)(n_terms ? n_terms : 1) * sizeof(int32_t));
    if (dense->number == NULL) return -1;
    for (Py_ssize_t t = 0; t < n_terms; t++) {
        int64_t length = pointers[t + 1] - pointers[t];
        dense->number[t] = length > 0 && length >= dense_from ? (int32_t)n_dense++ : -1;
    }
    if (n_dense == 0) return 0;
    size_t cells = (size_t)n_dense * (size_t)n_words;
    dense->words = PyMem_RawCalloc(cells, sizeof(uint64_t));
    dense->before = PyMem_RawMalloc(cells * sizeof(uint32_t));
    if (dense->words == NULL || dense->before == NULL) return -1;
    for (Py_ssize_t t = 0; t < n_terms; t++) {
        if (dense->number[t] < 0) continue;
        uint64_t *words = dense->words + (size_t)dense->number[t] * (size_t)n_words;
        uint32_t *before = dense->before + (size_t)dense->number[t] * (size_t)n_words;
        for (int64_t j = pointers[t]; j < pointers[t + 1]; j++)
            words[passages[j] >> 6] |= (uint64_t)1 << (passages[j] & 63);
        uint32_t count = 0;
        for (Py_ssize_t w = 0; w < n_words; w++) {
            before[w] = count;
            count += (uint32_t)bit_count(words[w]);
        }
    }
    return 0;
}

/* The arrays are checked once here (rows in bounds, passages below size), so a search can
 * trust them: a damaged index file is refused, never read out of bounds. */
static int Postings_init(Postings *self, PyObject *args, PyObject *kwargs) {
    static char *keywords[] = {"indptr", "indices", "data", "size", "dense_from", NULL};
    PyObject *indptr, *indices, *data;
    Py_ssize_t size, dense_from = -1;
    if (!PyArg_ParseTupleAndKeywords(args, kwargs, "OOOn|n", keywords, &indptr, &indices, &data,
                                     &size, &dense_from))
        return -1;
    if (self->indptr.obj != NULL) {
        PyErr_SetString(PyExc_TypeError, "Postings is initialised once");
        return -1;
    }
    if (size < 0 || size > INT32_MAX) {
        PyErr_SetString(PyExc_ValueError, "size must be between 0 and 2**31 - 1");
        return -1;
    }
    if (get_array(indptr, &self->indptr, "ql", 8, -1, "indptr (int64)") < 0) return -1;
    Py_ssize_t n_terms = self->indptr.len / 8 - 1;
    const int64_t *pointers = (const int64_t *)self->indptr.buf;
    if (n_terms < 0 || pointers[0] != 0) {
        PyErr_SetString(PyExc_ValueError, "indptr must start at 0");
        goto fail_indptr;
    }
    for (Py_ssize_t t = 0; t < n_terms; t++) {
        if (pointers[t + 1] < pointers[t]) {
            PyErr_SetString(PyExc_ValueError, "indptr must not decrease");
            goto fail_indptr;
        }
    }
    Py_ssize_t nnz = pointers[n_terms];
    if (get_array(indices, &self->indices, "i", 4, nnz, "indices (int32, indptr[-1] of them)") <
        0)
        goto fail_indptr;
    if (get_array(data, &self->data, "f", 4, nnz, "data (float32, indptr[-1] of them)") < 0)
        goto fail_indices;
    self->lock = PyThread_allocate_lock();
    self->largest = PyMem_RawCalloc((size_t)(n_terms ? n_terms : 1), sizeof(double));
    if (self->lock == NULL || self->largest == NULL) {
        PyErr_NoMemory();
        goto fail_data;
    }
    const int32_t *passages = (const int32_t *)self->indices.buf;
    const float *weights = (const float *)self->data.buf;
    self->positive = 1;
    self->sorted = 1;
    for (Py_ssize_t t = 0; t < n_terms; t++) {
        double largest = 0.0;
        for (int64_t j = pointers[t]; j < pointers[t + 1]; j++) {
            if (passages[j] < 0 || passages[j] >= size) {
                PyErr_SetString(PyExc_ValueError, "indices must be passage numbers below size");
                goto fail_data;
            }
            if (j > pointers[t] && passages[j] <= passages[j - 1]) self->sorted = 0;
            if (!(weights[j] > 0)) self->positive = 0;
            if ((double)weights[j] > largest) largest = (double)weights[j];
        }
        self->largest[t] = largest;
    }
    if (dense_from < 0) dense_from = size / DENSE_SHARE > 0 ? size / DENSE_SHARE : 1;
    if (make_dense(&self->dense, pointers, passages, n_terms, size,
                   self->positive && self->sorted ? dense_from : PY_SSIZE_T_MAX) < 0) {
        PyErr_NoMemory();
        goto fail_data;
    }
    self->size = size;
    self->n_terms = n_terms;
    return 0;
fail_data:
    PyBuffer_Release(&self->data);
fail_indices:
    PyBuffer_Release(&self->indices);
fail_indptr:
    PyBuffer_Release(&self->indptr);
    return -1;
}

/* The query's term rows and counts, checked, as C arrays (`*rows` owns both). */
static int read_terms(Postings *self, PyObject *rows_list, PyObject *counts_list, int64_t **rows,
                      double **counts, Py_ssize_t *n_rows) {
    if (!PyList_Check(rows_list) || !PyList_Check(counts_list) ||
        PyList_GET_SIZE(rows_list) != PyList_GET_SIZE(counts_list)) {
        PyErr_SetString(PyExc_TypeError, "rows and counts must be lists of the same length");
        return -1;
    }
    Py_ssize_t n = PyList_GET_SIZE(rows_list);
    *rows = PyMem_Malloc((size_t)(n ? n : 1) * (sizeof(int64_t) + sizeof(double)));
    if (*rows == NULL) {
        PyErr_NoMemory();
        return -1;
    }
    *counts = (double *)(*rows + (n ? n : 1));
    for (Py_ssize_t t = 0; t < n; t++) {
        long long row = PyLong_AsLongLong(PyList_GET_ITEM(rows_list, t));
        if (row == -1 && PyErr_Occurred()) goto fail;
        long long count = PyLong_AsLongLong(PyList_GET_ITEM(counts_list, t));
        if (count == -1 && PyErr_Occurred()) goto fail;
        if (row < 0 || row >= self->n_terms || count < 1) {
            PyErr_SetString(PyExc_ValueError, "rows must be terms of the index, counts >= 1");
            goto fail;
        }
        (*rows)[t] = row;
        (*counts)[t] = (double)count;
    }
    *n_rows = n;
    return 0;
fail:
    PyMem_Free(*rows);
    *rows = NULL;
    return -1;
}

/* The hits as a list of (passage, score) tuples. A tuple of an int and a float can hold no
 * reference cycle, so it is taken out of the garbage collector's view at once (as the collector
 * itself would on its first pass over it): a batch makes a hundred thousand of them, and each
 * collection they trigger would otherwise walk them all. */
static PyObject *hits_list(const Hit *heap, Py_ssize_t kept) {
    PyObject *hits = PyList_New(kept);
    if (hits == NULL) return NULL;
    for (Py_ssize_t i = 0; i < kept; i++) {
        PyObject *hit = PyTuple_New(2), *index = PyLong_FromLongLong((long long)heap[i].index),
                 *score = PyFloat_FromDouble(heap[i].score);
        if (hit == NULL || index == NULL || score == NULL) {
            Py_XDECREF(hit);
            Py_XDECREF(index);
            Py_XDECREF(score);
            Py_DECREF(hits);
            return NULL;
        }
        PyTuple_SET_ITEM(hit, 0, index);
        PyTuple_SET_ITEM(hit, 1, score);
        PyObject_GC_UnTrack(hit);
        PyList_SET_ITEM(hits, i, hit);
    }
    return hits;
}

static PyObject *Postings_search(Postings *self, PyObject *args, PyObject *kwargs) {
    static char *keywords[] = {"rows", "counts", "k", "allowed", NULL};
    PyObject *rows_list, *counts_list, *allowed_object = Py_None;
    Py_ssize_t k;
    if (!PyArg_ParseTupleAndKeywords(args, kwargs, "OOn|O", keywords, &rows_list, &counts_list,
                                     &k, &allowed_object))
        return NULL;
    if (check_search(self, &k) < 0) return NULL;
    Query q = query_of(self, k);
    Py_buffer allowed = {0};
    PyObject *result = NULL;
    int64_t *rows = NULL;
    double *counts = NULL;
    if (read_terms(self, rows_list, counts_list, &rows, &counts, &q.n_rows) < 0) return NULL;
    q.rows = rows;
    q.counts = counts;
    if (allowed_object != Py_None) {
        if (get_array(allowed_object, &allowed, "?", 1, self->size, "allowed (bool)") < 0)
            goto done;
        q.allowed = allowed.buf;
    }
    if (q.n_rows == 0 || k == 0) {
        result = PyList_New(0);
        goto done;
    }
    if ((q.scratch = scratch_take(self)) == NULL) {
        PyErr_NoMemory();
        goto done;
    }
    q.heap = PyMem_RawMalloc((size_t)k * sizeof(Hit));
    if (q.heap == NULL) {
        PyErr_NoMemory();
    } else {
        Py_ssize_t kept;
        Py_BEGIN_ALLOW_THREADS;
        kept = run_query(&q);
        Py_END_ALLOW_THREADS;
        result = hits_list(q.heap, kept);
        PyMem_RawFree(q.heap);
    }
    scratch_give(self, q.scratch);
done:
    if (allowed.obj != NULL) PyBuffer_Release(&allowed);
    PyMem_Free(rows);
    return result;
}

/* A batch's queries, taken one at a time by each of its threads. */
typedef struct {
    Query *each;
    Py_ssize_t n, next;
    Py_ssize_t *kept;
    uint8_t *finished;
    PyThread_type_lock lock;
} Batch;

/* Searches the batch's next queries (up to `most`, any number when most < 0) with `scratch`;
 * the number searched. Needs no GIL. */
static Py_ssize_t search_next(Batch *batch, Scratch *scratch, Py_ssize_t most) {
    Py_ssize_t searched = 0;
    while (most < 0 || searched < most) {
        PyThread_acquire_lock(batch->lock, WAIT_LOCK);
        Py_ssize_t i = batch->next < batch->n ? batch->next++ : -1;
        PyThread_release_lock(batch->lock);
        if (i < 0) break;
        Query *q = &batch->each[i];
        q->scratch = scratch;
        Py_ssize_t kept = q->n_rows == 0 || q->k == 0 ? 0 : run_query(q);
        PyThread_acquire_lock(batch->lock, WAIT_LOCK);
        batch->kept[i] = kept;
        batch->finished[i] = 1;
        PyThread_release_lock(batch->lock);
        searched++;
    }
    return searched;
}

/* A helper thread of a batch: plain C, it never touches a Python object. */
typedef struct {
    Batch *batch;
    Scratch *scratch;
    PyThread_type_lock exited; /* held until the helper is done with the batch */
} Helper;

static void helper_run(void *argument) {
    Helper *helper = argument;
    search_next(helper->batch, helper->scratch, -1);
    PyThread_release_lock(helper->exited); /* the last touch: the caller may free it all now */
}

/* The calling thread searches this many queries between the GIL's returns, when it turns the
 * queries finished so far (by any thread) into their lists. */
#define BUILD_EVERY 16
/* The most threads a batch runs on. */
#define MAX_THREADS 16

/* search() of each (rows, counts) pair, on `threads` threads: the caller's and helpers that
 * hold no GIL, so the GIL is free for the whole search but for the calling thread's short
 * returns to build the finished queries' lists (which overlaps the helpers' searching). */
static PyObject *Postings_search_many(Postings *self, PyObject *args, PyObject *kwargs) {
    static char *keywords[] = {"queries", "k", "allowed", "threads", NULL};
    PyObject *queries, *allowed_object = Py_None;
    Py_ssize_t k, threads = 1;
    if (!PyArg_ParseTupleAndKeywords(args, kwargs, "On|On", keywords, &queries, &k,
                                     &allowed_object, &threads))
        return NULL;
    if (check_search(self, &k) < 0) return NULL;
    if (!PyList_Check(queries)) {
        PyErr_SetString(PyExc_TypeError, "queries must be a list of (rows, counts) pairs");
        return NULL;
    }
    Py_ssize_t n = PyList_GET_SIZE(queries), parsed = 0, n_helpers = 0, started = 0;
    if (threads > MAX_THREADS) threads = MAX_THREADS;
    if (threads > n) threads = n;
    Py_buffer allowed = {0};
    PyObject *result = NULL;
    Scratch *scratch[MAX_THREADS] = {NULL};
    Helper helpers[MAX_THREADS];
    Batch batch = {.n = n};
    batch.each = PyMem_Calloc((size_t)(n ? n : 1), sizeof(Query));
    batch.kept = PyMem_Calloc((size_t)(n ? n : 1), sizeof(Py_ssize_t));
    batch.finished = PyMem_Calloc((size_t)(n ? n : 1), 1);
    batch.lock = PyThread_allocate_lock();
    Hit *heaps = PyMem_RawMalloc((size_t)(n ? n : 1) * (size_t)k * sizeof(Hit));
    if (batch.each == NULL || batch.kept == NULL || batch.finished == NULL ||
        batch.lock == NULL || heaps == NULL) {
        PyErr_NoMemory();
        goto done;
    }
    if (allowed_object != Py_None &&
        get_array(allowed_object, &allowed, "?", 1, self->size, "allowed (bool)") < 0)
        goto done;
    for (; parsed < n; parsed++) {
        PyObject *pair = PyList_GET_ITEM(queries, parsed);
        if (!PyTuple_Check(pair) || PyTuple_GET_SIZE(pair) != 2) {
            PyErr_SetString(PyExc_TypeError, "queries must be a list of (rows, counts) pairs");
            goto done;
        }
        Query *q = &batch.each[parsed];
        *q = query_of(self, k);
        int64_t *rows;
        double *counts;
        if (read_terms(self, PyTuple_GET_ITEM(pair, 0), PyTuple_GET_ITEM(pair, 1), &rows, &counts,
                       &q->n_rows) < 0)
            goto done;
        q->rows = rows;
        q->counts = counts;
        q->allowed = allowed.obj != NULL ? allowed.buf : NULL;
        q->heap = heaps + parsed * k;
    }
    if ((result = PyList_New(n)) == NULL) goto done;
    /* A scratch for each thread; without memory for another, fewer threads. */
    for (Py_ssize_t t = 0; t < (threads > 1 ? threads : 1); t++) {
        if ((scratch[t] = scratch_take(self)) == NULL) break;
    }
    if (scratch[0] == NULL) {
        Py_CLEAR(result);
        PyErr_NoMemory();
        goto done;
    }
    for (; n_helpers + 1 < threads && scratch[n_helpers + 1] != NULL; n_helpers++) {
        Helper *helper = &helpers[n_helpers];
        *helper = (Helper){.batch = &batch, .scratch = scratch[n_helpers + 1]};
        if ((helper->exited = PyThread_allocate_lock()) == NULL) break;
        PyThread_acquire_lock(helper->exited, WAIT_LOCK);
        if (PyThread_start_new_thread(helper_run, helper) == PYTHREAD_INVALID_THREAD_ID) {
            PyThread_free_lock(helper->exited);
            break;
        }
        started++;
    }
    Py_ssize_t built = 0;
    for (;;) {
        Py_ssize_t searched;
        Py_BEGIN_ALLOW_THREADS;
        searched = search_next(&batch, scratch[0], BUILD_EVERY);
        if (searched == 0) /* nothing left to take: wait for the helpers' last queries */
            for (Py_ssize_t h = 0; h < started; h++) PyThread_acquire_lock(helpers[h].exited, WAIT_LOCK);
        Py_END_ALLOW_THREADS;
        for (; result != NULL && built < n; built++) {
            PyThread_acquire_lock(batch.lock, WAIT_LOCK);
            int finished = batch.finished[built];
            PyThread_release_lock(batch.lock);
            if (!finished) break;
            PyObject *hits = hits_list(batch.each[built].heap, batch.kept[built]);
            if (hits == NULL) Py_CLEAR(result); /* the helpers still finish before we return */
            else PyList_SET_ITEM(result, built, hits);
        }
        if (searched == 0) break;
    }
    for (Py_ssize_t h = 0; h < started; h++) PyThread_free_lock(helpers[h].exited);
done:
    for (Py_ssize_t t = 0; t < MAX_THREADS && scratch[t] != NULL; t++)
        scratch_give(self, scratch[t]);
    for (Py_ssize_t i = 0; batch.each != NULL && i < parsed; i++)
        PyMem_Free((void *)batch.each[i].rows);
    PyMem_Free(batch.each);
    PyMem_Free(batch.kept);
    PyMem_Free(batch.finished);
    if (batch.lock != NULL) PyThread_free_lock(batch.lock);
    PyMem_RawFree(heaps);
    if (allowed.obj != NULL) PyBuffer_Release(&allowed);
    return result;
}

static PyMethodDef Postings_methods[] = {
    {"search", (PyCFunction)(void (*)(void))Postings_search, METH_VARARGS | METH_KEYWORDS,
     "search(rows, counts, k, allowed=None): the top k (passage, score) pairs of the query whose "
     "term rows and counts are listed in query order, best first, ties to the lower passage; "
     "allowed is None or one bool per passage."},
    {"search_many", (PyCFunction)(void (*)(void))Postings_search_many,
     METH_VARARGS | METH_KEYWORDS,
     "search_many(queries, k, allowed=None, threads=1): search() of each (rows, counts) pair of "
     "the list, on `threads` threads that hold no GIL (the caller's thread takes it back now and "
     "then to build the finished queries' lists)."},
    {NULL, NULL, 0, NULL},
};

static PyTypeObject PostingsType = {
    PyVarObject_HEAD_INIT(NULL, 0).tp_name = "goldeval._bm25kernel.Postings",
    .tp_basicsize = sizeof(Postings),
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_doc = "Postings(indptr, indices, data, size): a BM25 index's term-major weights (int64, "
              "int32 and float32 arrays of a CSR matrix with `size` columns), held for search().",
    .tp_new = PyType_GenericNew,
    .tp_init = (initproc)Postings_init,
    .tp_dealloc = (destructor)Postings_dealloc,
    .tp_methods = Postings_methods,
};

static struct PyModuleDef module = {
    PyModuleDef_HEAD_INIT,
    .m_name = "_bm25kernel",
    .m_doc = "The BM25 search kernel (see the comment at the top of the source).",
    .m_size = -1,
};

PyMODINIT_FUNC PyInit__bm25kernel(void) {
    if (PyType_Ready(&PostingsType) < 0) return NULL;
    PyObject *m = PyModule_Create(&module);
    if (m == NULL) return NULL;
    Py_INCREF(&PostingsType);
    if (PyModule_AddObject(m, "Postings", (PyObject *)&PostingsType) < 0) {
        Py_DECREF(&PostingsType);
        Py_DECREF(m);
        return NULL;
    }
    return m;
}
