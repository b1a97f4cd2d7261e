/* A chained hash table built after symbolic branches that may allocate scratch buffers first, so
 * the paths place its buckets and nodes differently; then a lookup of a symbolic key.
 * stdin: byte s (low 2 bits pick the scratch buffers), byte key. */
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>
#define BUCKETS 16
typedef struct node { struct node *next; unsigned key; long value; } node_t;
typedef struct { node_t **buckets; unsigned count; } table_t;

static unsigned bucket_of(unsigned k) { return (k * 2654435761u) >> 28; }

static void insert(table_t *t, unsigned k, long v) {
    unsigned b = bucket_of(k);
    for (node_t *n = t->buckets[b]; n; n = n->next)
        if (n->key == k) { n->value = v; return; }
    node_t *n = malloc(sizeof *n);
    n->key = k;
    n->value = v;
    n->next = t->buckets[b];
    t->buckets[b] = n;
    t->count++;
}
static node_t *lookup(table_t *t, unsigned k) {
    for (node_t *n = t->buckets[bucket_of(k)]; n; n = n->next)
        if (n->key == k) return n;
    return NULL;
}
int main(void) {
    unsigned char in[2] = {0, 0};
    if (read(0, in, 2) != 2) return 2;
    long *scratch[2] = {0, 0};
    for (int k = 0; k < 2; k++)
        if (in[0] & (1 << k)) {
            scratch[k] = calloc(4 + k, sizeof(long));
            scratch[k][0] = k + 1;
        }
    table_t t = {calloc(BUCKETS, sizeof(node_t *)), 0};
    for (unsigned i = 0; i < 12; i++) insert(&t, i * 7 + 1, 100 + i);
    node_t *n = lookup(&t, in[1]);
    if (!n) return scratch[0] ? (int)scratch[0][0] : 0;
    printf("%ld\n", n->value);
    return 3;
}
