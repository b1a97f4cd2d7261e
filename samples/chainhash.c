/* A chained hash table (APR-like: each key a malloc'd int), 15 inserts, then a lookup of a
 * symbolic key (stdin byte). */
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>
#define BUCKETS 16
typedef struct entry { struct entry *next; unsigned *key; long value; } entry_t;
typedef struct { entry_t **buckets; unsigned count; } hash_t;

static unsigned hashfn(unsigned k) { return (k * 31u + 7u) % BUCKETS; }

static hash_t *hash_make(void) {
    hash_t *h = malloc(sizeof *h);
    h->buckets = calloc(BUCKETS, sizeof(entry_t *));
    h->count = 0;
    return h;
}
static void hash_set(hash_t *h, unsigned k, long v) {
    unsigned b = hashfn(k);
    for (entry_t *e = h->buckets[b]; e; e = e->next)
        if (*e->key == k) { e->value = v; return; }
    entry_t *e = malloc(sizeof *e);
    e->key = malloc(sizeof(unsigned));
    *e->key = k;
    e->value = v;
    e->next = h->buckets[b];
    h->buckets[b] = e;
    h->count++;
}
static entry_t *hash_get(hash_t *h, unsigned k) {
    for (entry_t *e = h->buckets[hashfn(k)]; e; e = e->next)
        if (*e->key == k) return e;
    return NULL;
}
int main(void) {
    unsigned char c = 0;
    if (read(0, &c, 1) != 1) return 2;
    hash_t *h = hash_make();
    for (unsigned i = 0; i < 15; i++) hash_set(h, i * 3, 100 + i);
    entry_t *e = hash_get(h, c);
    if (!e) return 0;
    printf("%ld\n", e->value);
    return 1;
}
