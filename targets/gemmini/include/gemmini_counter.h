/* Some Gemmini programs include the performance-counter names on their own; in speedpatch's API they
 * live in gemmini.h with the counter functions. */
#ifndef SPEEDPATCH_GEMMINI_COUNTER_H
#define SPEEDPATCH_GEMMINI_COUNTER_H
#include "gemmini.h"
#endif /* SPEEDPATCH_GEMMINI_COUNTER_H */
