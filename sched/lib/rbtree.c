/* SPDX-License-Identifier: MIT */
/*
 * rbtree.c - rebalancing and navigation for the intrusive red-black tree
 * declared in mqfs/rbtree.h.  Insertion and erasure follow the textbook
 * (CLRS) case analysis, written once with a direction parameter so that each
 * mirror-image case is not spelled out twice.  Missing children are NULL and
 * count as black; there is no sentinel node, so erase carries the parent of
 * the possibly-NULL "doubly black" position explicitly.
 */
#include "mqfs/rbtree.h"

enum { RB_LEFT = 0, RB_RIGHT = 1 };

/* Child slot of @n on side @dir; lets one code path serve both mirrors. */
static inline struct mq_rb_node **rb_link(struct mq_rb_node *n, int dir)
{
	return dir == RB_LEFT ? &n->left : &n->right;
}

static inline uintptr_t rb_color(const struct mq_rb_node *n)
{
	return n->parent_color & MQ_RB_BLACK;
}

static inline void rb_set_parent(struct mq_rb_node *n, struct mq_rb_node *p)
{
	n->parent_color = (uintptr_t)p | rb_color(n);
}

static inline void rb_set_color(struct mq_rb_node *n, uintptr_t color)
{
	n->parent_color = (n->parent_color & ~MQ_RB_BLACK) | color;
}

static inline void rb_set_black(struct mq_rb_node *n)
{
	n->parent_color |= MQ_RB_BLACK;
}

static inline void rb_set_red(struct mq_rb_node *n)
{
	n->parent_color &= ~MQ_RB_BLACK;
}

/* Make whatever pointed at @old (a parent slot or the root) point at @new. */
static void rb_change_child(struct mq_rb_node *old, struct mq_rb_node *new,
			    struct mq_rb_node *parent, struct mq_rb_root *root)
{
	if (!parent)
		root->node = new;
	else if (parent->left == old)
		parent->left = new;
	else
		parent->right = new;
}

/*
 * Push @x down on side @dir: its child on the other side takes its place and
 * adopts that child's inner subtree across.  Colours are left untouched;
 * in-order sequence is preserved, which is what keeps duplicates stable.
 */
static void rb_rotate(struct mq_rb_node *x, int dir, struct mq_rb_root *root)
{
	struct mq_rb_node *y = *rb_link(x, !dir);
	struct mq_rb_node *inner = *rb_link(y, dir);
	struct mq_rb_node *parent = mq_rb_parent(x);

	*rb_link(x, !dir) = inner;
	if (inner)
		rb_set_parent(inner, x);
	rb_change_child(x, y, parent, root);
	rb_set_parent(y, parent);
	*rb_link(y, dir) = x;
	rb_set_parent(x, y);
}

/*
 * The only violation a red leaf can cause is red-under-red.  A red uncle lets
 * us push the problem two levels up by recolouring; a black uncle is fixed
 * for good by at most two rotations.  The root is blackened at the end
 * because recolouring may have reached it.
 */
void mq_rb_insert_color(struct mq_rb_node *node, struct mq_rb_root *root)
{
	struct mq_rb_node *parent, *gparent, *uncle;
	int side;

	while ((parent = mq_rb_parent(node)) && mq_rb_is_red(parent)) {
		/* A red parent is never the root, so gparent exists. */
		gparent = mq_rb_parent(parent);
		side = parent == gparent->left ? RB_LEFT : RB_RIGHT;
		uncle = *rb_link(gparent, !side);
		if (mq_rb_is_red(uncle)) {
			rb_set_black(parent);
			rb_set_black(uncle);
			rb_set_red(gparent);
			node = gparent;
			continue;
		}
		/* Inner grandchild: straighten it into the outer shape first. */
		if (node == *rb_link(parent, !side)) {
			rb_rotate(parent, side, root);
			parent = node;
		}
		rb_set_black(parent);
		rb_set_red(gparent);
		rb_rotate(gparent, !side, root);
		break;
	}
	rb_set_black(root->node);
}

/*
 * Sibling @sib of the short side has a red child, so one or two rotations
 * lend a black node to the short side and finish the fix-up.
 */
static void rb_erase_borrow(struct mq_rb_node *parent, struct mq_rb_node *sib,
			    int side, struct mq_rb_root *root)
{
	if (mq_rb_is_black(*rb_link(sib, !side))) {
		/*
		 * Only the near nephew is red: rotate it up to be the sibling,
		 * the old sibling becoming its far child.  No recolouring is
		 * needed here: the code below sets both of their colours.
		 */
		rb_rotate(sib, !side, root);
		sib = *rb_link(parent, !side);
	}
	rb_set_color(sib, rb_color(parent));
	rb_set_black(parent);
	rb_set_black(*rb_link(sib, !side));
	rb_rotate(parent, side, root);
}

/*
 * Position @x (maybe NULL) below @parent is one black short.  Since that
 * side lost a black node, the sibling subtree has black height >= 1 and so
 * the sibling is never NULL.
 */
static void rb_erase_fixup(struct mq_rb_node *x, struct mq_rb_node *parent,
			   struct mq_rb_root *root)
{
	while (x != root->node && mq_rb_is_black(x)) {
		int side = x == parent->left ? RB_LEFT : RB_RIGHT;
		struct mq_rb_node *sib = *rb_link(parent, !side);

		if (mq_rb_is_red(sib)) {
			/* Turn it into a black-sibling case one level down. */
			rb_set_black(sib);
			rb_set_red(parent);
			rb_rotate(parent, side, root);
			sib = *rb_link(parent, !side);
		}
		if (mq_rb_is_red(sib->left) || mq_rb_is_red(sib->right)) {
			rb_erase_borrow(parent, sib, side, root);
			return;
		}
		/* Both sides short now: move the deficit up to the parent. */
		rb_set_red(sib);
		x = parent;
		parent = mq_rb_parent(x);
	}
	if (x)
		rb_set_black(x);
}

static struct mq_rb_node *rb_leftmost(struct mq_rb_node *n)
{
	while (n->left)
		n = n->left;
	return n;
}

static struct mq_rb_node *rb_rightmost(struct mq_rb_node *n)
{
	while (n->right)
		n = n->right;
	return n;
}

/*
 * Splice in-order successor @succ (leftmost of @node's right subtree) into
 * @node's place, taking over its colour.  Returns the colour @succ had and
 * reports, via @child/@parent, the slot that lost a node.
 */
static uintptr_t rb_replace_by_succ(struct mq_rb_node *node,
				    struct mq_rb_node *succ,
				    struct mq_rb_node **child,
				    struct mq_rb_node **parent,
				    struct mq_rb_root *root)
{
	uintptr_t removed = rb_color(succ);

	*child = succ->right;
	if (mq_rb_parent(succ) == node) {
		*parent = succ;		/* succ keeps its right subtree */
	} else {
		*parent = mq_rb_parent(succ);
		(*parent)->left = *child;
		if (*child)
			rb_set_parent(*child, *parent);
		succ->right = node->right;
		rb_set_parent(node->right, succ);
	}
	succ->left = node->left;
	rb_set_parent(node->left, succ);
	rb_change_child(node, succ, mq_rb_parent(node), root);
	succ->parent_color = node->parent_color;
	return removed;
}

/*
 * Unlink @node.  Removing a red node changes no black height; removing a
 * black one leaves its old slot one black short, which the fix-up repairs.
 * @node itself is left stale (see mq_rb_clear_node()).
 */
void mq_rb_erase(struct mq_rb_node *node, struct mq_rb_root *root)
{
	struct mq_rb_node *child, *parent;
	uintptr_t removed;

	if (node->left && node->right) {
		removed = rb_replace_by_succ(node, rb_leftmost(node->right),
					     &child, &parent, root);
	} else {
		child = node->left ? node->left : node->right;
		parent = mq_rb_parent(node);
		removed = rb_color(node);
		rb_change_child(node, child, parent, root);
		if (child)
			rb_set_parent(child, parent);
	}
	if (removed == MQ_RB_BLACK)
		rb_erase_fixup(child, parent, root);
}

struct mq_rb_node *mq_rb_first(const struct mq_rb_root *root)
{
	return root->node ? rb_leftmost(root->node) : NULL;
}

struct mq_rb_node *mq_rb_last(const struct mq_rb_root *root)
{
	return root->node ? rb_rightmost(root->node) : NULL;
}

/*
 * With no right subtree, the successor is the first ancestor we reach
 * from its left side; climbing out of right children skips smaller nodes.
 */
struct mq_rb_node *mq_rb_next(const struct mq_rb_node *node)
{
	struct mq_rb_node *parent;

	if (mq_rb_node_empty(node))
		return NULL;
	if (node->right)
		return rb_leftmost(node->right);
	while ((parent = mq_rb_parent(node)) && node == parent->right)
		node = parent;
	return parent;
}

struct mq_rb_node *mq_rb_prev(const struct mq_rb_node *node)
{
	struct mq_rb_node *parent;

	if (mq_rb_node_empty(node))
		return NULL;
	if (node->left)
		return rb_rightmost(node->left);
	while ((parent = mq_rb_parent(node)) && node == parent->left)
		node = parent;
	return parent;
}
