/* An intrusive treap ordered by the key (k1, k2), internal to the memory allocators: best fit is
 * ceil((size, 0)) over free blocks keyed (size, address), and the block holding an address is
 * floor((0, address)) over blocks keyed (0, address). k2 must be unique within a tree (it is an
 * address); a node's priority is a hash of it, so no random state is needed and the expected depth
 * stays logarithmic. */
#ifndef TPU_TREAP_H
#define TPU_TREAP_H

#include <stdint.h>

typedef struct tpu_treap_node {
  struct tpu_treap_node *left, *right;
  uint64_t k1, k2;
} tpu_treap_node;

/* Inserts `node`, whose key is set and not yet in the tree. */
void tpu_treap_insert(tpu_treap_node **root, tpu_treap_node *node);

/* Removes `node`, which is in the tree. */
void tpu_treap_remove(tpu_treap_node **root, tpu_treap_node *node);

/* The node with the smallest key >= (k1, k2), or NULL. */
tpu_treap_node *tpu_treap_ceil(tpu_treap_node *root, uint64_t k1, uint64_t k2);

/* The node with the largest key <= (k1, k2), or NULL. */
tpu_treap_node *tpu_treap_floor(tpu_treap_node *root, uint64_t k1, uint64_t k2);

#endif
