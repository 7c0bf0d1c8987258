/* lib/util/prefetch.h -- a hint that memory will soon be read (or written): at millions
 * of samples the per-sample arrays outgrow the caches, and a loop that can name the
 * addresses it will need a few steps ahead lets those reads overlap instead of
 * stalling one at a time.  Only a hint: never faults, changes no result. */
#ifndef VLPLAN_PREFETCH_H
#define VLPLAN_PREFETCH_H

#if defined(__GNUC__) || defined(__clang__)
#define VL_PREFETCH(p) __builtin_prefetch((p), 0)
#define VL_PREFETCH_RW(p) __builtin_prefetch((p), 1)
#else
#define VL_PREFETCH(p) ((void)(p))
#define VL_PREFETCH_RW(p) ((void)(p))
#endif

#endif
