/* Three chained hash tables of 300 buckets, 5 nodes each; lookup of a symbolic key (stdin byte). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#define BUCKETS 300
typedef struct node { unsigned long data; unsigned key; struct node *next; } node_t;
typedef struct { node_t **buckets; size_t size; } table_t;

static unsigned long hash(unsigned k) { return (k * 2654435761u) >> 7; }

static void table_init(table_t *t, size_t n) {
    t->buckets = calloc(n, sizeof(node_t *));
    t->size = n;
}
static node_t *table_lookup(table_t *t, unsigned k) {
    node_t *node = t->buckets[hash(k) % t->size];
    while (node != NULL) {
        if (memcmp(&node->key, &k, sizeof(unsigned)) == 0) return node;
        node = node->next;
    }
    return NULL;
}
static void table_insert(table_t *t, unsigned k, unsigned long data) {
    if (table_lookup(t, k)) return;
    unsigned long h = hash(k) % t->size;
    node_t *node = calloc(1, sizeof(node_t));
    node->key = k;
    node->data = data;
    node->next = t->buckets[h];
    t->buckets[h] = node;
}
int main(void) {
    table_t tables[3];
    unsigned char c = 0;
    if (read(0, &c, 1) != 1) return 2;
    for (unsigned i = 0; i < 3; i++) {
        table_init(&tables[i], BUCKETS);
        for (unsigned j = 0; j < 5; j++) table_insert(&tables[i], j * 37 + i, 10 * i + j);
    }
    node_t *n = table_lookup(&tables[0], c);
    if (n) { printf("found %lu\n", n->data); return 1; }
    puts("missing");
    return 0;
}
