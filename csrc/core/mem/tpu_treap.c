#include "mem/tpu_treap.h"

#include <stdbool.h>
#include <stddef.h>

/* splitmix64's finalizer: addresses are regular, their hashes are not. */
static uint64_t priority(const tpu_treap_node *n) {
  uint64_t x = n->k2 + 0x9e3779b97f4a7c15ull;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
  return x ^ (x >> 31);
}

static bool key_less(const tpu_treap_node *a, uint64_t k1, uint64_t k2) {
  return a->k1 < k1 || (a->k1 == k1 && a->k2 < k2);
}

/* Splits `t` into the nodes with keys below `key`'s and the rest. */
static void split(tpu_treap_node *t, const tpu_treap_node *key, tpu_treap_node **lo,
                  tpu_treap_node **hi) {
  while (t) {
    if (key_less(t, key->k1, key->k2)) {
      *lo = t;
      lo = &t->right;
      t = t->right;
    } else {
      *hi = t;
      hi = &t->left;
      t = t->left;
    }
  }
  *lo = *hi = NULL;
}

/* Joins two treaps whose keys are all below (a) and above (b) each other. */
static tpu_treap_node *merge(tpu_treap_node *a, tpu_treap_node *b) {
  tpu_treap_node *root = NULL, **link = &root;
  while (a && b) {
    if (priority(a) > priority(b)) {
      *link = a;
      link = &a->right;
      a = a->right;
    } else {
      *link = b;
      link = &b->left;
      b = b->left;
    }
  }
  *link = a ? a : b;
  return root;
}

void tpu_treap_insert(tpu_treap_node **root, tpu_treap_node *node) {
  uint64_t p = priority(node);
  while (*root && priority(*root) >= p)
    root = key_less(node, (*root)->k1, (*root)->k2) ? &(*root)->left : &(*root)->right;
  split(*root, node, &node->left, &node->right);
  *root = node;
}

void tpu_treap_remove(tpu_treap_node **root, tpu_treap_node *node) {
  while (*root && *root != node)
    root = key_less(node, (*root)->k1, (*root)->k2) ? &(*root)->left : &(*root)->right;
  if (*root)
    *root = merge(node->left, node->right);
}

tpu_treap_node *tpu_treap_ceil(tpu_treap_node *t, uint64_t k1, uint64_t k2) {
  tpu_treap_node *best = NULL;
  while (t) {
    if (key_less(t, k1, k2)) {
      t = t->right;
    } else {
      best = t;
      t = t->left;
    }
  }
  return best;
}

tpu_treap_node *tpu_treap_floor(tpu_treap_node *t, uint64_t k1, uint64_t k2) {
  tpu_treap_node *best = NULL;
  while (t) {
    if (key_less(t, k1, k2) || (t->k1 == k1 && t->k2 == k2)) {
      best = t;
      t = t->right;
    } else {
      t = t->left;
    }
  }
  return best;
}
