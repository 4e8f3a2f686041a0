/* SPDX-License-Identifier: MIT */
/*
 * rbtree.h - intrusive red-black tree with a kernel-style API.  The caller
 * embeds a struct mq_rb_node in its own object, walks down from the root to
 * find the insertion link itself (so it owns the ordering, and may send equal
 * keys to the right), then calls mq_rb_link_node() + mq_rb_insert_color().
 * The tree never allocates and does no locking; the owner serialises access.
 * A node's colour lives in bit 0 of parent_color, which is why nodes must be
 * at least long-aligned.
 */
#ifndef MQFS_RBTREE_H
#define MQFS_RBTREE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "mqfs/compiler.h"

struct mq_rb_node {
	uintptr_t parent_color;		/* parent pointer | colour bit */
	struct mq_rb_node *left, *right;
} __attribute__((aligned(sizeof(long))));

struct mq_rb_root {
	struct mq_rb_node *node;
};

#define MQ_RB_ROOT_INIT		{ NULL }

/* Colour bit values; red is 0 so a freshly linked node is red for free. */
#define MQ_RB_RED		0UL
#define MQ_RB_BLACK		1UL
#define MQ_RB_COLOR_MASK	3UL	/* low bits never part of a pointer */

#define mq_rb_entry(ptr, type, member)	mq_container_of(ptr, type, member)

static inline struct mq_rb_node *mq_rb_parent(const struct mq_rb_node *n)
{
	return (struct mq_rb_node *)(n->parent_color & ~MQ_RB_COLOR_MASK);
}

/* Colour queries, mainly for debug checks; NULL leaves count as black. */
static inline bool mq_rb_is_black(const struct mq_rb_node *n)
{
	return !n || (n->parent_color & MQ_RB_BLACK);
}

static inline bool mq_rb_is_red(const struct mq_rb_node *n)
{
	return !mq_rb_is_black(n);
}

/*
 * Attach @node as a red leaf at *@link, a NULL child slot of @parent (or the
 * root slot when @parent is NULL).  mq_rb_insert_color() must follow.
 */
static inline void mq_rb_link_node(struct mq_rb_node *node,
				   struct mq_rb_node *parent,
				   struct mq_rb_node **link)
{
	node->parent_color = (uintptr_t)parent | MQ_RB_RED;
	node->left = NULL;
	node->right = NULL;
	*link = node;
}

static inline bool mq_rb_empty(const struct mq_rb_root *root)
{
	return root->node == NULL;
}

/*
 * A node pointing at itself can never be in a tree, so this marks "detached"
 * without any extra field.  mq_rb_erase() does not do it; callers that test
 * membership later must clear the node themselves after erasing it.
 */
static inline void mq_rb_clear_node(struct mq_rb_node *n)
{
	n->parent_color = (uintptr_t)n;
}

static inline bool mq_rb_node_empty(const struct mq_rb_node *n)
{
	return n->parent_color == (uintptr_t)n;
}

void mq_rb_insert_color(struct mq_rb_node *node, struct mq_rb_root *root);
void mq_rb_erase(struct mq_rb_node *node, struct mq_rb_root *root);

/* In-order navigation; all return NULL past either end (or for a cleared node). */
struct mq_rb_node *mq_rb_first(const struct mq_rb_root *root);
struct mq_rb_node *mq_rb_last(const struct mq_rb_root *root);
struct mq_rb_node *mq_rb_next(const struct mq_rb_node *node);
struct mq_rb_node *mq_rb_prev(const struct mq_rb_node *node);

#endif /* MQFS_RBTREE_H */
