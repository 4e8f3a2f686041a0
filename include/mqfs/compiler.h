/* SPDX-License-Identifier: MIT */
/*
 * compiler.h - small compiler helpers shared by every layer of mqfs.
 */
#ifndef MQFS_COMPILER_H
#define MQFS_COMPILER_H

#include <stddef.h>
#include <assert.h>

#define mq_likely(x)		__builtin_expect(!!(x), 1)
#define mq_unlikely(x)		__builtin_expect(!!(x), 0)
#define mq_must_check		__attribute__((warn_unused_result))
#define mq_unused		__attribute__((unused))
#define mq_cacheline_aligned	__attribute__((aligned(MQ_CACHELINE)))
#define MQ_CACHELINE		64

#define MQ_ARRAY_SIZE(a)	(sizeof(a) / sizeof((a)[0]))
#define MQ_MIN(a, b)		((a) < (b) ? (a) : (b))
#define MQ_MAX(a, b)		((a) > (b) ? (a) : (b))
#define MQ_DIV_ROUND_UP(n, d)	(((n) + (d) - 1) / (d))
#define MQ_ALIGN_UP(n, a)	(((n) + (a) - 1) & ~((__typeof__(n))(a) - 1))
/* A macro's value as a string literal (defaults in help texts). */
#define MQ_STR_(x)		#x
#define MQ_STR(x)		MQ_STR_(x)

#define mq_container_of(ptr, type, member) \
	((type *)((char *)(ptr) - offsetof(type, member)))

/* Invariants: abort in every build; they guard balance counters and lists. */
#define MQ_ASSERT(x)		assert(x)

#endif /* MQFS_COMPILER_H */
