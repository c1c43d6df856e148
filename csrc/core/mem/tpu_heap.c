#include "mem/tpu_heap.h"

#include <stdint.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <unistd.h>

#include "mem/tpu_treap.h"

#define TPU_HEAP_MIN_ALIGN 64

/* The base is aligned to a huge page so that the allocator's 2 MiB segments can be backed by
 * transparent huge pages. */
#define TPU_HEAP_BASE_ALIGN ((size_t)2 << 20)

/* The blocks tile the range in address order; each is in exactly one tree: the free tree keyed
 * (size, address) for best fit, or the used tree keyed (0, address) to find it on free. */
typedef struct heap_block {
  tpu_treap_node node;
  struct heap_block *prev, *next;
  uintptr_t addr;
  size_t size;
  bool free;
} heap_block;

struct tpu_heap {
  char *base;
  size_t size;
  void *map; /* what mmap returned, for munmap */
  size_t map_size;
  size_t page;
  bool accessible;
  heap_block *first;
  tpu_treap_node *free_tree;
  tpu_treap_node *used_tree;
  size_t used;
};

static size_t align_up(size_t x, size_t a) { return (x + a - 1) & ~(a - 1); }

static void tree_insert(tpu_heap *h, heap_block *b) {
  b->node.k1 = b->free ? b->size : 0;
  b->node.k2 = b->addr;
  tpu_treap_insert(b->free ? &h->free_tree : &h->used_tree, &b->node);
}

static void tree_remove(tpu_heap *h, heap_block *b) {
  tpu_treap_remove(b->free ? &h->free_tree : &h->used_tree, &b->node);
}

tpu_status tpu_heap_create(size_t size, bool accessible, tpu_heap **out) {
  long page_size = sysconf(_SC_PAGESIZE);
  size_t page = page_size > 0 ? (size_t)page_size : 4096;
  if (size == 0 || size > SIZE_MAX / 2)
    return tpu_error(TPU_ERR_VALUE, "cannot reserve a heap of %zu bytes", size);
  size = align_up(size, page);
  tpu_heap *h = calloc(1, sizeof *h);
  heap_block *b = calloc(1, sizeof *b);
  if (!h || !b) {
    free(h);
    free(b);
    return tpu_error(TPU_ERR_OUT_OF_MEMORY, "cannot allocate a heap descriptor");
  }
  h->map_size = size + TPU_HEAP_BASE_ALIGN;
  h->map = mmap(NULL, h->map_size, accessible ? PROT_READ | PROT_WRITE : PROT_NONE,
                MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
  if (h->map == MAP_FAILED) {
    free(h);
    free(b);
    return tpu_error(TPU_ERR_OUT_OF_MEMORY, "cannot reserve %zu bytes of address space", size);
  }
  /* Large operands stream through the TLB: 2 MiB pages where the kernel allows them (its
   * default THP policy here only backs madvised ranges). */
  if (accessible)
    madvise(h->map, h->map_size, MADV_HUGEPAGE);
  h->base = (char *)align_up((uintptr_t)h->map, TPU_HEAP_BASE_ALIGN);
  h->size = size;
  h->page = page;
  h->accessible = accessible;
  *b = (heap_block){.addr = (uintptr_t)h->base, .size = size, .free = true};
  h->first = b;
  tree_insert(h, b);
  *out = h;
  return TPU_OK;
}

void tpu_heap_destroy(tpu_heap *heap) {
  if (!heap)
    return;
  for (heap_block *b = heap->first, *next; b; b = next) {
    next = b->next;
    free(b);
  }
  munmap(heap->map, heap->map_size);
  free(heap);
}

/* Cuts `b` at `offset`: the tail becomes a new block after it, in the same state, in no tree. */
static void block_split(heap_block *b, heap_block *tail, size_t offset) {
  *tail = (heap_block){.prev = b, .next = b->next, .addr = b->addr + offset,
                       .size = b->size - offset, .free = b->free};
  if (b->next)
    b->next->prev = tail;
  b->next = tail;
  b->size = offset;
}

static size_t padding(const heap_block *b, size_t align) {
  return align_up(b->addr, align) - b->addr;
}

static bool fits(const heap_block *b, size_t size, size_t align) {
  size_t pad = padding(b, align);
  return pad <= b->size && b->size - pad >= size;
}

void *tpu_heap_alloc(tpu_heap *heap, size_t size, size_t align) {
  if (!heap || (align & (align - 1)) != 0 || size > heap->size || align > heap->size)
    return NULL;
  if (align < TPU_HEAP_MIN_ALIGN)
    align = TPU_HEAP_MIN_ALIGN;
  size = align_up(size ? size : 1, TPU_HEAP_MIN_ALIGN);
  /* The best fit may be misaligned; the smallest block of size + align - 64 never is. */
  heap_block *b = (heap_block *)tpu_treap_ceil(heap->free_tree, size, 0);
  if (b && !fits(b, size, align))
    b = (heap_block *)tpu_treap_ceil(heap->free_tree, size + align - TPU_HEAP_MIN_ALIGN, 0);
  if (!b || !fits(b, size, align))
    return NULL;
  /* Take both possible new descriptors first, so a failed malloc leaves the heap untouched. */
  heap_block *head_rest = malloc(sizeof *head_rest), *tail_rest = malloc(sizeof *tail_rest);
  if (!head_rest || !tail_rest) {
    free(head_rest);
    free(tail_rest);
    return NULL;
  }
  tree_remove(heap, b);
  size_t pad = padding(b, align);
  if (pad) {
    block_split(b, head_rest, pad);
    tree_insert(heap, b);
    b = head_rest;
  } else {
    free(head_rest);
  }
  if (b->size > size) {
    block_split(b, tail_rest, size);
    tree_insert(heap, tail_rest);
  } else {
    free(tail_rest);
  }
  b->free = false;
  tree_insert(heap, b);
  heap->used += b->size;
  return (void *)b->addr;
}

/* Absorbs `next`, the neighbour following `b`, into `b`; neither is in a tree. */
static void block_absorb(heap_block *b, heap_block *next) {
  b->size += next->size;
  b->next = next->next;
  if (next->next)
    next->next->prev = b;
  free(next);
}

void tpu_heap_free(tpu_heap *heap, void *ptr) {
  if (!heap || !ptr)
    return;
  heap_block *b = (heap_block *)tpu_treap_ceil(heap->used_tree, 0, (uintptr_t)ptr);
  if (!b || b->addr != (uintptr_t)ptr)
    return; /* not a block of this heap: ignoring it is safer than corrupting the heap */
  tree_remove(heap, b);
  heap->used -= b->size;
  b->free = true;
  if (b->next && b->next->free) {
    tree_remove(heap, b->next);
    block_absorb(b, b->next);
  }
  if (b->prev && b->prev->free) {
    heap_block *prev = b->prev;
    tree_remove(heap, prev);
    block_absorb(prev, b);
    b = prev;
  }
  tree_insert(heap, b);
}

void tpu_heap_discard(tpu_heap *heap, void *ptr, size_t size) {
  if (!heap || !tpu_heap_contains(heap, ptr))
    return;
  size_t p = heap->page;
  uintptr_t lo = (uintptr_t)ptr, hi_limit = (uintptr_t)heap->base + heap->size;
  uintptr_t hi = size < hi_limit - lo ? lo + size : hi_limit;
  lo = align_up(lo, p);
  hi &= ~(uintptr_t)(p - 1);
  if (hi > lo)
    madvise((void *)lo, hi - lo, MADV_DONTNEED);
}

bool tpu_heap_accessible(const tpu_heap *heap) { return heap->accessible; }

bool tpu_heap_contains(const tpu_heap *heap, const void *ptr) {
  uintptr_t p = (uintptr_t)ptr, base = heap ? (uintptr_t)heap->base : 0;
  return heap && p >= base && p - base < heap->size;
}

size_t tpu_heap_used(const tpu_heap *heap) { return heap ? heap->used : 0; }
