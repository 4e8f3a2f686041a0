/* SPDX-License-Identifier: MIT */
/*
 * list.h - intrusive doubly linked lists and hash lists.
 *
 * The block layer keeps every request on several lists at once (FIFO,
 * dispatch list, merge hash) without allocating: the links live inside the
 * object and the object is recovered with mq_container_of.
 */
#ifndef MQFS_LIST_H
#define MQFS_LIST_H

#include <stdbool.h>
#include <stddef.h>
#include "mqfs/compiler.h"

struct mq_list_head {
	struct mq_list_head *next, *prev;
};

#define MQ_LIST_HEAD_INIT(name) { &(name), &(name) }

/*
 * Stores to ->next are atomic (relaxed, a plain store on x86), as the
 * kernel's WRITE_ONCE in list.h: an emptiness check may read a head's
 * ->next without the lock (an elevator's has_work), and a plain store
 * racing with that read would be a data race.
 */
static inline void mq_list_set_next(struct mq_list_head *n,
				    struct mq_list_head *next)
{
	__atomic_store_n(&n->next, next, __ATOMIC_RELAXED);
}

static inline void mq_list_init(struct mq_list_head *h)
{
	mq_list_set_next(h, h);
	h->prev = h;
}

static inline bool mq_list_empty(const struct mq_list_head *h)
{
	return h->next == h;
}

static inline void mq_list_insert(struct mq_list_head *n,
				  struct mq_list_head *prev,
				  struct mq_list_head *next)
{
	next->prev = n;
	n->next = next;
	n->prev = prev;
	mq_list_set_next(prev, n);
}

static inline void mq_list_add(struct mq_list_head *n, struct mq_list_head *h)
{
	mq_list_insert(n, h, h->next);
}

static inline void mq_list_add_tail(struct mq_list_head *n,
				    struct mq_list_head *h)
{
	mq_list_insert(n, h->prev, h);
}

/* Unlink and self-point, so mq_list_empty(n) tells "not on a list". */
static inline void mq_list_del_init(struct mq_list_head *n)
{
	n->next->prev = n->prev;
	mq_list_set_next(n->prev, n->next);
	mq_list_init(n);
}

static inline void mq_list_move_tail(struct mq_list_head *n,
				     struct mq_list_head *h)
{
	mq_list_del_init(n);
	mq_list_add_tail(n, h);
}

/* Move every entry of @from to the tail of @to; @from ends empty. */
static inline void mq_list_splice_tail_init(struct mq_list_head *from,
					    struct mq_list_head *to)
{
	if (mq_list_empty(from))
		return;
	from->next->prev = to->prev;
	mq_list_set_next(to->prev, from->next);
	mq_list_set_next(from->prev, to);
	to->prev = from->prev;
	mq_list_init(from);
}

#define mq_list_entry(ptr, type, member) mq_container_of(ptr, type, member)
#define mq_list_first_entry(h, type, member) \
	mq_list_entry((h)->next, type, member)

/*
 * Walk the links, converting to the entry only for a real node: the head
 * is not an entry, and forming an entry pointer from it would be a
 * misaligned object access for over-aligned types.
 */
#define mq_list_for_each_entry(pos, h, member)				\
	for (struct mq_list_head *pos##_n_ = (h)->next;			\
	     pos##_n_ != (h) &&						\
	     ((pos = mq_list_entry(pos##_n_, __typeof__(*pos), member)), 1); \
	     pos##_n_ = pos##_n_->next)

/* As above, and @pos may be unlinked inside the body. */
#define mq_list_for_each_entry_safe(pos, h, member)			\
	for (struct mq_list_head *pos##_n_ = (h)->next,			\
	     *pos##_next_ = pos##_n_->next;				\
	     pos##_n_ != (h) &&						\
	     ((pos = mq_list_entry(pos##_n_, __typeof__(*pos), member)), 1); \
	     pos##_n_ = pos##_next_, pos##_next_ = pos##_n_->next)

/* Hash lists: one pointer per bucket head. */
struct mq_hlist_node {
	struct mq_hlist_node *next, **pprev;
};

struct mq_hlist_head {
	struct mq_hlist_node *first;
};

static inline void mq_hlist_node_init(struct mq_hlist_node *n)
{
	n->next = NULL;
	n->pprev = NULL;
}

static inline bool mq_hlist_unhashed(const struct mq_hlist_node *n)
{
	return n->pprev == NULL;
}

static inline void mq_hlist_add_head(struct mq_hlist_node *n,
				     struct mq_hlist_head *h)
{
	n->next = h->first;
	if (h->first)
		h->first->pprev = &n->next;
	h->first = n;
	n->pprev = &h->first;
}

static inline void mq_hlist_del_init(struct mq_hlist_node *n)
{
	if (mq_hlist_unhashed(n))
		return;
	*n->pprev = n->next;
	if (n->next)
		n->next->pprev = n->pprev;
	mq_hlist_node_init(n);
}

#endif /* MQFS_LIST_H */
